package migrate

import (
	"context"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"

	"github.com/edgeflow/edgeflow/internal/migrate"
	"github.com/edgeflow/edgeflow/workflows/migrate/contract"
)

// accountJobsTTL is how long a worker trusts an account's job limit it
// asked for: pages start every few seconds, the limit rarely changes.
const accountJobsTTL = 10 * time.Second

// accountJobs remembers each account's limit of jobs at once.
type accountJobs struct {
	mu     sync.Mutex
	limits map[string]accountJobLimit
}

type accountJobLimit struct {
	jobs  int
	asked time.Time
}

// sourceLimiter is one share (a page's, the listing's) of a job's limits on
// its source, lowered to its share of the account's budget
// (MIGRATE_ACCOUNT_MAX_BANDWIDTH, MIGRATE_ACCOUNT_MAX_REQUESTS): that
// budget divided among the jobs the account runs at once, each divided
// among its pages as the job's own limits are. nil: no limit.
func (a *Activities) sourceLimiter(ctx context.Context, account string, job migrate.Limits) *migrate.Limiter {
	return migrate.NewLimiter(a.share(ctx, account, job))
}

// share is the bytes and requests a second of one of job.Shares users.
func (a *Activities) share(ctx context.Context, account string, job migrate.Limits) (bytesPerSecond, requestsPerSecond float64) {
	if a.AccountLimits.IsZero() {
		return job.Share()
	}
	return migrate.ShareWithin(job, a.AccountLimits, a.jobsAtOnce(ctx, account))
}

// shareEvery is how often a page asks its job how many users share its
// limits. Safety does not depend on it (a share grows only once the job
// can start no other user, see migrate.SourceUsers); how soon a page
// takes up the share of pages that ended does.
const shareEvery = 2 * time.Second

// followShares keeps lim, a page's share of its job's limits (and its
// account's budget), at the limits divided among the job's users now: it
// asks at once and every shareEvery until stop (the pages of one job on a
// worker share one query an interval, sourceUsers). A page starts at
// the static share (the limits ÷ pages in flight, the most there are), and
// a question that fails (the job continuing as new, a workflow from before
// the query) keeps the share the page has: never raised on a failure.
func (a *Activities) followShares(ctx context.Context, in contract.PageInput, job migrate.Limits, lim *migrate.Limiter) (stop func()) {
	if lim == nil || a.Temporal == nil || in.JobWorkflowID == "" {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(shareEvery)
		defer tick.Stop()
		for {
			if users, ok := a.sourceUsers(ctx, in); ok {
				lim.SetRates(a.share(ctx, in.Account, job.WithShares(users)))
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return func() { cancel(); <-done }
}

// sourceUsers is how many users share the limits of the page's job now,
// as the job answered it within shareEvery (one query a job on this
// worker, its pages sharing the answer); false when it could not say for
// this execution, and the page keeps its share.
func (a *Activities) sourceUsers(ctx context.Context, in contract.PageInput) (int, bool) {
	u, err := a.usersAnswers.get(ctx, in.JobWorkflowID, a.querySourceUsers)
	if err != nil || u.Execution != in.Execution || u.Users < 1 {
		return 0, false
	}
	return u.Users, true
}

// querySourceUsers asks a job how many users share its limits.
func (a *Activities) querySourceUsers(ctx context.Context, jobWorkflowID string) (contract.SourceUsers, error) {
	var u contract.SourceUsers
	v, err := a.Temporal.QueryWorkflow(ctx, jobWorkflowID, "", contract.SourceUsersQuery)
	if err == nil {
		err = v.Get(&u)
	}
	return u, err
}

// jobsAtOnce is how many jobs the account runs at once (its queue's limit,
// which `migrate account --limit` changes), or the limit a new account
// starts with when its workflow cannot be asked.
func (a *Activities) jobsAtOnce(ctx context.Context, account string) int {
	if account == "" {
		account = "default"
	}
	fallback := max(a.JobsPerAccount, 1)
	if a.JobsPerAccount < 1 {
		fallback = migrate.DefaultJobLimit
	}
	a.accountJobs.mu.Lock()
	cached, ok := a.accountJobs.limits[account]
	a.accountJobs.mu.Unlock()
	if ok && time.Since(cached.asked) < accountJobsTTL {
		return cached.jobs
	}
	jobs := fallback
	if a.Temporal != nil {
		qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		v, err := a.Temporal.QueryWorkflow(qctx, contract.MigrationAccountWorkflowID(account), "", contract.QueueQuery)
		cancel()
		var q contract.Queue
		if err == nil && v.Get(&q) == nil && q.Limit >= 1 {
			jobs = q.Limit
		} else if activity.IsActivity(ctx) {
			activity.GetLogger(ctx).Warn("the account's job limit is unknown; its budget is divided by the default", "account", account, "jobs", jobs, "error", err)
		}
	}
	a.accountJobs.mu.Lock()
	if a.accountJobs.limits == nil {
		a.accountJobs.limits = map[string]accountJobLimit{}
	}
	a.accountJobs.limits[account] = accountJobLimit{jobs: jobs, asked: time.Now()}
	a.accountJobs.mu.Unlock()
	return jobs
}
