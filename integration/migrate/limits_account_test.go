package migrate_test

import (
	"fmt"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/edgeflow/edgeflow/internal/migrate/migratetest"
	"github.com/edgeflow/edgeflow/workflows/migrate/contract"
)

// The account's budget (MIGRATE_ACCOUNT_MAX_REQUESTS,
// MIGRATE_ACCOUNT_MAX_BANDWIDTH on both worker processes) holds at the
// source for two jobs of one account running at once on them, each with no
// limit of its own: while both run, what they read together a second
// stays within 5% over the budget and reaches 80% of it. Each job reads
// its source through a proxy of its own, so the meters tell the jobs
// apart; the first job is the shorter, and what the second reads once the
// first ended is reported beside the budget.
func TestAccountBudgetHoldsAtTheSourceForTwoJobs(t *testing.T) {
	setup(t)
	const budgetRequests, budgetBytes = 30, 640 << 10
	budget := []string{"MIGRATE_JOBS_PER_ACCOUNT=2",
		fmt.Sprintf("MIGRATE_ACCOUNT_MAX_REQUESTS=%d", budgetRequests), fmt.Sprintf("MIGRATE_ACCOUNT_MAX_BANDWIDTH=%d", budgetBytes)}
	startWorkerProcess(t, budget...)
	startWorkerProcess(t, budget...)
	cases := []struct {
		name            string
		short, long     []migratetest.Object
		pageSize        int
		budgetOf        func(requests, bytes float64) float64
		unit            string
		budgetPerSecond float64
	}{
		{
			// Tiny objects: the requests bind, 15/s a job while both run
			// (the short job 16 s).
			name: "requests", short: sized("r/", 240, 1<<10), long: sized("r/", 360, 1<<10), pageSize: 40,
			unit: "requests/s", budgetPerSecond: budgetRequests,
			budgetOf: func(requests, _ float64) float64 { return requests },
		},
		{
			// 64 KiB objects: the bytes bind, 5 objects/s a job while both
			// run (the short job 19 s).
			name: "bandwidth", short: sized("b/", 96, 64<<10), long: sized("b/", 144, 64<<10), pageSize: 16,
			unit: "bytes/s", budgetPerSecond: budgetBytes,
			budgetOf: func(_, bytes float64) float64 { return bytes },
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// An account of its own: its workflow starts with the workers'
			// limit of two jobs at once, whatever earlier tests set.
			account := fmt.Sprintf("budget-%s-%d", c.name, time.Now().UnixNano())
			type running struct {
				objs  []migratetest.Object
				meter *sourceMeter
				in    contract.JobInput
			}
			var jobs []*running
			for i, objs := range [][]migratetest.Object{c.short, c.long} {
				srcBucket := migratetest.Bucket(t, env.Store, fmt.Sprintf("budget-src%d", i))
				migratetest.Seed(t, env.Store, srcBucket, objs)
				dstBucket := migratetest.Bucket(t, env.Store2, fmt.Sprintf("budget-dst%d", i))
				meter := newSourceMeter(t, env.MinIO.Endpoint)
				src := source(srcBucket)
				src.endpoint = meter.Endpoint
				in := jobInput(t, fmt.Sprintf("%s-%d", account, i), src, dest2(env.MinIO2.Endpoint, dstBucket, ""))
				in.Account = account
				in.Settings.PageSize, in.Settings.PagesInFlight = c.pageSize, 4
				jobs = append(jobs, &running{objs: objs, meter: meter, in: in})
			}
			short, long := jobs[0], jobs[1]
			runs := []client.WorkflowRun{start(t, short.in), start(t, long.in)}
			for i, j := range jobs {
				run := runs[i]
				st, err := wait(t, run)
				n := int64(len(j.objs))
				if err != nil || st.State != contract.StateCompleted || st.Copied != n || st.Failed != 0 || st.Bytes != totalBytes(j.objs) {
					t.Fatalf("job %s: %v; %+v", j.in.Job, err, st)
				}
				migratetest.CheckCopies(t, env.Store2, j.in.Dest.Bucket, j.in.KeyMap(), j.objs)
			}

			// Both running: from the later job's first request and 3 s (the
			// unlimited precheck, the first pages starting) to the short
			// job's last request.
			shortFirst, shortLast := short.meter.span(t)
			longFirst, longLast := long.meter.span(t)
			if !shortLast.Before(longLast) {
				t.Fatalf("the short job read its source until %v, after the long one (%v): the window of both would be wrong", shortLast, longLast)
			}
			from, to := later(shortFirst, longFirst).Add(3*time.Second), shortLast
			if to.Sub(from) < 8*time.Second {
				t.Fatalf("both jobs read their sources together for %v after the first 3 s: too short a window — was the budget applied?", to.Sub(from))
			}
			sr, sb := short.meter.rates(from, to)
			lr, lb := long.meter.rates(from, to)
			t.Logf("both running %v: %.2f + %.2f requests/s, %.0f + %.0f bytes/s", to.Sub(from).Round(time.Millisecond), sr, lr, sb, lb)
			checkRate(t, c.unit, c.budgetOf(sr+lr, sb+lb), c.budgetPerSecond)

			// The long job alone, from the short one's end to its own.
			if longLast.Sub(shortLast) >= 4*time.Second {
				alone := c.budgetOf(long.meter.rates(shortLast, longLast))
				t.Logf("the long job alone %v: %.2f %s, %.0f%% of the account's budget",
					longLast.Sub(shortLast).Round(time.Millisecond), alone, c.unit, 100*alone/c.budgetPerSecond)
				if alone > c.budgetPerSecond*1.05 {
					t.Errorf("the job left alone read %.2f %s, over the account's budget %.0f", alone, c.unit, c.budgetPerSecond)
				}
			}
		})
	}
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
