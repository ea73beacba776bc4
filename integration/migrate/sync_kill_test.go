package migrate_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.temporal.io/api/workflowservice/v1"

	"github.com/edgeflow/edgeflow/internal/migrate"
	"github.com/edgeflow/edgeflow/internal/migrate/jobclient"
	"github.com/edgeflow/edgeflow/internal/migrate/migratetest"
	"github.com/edgeflow/edgeflow/workflows/migrate/contract"
)

// A sync whose worker is killed (SIGKILL) mid-run goes on on another
// worker and writes every new or changed object exactly once: the pages
// retried find what the killed worker copied, and count it.
func TestSyncKilledMidRunCopiesNothingTwice(t *testing.T) {
	setup(t)
	first := startWorkerProcess(t)
	lb := bulkCopied(t, "synckill", 100)
	lb.in.Settings.PageSize, lb.in.Settings.PagesInFlight, lb.in.Settings.Concurrency = 20, 2, 2
	lb.in.Settings.HeartbeatTimeout = 3 * time.Second
	lb.runBulk(t)
	bulkEnd := time.Time{}
	for _, o := range migratetest.List(t, env.Store2, lb.dstBucket, "live/") {
		if o.LastModified.After(bulkEnd) {
			bulkEnd = o.LastModified
		}
	}

	changed := map[string]bool{}
	for i := 0; i < 100; i += 5 {
		k := fmt.Sprintf("s/%05d.bin", i)
		lb.put(t, k, []byte(strings.Repeat("changed ", i+1)))
		changed["live/"+k] = true
	}
	for _, o := range migratetest.Small("s/n-", 400, 2048) {
		lb.put(t, o.Key, o.Data)
	}
	// The run's retried pages take an identical object written since the
	// run started (less the clock skew, 1 s here) for the killed worker's
	// copy; the bulk copies must be older than that on the store's clock.
	eventually(t, 30*time.Second, "the bulk copies are older than the clock skew", func() bool {
		return time.Since(bulkEnd) > lb.in.Settings.ClockSkew+time.Second
	})

	ctx := context.Background()
	base, err := jobclient.SyncBase(ctx, env.Client, lb.job)
	if err != nil {
		t.Fatal(err)
	}
	run, err := jobclient.StartSync(ctx, env.Client, base, contract.SyncRun{})
	if err != nil {
		t.Fatal(err)
	}
	var before contract.Status
	eventually(t, 2*time.Minute, "the sync copies a few pages", func() bool {
		before, _ = jobclient.QueryRun(ctx, env.Client, lb.job, run.GetID())
		return before.Copied >= 60
	})
	first.kill(t)
	if before.Done() >= 500 {
		t.Fatal("the sync finished before the kill: nothing was tested")
	}
	startWorkerProcess(t)
	st, err := jobclient.Result(ctx, run)
	if err != nil {
		t.Fatal(err)
	}
	recoveredChanges := int64(0)
	if err := jobs.ForEachResult(ctx, lb.job, st.Execution, func(r migrate.ObjectResult) error {
		if r.Reason == migrate.ReasonCopiedByJob && changed["live/"+r.Key] {
			recoveredChanges++
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	// A change the killed worker copied is counted as copied, not as
	// changed: its retry cannot tell what was there before.
	if st.State != contract.StateCompleted || st.Listed != 500 || st.Copied != 420 || st.Changed+recoveredChanges != 20 ||
		st.Unchanged != 80 || st.Failed != 0 || st.Extraneous != 0 {
		t.Fatalf("after the kill: %+v (before it: copied %d)", st, before.Copied)
	}
	written := lb.writtenKeys(t)
	if len(written) != 420 {
		t.Errorf("%d keys written, want the 420 new and changed", len(written))
	}
	for k, n := range written {
		if n != 1 {
			t.Errorf("%s written %d times", k, n)
		}
	}
	lb.sameAsSource(t)
	// The pages end a moment after their report; the worker they end on
	// is stopped when the test ends.
	eventually(t, time.Minute, "the sync's pages have ended", func() bool {
		resp, err := env.Client.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
			Query: fmt.Sprintf("WorkflowType = '%s' AND MigrationJob = '%s' AND ExecutionStatus = 'Running'", contract.WorkflowTypeMigrationPage, lb.job)})
		return err == nil && len(resp.GetExecutions()) == 0
	})
	t.Logf("killed after %d copies; %d of the changes were found copied by the killed worker", before.Copied, recoveredChanges)
}
