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
	if a.AccountLimits.IsZero() {
		return migrate.NewLimiter(job.Share())
	}
	return migrate.NewLimiter(migrate.ShareWithin(job, a.AccountLimits, a.jobsAtOnce(ctx, account)))
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
