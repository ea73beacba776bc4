package publish_test

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/edgeflow/edgeflow/workflows/publish"
	"github.com/edgeflow/edgeflow/workflows/publish/contract"
)

// recorded says how each history TestRecordHistories writes ends, so a
// regenerated file that ends differently (or a missing one) is noticed.
var recorded = map[string]struct {
	workflowType string
	closedBy     enums.EventType
}{
	"publish_version.json":                     {"PublishVersion", enums.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED},
	"process_batch.json":                       {"ProcessBatch", enums.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED},
	"publish_version_continued_first_run.json": {"PublishVersion", enums.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW},
	"publish_version_continued_last_run.json":  {"PublishVersion", enums.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED},
	"package_updates.json":                     {"PackageUpdates", enums.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED},
	"package_updates_waiting.json":             {"PackageUpdates", enums.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED},
	"package_lane.json":                        {"PackageLane", enums.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED},
	"publish_version_already_published.json":   {"PublishVersion", enums.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED},
	"publish_version_batch_failed.json":        {"PublishVersion", enums.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED},
}

func quietLogger() log.Logger {
	return log.NewStructuredLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})))
}

func historyFiles(t *testing.T) []string {
	t.Helper()
	// testdata/ holds histories of the current code; each subfolder keeps
	// the histories of an earlier workflow revision, which must still replay
	// (runs in flight when a new worker deploys).
	files, err := filepath.Glob(filepath.Join("testdata", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	older, err := filepath.Glob(filepath.Join("testdata", "*", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, older...)
	if len(files) == 0 {
		t.Fatal("no recorded histories in testdata/; see TestRecordHistories")
	}
	return files
}

// TestReplayRecordedHistories replays every recorded history against the
// current workflow code: a change that would break runs in flight
// (nondeterminism) fails here. After an intended incompatible change, version
// the workflow (workflow.GetVersion) or record the histories again.
func TestReplayRecordedHistories(t *testing.T) {
	seen := map[string]bool{}
	for _, path := range historyFiles(t) {
		name := filepath.Base(path)
		seen[name] = true
		t.Run(strings.TrimSuffix(strings.TrimPrefix(path, "testdata/"), ".json"), func(t *testing.T) {
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			hist, err := client.HistoryFromJSON(f, client.HistoryJSONOptions{})
			f.Close()
			if err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			events := hist.GetEvents()
			if len(events) < 3 {
				t.Fatalf("%s has %d events", path, len(events))
			}
			if want, ok := recorded[name]; ok {
				got := events[0].GetWorkflowExecutionStartedEventAttributes().GetWorkflowType().GetName()
				if got != want.workflowType {
					t.Errorf("%s is a %s history, want %s", name, got, want.workflowType)
				}
				if last := events[len(events)-1].GetEventType(); last != want.closedBy {
					t.Errorf("%s ends with %v, want %v", name, last, want.closedBy)
				}
			}
			r := worker.NewWorkflowReplayer()
			publish.Register(r)
			if err := r.ReplayWorkflowHistoryFromJSONFile(quietLogger(), path); err != nil {
				t.Errorf("replay %s: %v", path, err)
			}
		})
	}
	for name := range recorded {
		if !seen[name] {
			t.Errorf("testdata/%s is missing; run TestRecordHistories", name)
		}
	}
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
	if err := r.ReplayWorkflowHistoryFromJSONFile(quietLogger(), path); err == nil {
		t.Fatal("replaying a changed PublishVersion against its old history succeeded")
	}
}

// notPublishVersion registers the other workflows only.
type notPublishVersion struct{ r worker.WorkflowReplayer }

func (n notPublishVersion) RegisterWorkflowWithOptions(w any, o workflow.RegisterOptions) {
	if o.Name == contract.PublishVersionWorkflow {
		return
	}
	n.r.RegisterWorkflowWithOptions(w, o)
}

// The recorded first run continued as new with its state consistent: every
// child it initiated had started (so its signal reaches the next run), Started
// counts them, and the done bitset holds exactly the batches that signalled.
func TestRecordedContinueAsNewState(t *testing.T) {
	f, err := os.Open(filepath.Join("testdata", "publish_version_continued_first_run.json"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	hist, err := client.HistoryFromJSON(f, client.HistoryJSONOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dc := converter.GetDefaultDataConverter()
	initiated, started := 0, 0
	signalled := map[int]bool{}
	var next contract.PublishInput
	for _, ev := range hist.GetEvents() {
		switch ev.GetEventType() {
		case enums.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED:
			initiated++
		case enums.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_STARTED:
			started++
		case enums.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED:
			a := ev.GetWorkflowExecutionSignaledEventAttributes()
			if a.GetSignalName() != contract.BatchDoneSignal {
				continue
			}
			var d contract.BatchDone
			if err := dc.FromPayloads(a.GetInput(), &d); err != nil {
				t.Fatal(err)
			}
			if d.Error == "" {
				signalled[d.Batch] = true
			}
		case enums.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW:
			if err := dc.FromPayloads(ev.GetWorkflowExecutionContinuedAsNewEventAttributes().GetInput(), &next); err != nil {
				t.Fatal(err)
			}
		}
	}
	st := next.Resume
	if st == nil {
		t.Fatal("no Resume state in the continue-as-new input")
	}
	if initiated == 0 || started != initiated {
		t.Errorf("%d children initiated, %d started before continuing as new", initiated, started)
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
