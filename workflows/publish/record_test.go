package publish_test

import (
	"context"
	"testing"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"

	"github.com/edgeflow/edgeflow/internal/testenv/replaytest"
	"github.com/edgeflow/edgeflow/workflows/publish"
	"github.com/edgeflow/edgeflow/workflows/publish/contract"
)

// TestRecordHistories regenerates the histories in testdata/ that
// TestReplayRecordedHistories replays. It runs only when
// EDGEFLOW_RECORD_HISTORY is the address of a fresh Temporal dev server with
// the Package and Version search attributes, for example:
//
//	temporal server start-dev --headless --port 7388 --http-port 7389 --metrics-port 7390 \
//	    --search-attribute Package=Keyword --search-attribute Version=Keyword
//	EDGEFLOW_RECORD_HISTORY=127.0.0.1:7388 go test ./workflows/publish/ -run TestRecordHistories -v
//
// The workflows run for real on in-process workers; the activities are small
// stubs registered under the real names (a history records what activities
// returned, not how). Rerun it after any intended change to workflow code,
// and check the new histories in.
func TestRecordHistories(t *testing.T) {
	c := replaytest.Dial(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	replaytest.StartWorker(t, c, contract.TaskQueue, func(pool worker.Worker) {
		publish.Register(pool)
		registerRecordingStubs(pool)
	})
	replaytest.StartWorker(t, c, contract.CompressTaskQueue, func(compress worker.Worker) {
		compress.RegisterActivityWithOptions(recordProcessBatch, activity.RegisterOptions{Name: contract.CompressBatchActivity})
	})

	start := func(id string, wf any, in any) client.WorkflowRun {
		t.Helper()
		run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
			ID: id, TaskQueue: contract.TaskQueue,
			WorkflowIDReusePolicy: enums.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		}, wf, in)
		if err != nil {
			t.Fatalf("start %s (the server must be fresh): %v", id, err)
		}
		return run
	}
	ref := func(name, version string) contract.VersionRef {
		return contract.VersionRef{PackageRef: contract.PackageRef{Name: name}, Version: version}
	}

	// A version with reused files (Commit reports copies, Materialize runs),
	// its three batches in the default window (two in flight).
	demo := start(contract.PublishVersionWorkflowID("rec-demo", "1.0.0"), publish.PublishVersion,
		contract.PublishInput{VersionRef: ref("rec-demo", "1.0.0")})
	var out contract.PublishOutput
	if err := demo.Get(ctx, &out); err != nil || out.Result == nil || out.Processing.Files != 1+2+3 {
		t.Fatalf("rec-demo: %+v %v", out, err)
	}
	replaytest.WriteHistory(t, ctx, c, "publish_version.json", demo.GetID(), demo.GetRunID())
	replaytest.WriteHistory(t, ctx, c, "process_batch.json", contract.ProcessBatchWorkflowID("rec-demo", "1.0.0", 0), "")

	// Many batches and a tiny history budget: the first run continues as new.
	many := start(contract.PublishVersionWorkflowID("rec-many", "1.0.0"), publish.PublishVersion,
		contract.PublishInput{VersionRef: ref("rec-many", "1.0.0"), MaxPendingBatches: 3, HistoryBudget: 40})
	first := many.GetRunID() // Get follows the chain of runs and moves GetRunID along
	if err := many.Get(ctx, &out); err != nil || out.Processing.Files != 36 {
		t.Fatalf("rec-many: %+v %v", out, err)
	}
	desc, err := c.DescribeWorkflow(ctx, many.GetID(), "")
	if err != nil {
		t.Fatal(err)
	}
	last := desc.WorkflowExecution.RunID
	if last == first {
		t.Fatal("rec-many never continued as new; lower its HistoryBudget")
	}
	replaytest.WriteHistory(t, ctx, c, "publish_version_continued_first_run.json", many.GetID(), first)
	replaytest.WriteHistory(t, ctx, c, "publish_version_continued_last_run.json", many.GetID(), last)

	// A whole scheduled check: it hands the versions to their packages'
	// lanes and ends; the lanes publish them in order, one already
	// published, one whose batch fails; a package has a problem.
	updates := start("rec-package-updates", publish.PackageUpdates, contract.UpdatesInput{})
	var st contract.UpdatesStats
	if err := updates.Get(ctx, &st); err != nil {
		t.Fatal(err)
	}
	if st.Checked != 3 || st.NewVersions != 3 || st.Queued != 3 || st.Published != 0 || len(st.Problems) != 1 {
		t.Fatalf("rec-package-updates stats %+v", st)
	}
	var lane contract.LaneStats
	if err := c.GetWorkflow(ctx, contract.PackageLaneWorkflowID("rec-a"), "").Get(ctx, &lane); err != nil || lane.Published != 1 || lane.AlreadyPublished != 1 {
		t.Fatalf("lane rec-a: %+v %v", lane, err)
	}
	if err := c.GetWorkflow(ctx, contract.PackageLaneWorkflowID("rec-c"), "").Get(ctx, &lane); err != nil || lane.Failed != 1 {
		t.Fatalf("lane rec-c: %+v %v", lane, err)
	}
	replaytest.WriteHistory(t, ctx, c, "package_updates.json", updates.GetID(), updates.GetRunID())
	replaytest.WriteHistory(t, ctx, c, "package_lane.json", contract.PackageLaneWorkflowID("rec-a"), "")
	replaytest.WriteHistory(t, ctx, c, "publish_version_already_published.json", contract.PublishVersionWorkflowID("rec-a", "1.1.0"), "")
	replaytest.WriteHistory(t, ctx, c, "publish_version_batch_failed.json", contract.PublishVersionWorkflowID("rec-c", "2.0.0"), "")

	// A check that waits (the publish starter's): its lane reports back.
	waiting := start("rec-package-updates-waiting", publish.PackageUpdates, contract.UpdatesInput{Only: []string{"rec-d"}, Wait: true})
	if err := waiting.Get(ctx, &st); err != nil || st.Queued != 1 || st.Published != 1 {
		t.Fatalf("rec-package-updates-waiting: %+v %v", st, err)
	}
	replaytest.WriteHistory(t, ctx, c, "package_updates_waiting.json", waiting.GetID(), waiting.GetRunID())
}

func registerRecordingStubs(w worker.Worker) {
	w.RegisterActivityWithOptions(func(ctx context.Context) ([]string, error) {
		return []string{"rec-c", "rec-a", "rec-b"}, nil
	}, activity.RegisterOptions{Name: contract.ListCatalogActivity})
	w.RegisterActivityWithOptions(func(ctx context.Context, refs []contract.PackageRef) ([]contract.PackageCheck, error) {
		out := make([]contract.PackageCheck, len(refs))
		for i, r := range refs {
			out[i] = contract.PackageCheck{Name: r.Name}
			switch r.Name {
			case "rec-a":
				out[i].NewVersions = []contract.NewVersion{{Version: "1.0.0"}, {Version: "1.1.0"}}
			case "rec-b":
				out[i].Problem = "invalid package: no fileMap"
			case "rec-c":
				out[i].NewVersions = []contract.NewVersion{{Version: "2.0.0"}}
			case "rec-d":
				out[i].NewVersions = []contract.NewVersion{{Version: "3.0.0"}}
			}
		}
		return out, nil
	}, activity.RegisterOptions{Name: contract.CheckPackagesActivity})
	w.RegisterActivityWithOptions(func(ctx context.Context, in contract.VersionRef) (*contract.PlanSummary, error) {
		opts := contract.ProcessingOptions{MinifyJS: true, MinifyCSS: true}
		switch {
		case in.Name == "rec-a" && in.Version == "1.1.0":
			return &contract.PlanSummary{AlreadyPublished: true}, nil
		case in.Name == "rec-demo":
			return &contract.PlanSummary{Batches: 3, SourceFiles: 8, ToProcess: 6, Reused: 2, Bytes: 4096, Options: opts}, nil
		case in.Name == "rec-many":
			return &contract.PlanSummary{Batches: 8, SourceFiles: 36, ToProcess: 36, Bytes: 36000, Options: opts}, nil
		default:
			return &contract.PlanSummary{Batches: 2, SourceFiles: 3, ToProcess: 3, Bytes: 300, Options: opts}, nil
		}
	}, activity.RegisterOptions{Name: contract.StageVersionActivity})
	w.RegisterActivityWithOptions(func(ctx context.Context, in contract.PackageVersion) (*contract.CommitResult, error) {
		res := &contract.CommitResult{Files: 10, SourceFiles: 5, Latest: in.Version}
		if in.Name == "rec-demo" {
			res.Reused, res.Copies = 2, 6
		}
		return res, nil
	}, activity.RegisterOptions{Name: contract.CommitActivity})
	w.RegisterActivityWithOptions(func(ctx context.Context, in contract.PackageVersion) (int, error) {
		return 6, nil
	}, activity.RegisterOptions{Name: contract.MaterializeActivity})
}

func recordProcessBatch(ctx context.Context, in contract.BatchInput) (*contract.BatchSummary, error) {
	if in.Name == "rec-c" && in.Batch == 1 {
		return nil, temporal.NewNonRetryableApplicationError("batch: missing manifest", contract.ErrBadArchive, nil)
	}
	return &contract.BatchSummary{Files: in.Batch + 1, BytesIn: 100, BytesOut: 40}, nil
}
