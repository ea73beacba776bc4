package migrate

import (
	"context"
	"sync"
	"time"

	"github.com/edgeflow/edgeflow/workflows/migrate/contract"
)

// sourceUsersAnswers shares a job's answer to the source-users query among
// the pages of that job on this worker: one query a job every shareEvery,
// however many of its pages run here; the pages asking while it is under
// way wait for its answer. Taking an answer up to shareEvery old is safe:
// the number only falls once it may raise a share (migrate.SourceUsers),
// so an older answer is never below the current one.
type sourceUsersAnswers struct {
	mu    sync.Mutex
	byJob map[string]*sourceUsersAnswer // by the job's workflow ID
	now   func() time.Time              // nil: time.Now
}

// sourceUsersAnswer is one query's answer, ready once answered.
type sourceUsersAnswer struct {
	asked time.Time
	ready chan struct{}
	users contract.SourceUsers
	err   error
}

func (c *sourceUsersAnswers) clock() time.Time {
	if c.now != nil {
		return c.now()
	}
	return time.Now()
}

// get is the job's answer asked within shareEvery, asking now if there is
// none. The query runs apart from ctx (bounded by shareEvery), so a page
// that ends while it is under way does not fail it for the others; a page
// whose ctx ends stops waiting.
func (c *sourceUsersAnswers) get(ctx context.Context, jobWorkflowID string, ask func(ctx context.Context, jobWorkflowID string) (contract.SourceUsers, error)) (contract.SourceUsers, error) {
	c.mu.Lock()
	now := c.clock()
	a, ok := c.byJob[jobWorkflowID]
	if !ok || now.Sub(a.asked) >= shareEvery {
		c.forgetOld(now)
		a = &sourceUsersAnswer{asked: now, ready: make(chan struct{})}
		if c.byJob == nil {
			c.byJob = map[string]*sourceUsersAnswer{}
		}
		c.byJob[jobWorkflowID] = a
		qctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shareEvery)
		go func() {
			defer cancel()
			a.users, a.err = ask(qctx, jobWorkflowID)
			close(a.ready)
		}()
	}
	c.mu.Unlock()
	select {
	case <-a.ready:
		return a.users, a.err
	case <-ctx.Done():
		return contract.SourceUsers{}, ctx.Err()
	}
}

// forgetOld drops the answers too old to be taken (c.mu held), so the
// jobs that ended leave nothing behind.
func (c *sourceUsersAnswers) forgetOld(now time.Time) {
	for id, a := range c.byJob {
		select {
		case <-a.ready:
			if now.Sub(a.asked) >= shareEvery {
				delete(c.byJob, id)
			}
		default: // still under way: its waiters hold it anyway
		}
	}
}
