package publish_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/edgeflow/edgeflow/internal/testenv/replaytest"
	"github.com/edgeflow/edgeflow/workflows/publish"
	"github.com/edgeflow/edgeflow/workflows/publish/contract"
)

// recorded says how each history TestRecordHistories writes ends, so a
// regenerated file that ends differently (or a missing one) is noticed.
var recorded = map[string]replaytest.Expect{
	"publish_version.json":                     {Type: "PublishVersion", ClosedBy: enums.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED},
	"process_batch.json":                       {Type: "ProcessBatch", ClosedBy: enums.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED},
	"publish_version_continued_first_run.json": {Type: "PublishVersion", ClosedBy: enums.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW},
	"publish_version_continued_last_run.json":  {Type: "PublishVersion", ClosedBy: enums.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED},
	"package_updates.json":                     {Type: "PackageUpdates", ClosedBy: enums.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED},
	"package_updates_waiting.json":             {Type: "PackageUpdates", ClosedBy: enums.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED},
	"package_lane.json":                        {Type: "PackageLane", ClosedBy: enums.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED},
	"publish_version_already_published.json":   {Type: "PublishVersion", ClosedBy: enums.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED},
	"publish_version_batch_failed.json":        {Type: "PublishVersion", ClosedBy: enums.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED},
	// TestRecordFollowerHistories writes this one.
	"registry_follower.json": {Type: "RegistryFollower", ClosedBy: enums.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW},
}

// TestReplayRecordedHistories replays every recorded history against the
// current workflow code: a change that would break runs in flight
// (nondeterminism) fails here. After an intended incompatible change, version
// the workflow (workflow.GetVersion) or record the histories again.
func TestReplayRecordedHistories(t *testing.T) {
	replaytest.ReplayAll(t, func(r worker.WorkflowRegistry) { publish.Register(r) }, recorded, nil)
}

// The replayer does catch a workflow that no longer does what its history
// says, so a passing replay means something.
func TestReplayDetectsNondeterminism(t *testing.T) {
	path := filepath.Join("testdata", "publish_version.json")
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	r := worker.NewWorkflowReplayer()
	r.RegisterWorkflowWithOptions(func(ctx workflow.Context, in contract.PublishInput) (*contract.PublishOutput, error) {
		// A timer where the history has the Download activity.
		if err := workflow.Sleep(ctx, time.Minute); err != nil {
			return nil, err
		}
		return &contract.PublishOutput{}, nil
	}, workflow.RegisterOptions{Name: "PublishVersion"})
	publish.Register(notPublishVersion{r})
	if err := r.ReplayWorkflowHistoryFromJSONFile(replaytest.QuietLogger(), path); err == nil {
		t.Fatal("replaying a changed PublishVersion against its old history succeeded")
	}
}

// notPublishVersion registers the other workflows only.
type notPublishVersion struct{ worker.WorkflowReplayer }

func (n notPublishVersion) RegisterWorkflowWithOptions(w any, o workflow.RegisterOptions) {
	if o.Name == contract.WorkflowTypePublishVersion {
		return
	}
	n.WorkflowReplayer.RegisterWorkflowWithOptions(w, o)
}

// The recorded first run continued as new with its state consistent: every
// child it initiated had started (so its signal reaches the next run), Started
// counts them, and the done bitset holds exactly the batches that signalled.
func TestRecordedContinueAsNewState(t *testing.T) {
	hist := replaytest.Load(t, filepath.Join("testdata", "publish_version_continued_first_run.json"))
	var next contract.PublishInput
	initiated := replaytest.ContinuedAsNew(t, hist, &next)
	signalled := map[int]bool{}
	for _, ev := range hist.GetEvents() {
		a := ev.GetWorkflowExecutionSignaledEventAttributes()
		if a.GetSignalName() != contract.BatchDoneSignal {
			continue
		}
		var d contract.BatchDone
		if err := converter.GetDefaultDataConverter().FromPayloads(a.GetInput(), &d); err != nil {
			t.Fatal(err)
		}
		if d.Error == "" {
			signalled[d.Batch] = true
		}
	}
	st := next.Resume
	if st == nil {
		t.Fatal("no Resume state in the continue-as-new input")
	}
	if st.Started != initiated {
		t.Errorf("Started = %d, %d children initiated", st.Started, initiated)
	}
	if st.DoneCount() != len(signalled) {
		t.Errorf("%d batches done, %d signalled", st.DoneCount(), len(signalled))
	}
	for b := 0; b < st.Plan.Batches; b++ {
		if bit := st.Done[b/64]&(1<<(b%64)) != 0; bit != signalled[b] {
			t.Errorf("batch %d: done %v, signalled %v", b, bit, signalled[b])
		}
	}
	if st.Runs != 1 || st.DoneCount() >= st.Plan.Batches || st.Started > st.Plan.Batches {
		t.Errorf("resume state %+v", st)
	}
}
