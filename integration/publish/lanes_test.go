package integration

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/edgeflow/edgeflow/internal/objectstore"
	"github.com/edgeflow/edgeflow/internal/publish/metadata"
	"github.com/edgeflow/edgeflow/internal/publish/schedules"
	"github.com/edgeflow/edgeflow/workflows/publish/contract"
)

// listed reports the versions the package document lists.
func listed(name string) []string {
	var doc metadata.Package
	if _, err := objectstore.GetJSON(context.Background(), env.Store, buckets.Meta, metadata.PackageKey(name), &doc); err != nil {
		return nil
	}
	return doc.Versions
}

// The defect #7 fixed: a version whose Materialize keeps failing holds up
// its own package's later versions only. The scheduled check hands versions
// to lanes and ends, so the Schedule's next check (which it skips while one
// runs) starts, and another package's new version publishes.
func TestStuckVersionHoldsOnlyItsOwnPackage(t *testing.T) {
	setUpStack(t)
	ctx := testContext(t)
	dir := writeCatalog(t, demoPackage("stuck"), demoPackage("other"))
	npm.Add("stuck", "1.0.0", demoTarball("1.0.0", demoCSS))
	npm.Add("stuck", "1.1.0", demoTarball("1.1.0", demoCSS)) // reuses 1.0.0's stylesheet: Materialize has copies
	npm.Add("other", "1.0.0", demoTarball("1.0.0", demoCSS))

	// The workers' catalog holds both packages; Materialize always fails for
	// "stuck", as a store that keeps refusing the copies would.
	pub := *acts
	pub.CatalogDir = dir
	startPools(t, &pub, func(w worker.Worker) {
		w.RegisterActivityWithOptions(func(ctx context.Context, in contract.PackageVersion) (int, error) {
			if in.Name == "stuck" {
				return 0, errors.New("copy reused files: the store refuses writes")
			}
			return pub.Materialize(ctx, in)
		}, activity.RegisterOptions{Name: contract.MaterializeActivity, DisableAlreadyRegisteredCheck: true})
	})

	const scheduleID = "it-lanes"
	if _, err := schedules.Upsert(ctx, env.Client, scheduleID, time.Hour); err != nil {
		t.Fatal(err)
	}
	sched := env.Client.ScheduleClient().GetHandle(ctx, scheduleID)
	t.Cleanup(func() {
		_ = sched.Delete(context.Background())
		for _, id := range []string{contract.PublishVersionWorkflowID("stuck", "1.1.0"), contract.PackageLaneWorkflowID("stuck")} {
			_ = env.Client.TerminateWorkflow(context.Background(), id, "", "test over")
		}
	})
	check := func(n int) {
		t.Helper()
		if err := sched.Trigger(ctx, client.ScheduleTriggerOptions{}); err != nil {
			t.Fatal(err)
		}
		var run client.ScheduleWorkflowExecution
		eventually(t, time.Minute, fmt.Sprintf("scheduled check %d starts", n), func() (bool, string) {
			d, err := sched.Describe(ctx)
			if err != nil || len(d.Info.RecentActions) < n {
				return false, fmt.Sprintf("%v, %d runs", err, len(d.Info.RecentActions))
			}
			run = *d.Info.RecentActions[n-1].StartWorkflowResult
			return true, ""
		})
		var st contract.UpdatesStats
		if err := env.Client.GetWorkflow(ctx, run.WorkflowID, run.FirstExecutionRunID).Get(ctx, &st); err != nil {
			t.Fatalf("scheduled check %d: %v", n, err)
		}
		t.Logf("scheduled check %d: %+v", n, st)
	}

	check(1) // finds stuck 1.0.0, 1.1.0 and other 1.0.0, and ends
	eventually(t, 2*time.Minute, "other@1.0.0 and stuck@1.1.0 are committed", func() (bool, string) {
		return slices.Contains(listed("other"), "1.0.0") && slices.Contains(listed("stuck"), "1.1.0"), fmt.Sprint(listed("other"), listed("stuck"))
	})
	// stuck@1.1.0 is served but its Materialize fails on and on: its run,
	// and its lane with stuck@1.2.0 behind it, wait.
	npm.Add("stuck", "1.2.0", demoTarball("1.2.0", demoCSS))
	npm.Add("other", "2.0.0", demoTarball("2.0.0", demoCSS))
	check(2)
	eventually(t, 2*time.Minute, "the next check publishes other@2.0.0", func() (bool, string) {
		return slices.Contains(listed("other"), "2.0.0"), fmt.Sprint(listed("other"))
	})
	d, err := env.Client.DescribeWorkflow(ctx, contract.PublishVersionWorkflowID("stuck", "1.1.0"), "")
	if err != nil {
		t.Fatalf("stuck@1.1.0 should still be retrying Materialize: %v", err)
	}
	if d.Status != enums.WORKFLOW_EXECUTION_STATUS_RUNNING {
		t.Fatalf("stuck@1.1.0 should still be retrying Materialize: %v", d.Status)
	}
	// The package's order holds: 1.2.0 waits in the lane behind 1.1.0.
	var p contract.LaneProgress
	eventually(t, time.Minute, "stuck@1.2.0 waits in its lane", func() (bool, string) {
		v, err := env.Client.QueryWorkflow(ctx, contract.PackageLaneWorkflowID("stuck"), "", contract.ProgressQuery)
		if err == nil {
			err = v.Get(&p)
		}
		return err == nil && p.Running == "1.1.0" && slices.Equal(p.Waiting, []string{"1.2.0"}), fmt.Sprintf("%+v %v", p, err)
	})
	if slices.Contains(listed("stuck"), "1.2.0") {
		t.Error("stuck@1.2.0 published before stuck@1.1.0 ended")
	}
	// other's run and lane end on their own (stuck's are ended above).
	for _, id := range []string{contract.PublishVersionWorkflowID("other", "2.0.0"), contract.PackageLaneWorkflowID("other")} {
		if err := env.Client.GetWorkflow(ctx, id, "").Get(ctx, nil); err != nil {
			t.Errorf("%s: %v", id, err)
		}
	}
}
