package migrate_test

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

	wf "github.com/edgeflow/edgeflow/workflows/migrate"
	"github.com/edgeflow/edgeflow/workflows/migrate/contract"
)

// recorded says how each history TestRecordHistories writes ends, so a
// regenerated file that ends differently (or a missing one) is noticed.
// An account keeps running: its history ends with the timer it waits on.
var recorded = map[string]struct {
	workflowType string
	closedBy     enums.EventType
}{
	"migration_redriven.json":            {contract.JobWorkflow, enums.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED},
	"migration_page.json":                {contract.PageWorkflow, enums.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED},
	"migration_redrive_page.json":        {contract.PageWorkflow, enums.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED},
	"migration_continued_first_run.json": {contract.JobWorkflow, enums.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW},
	"migration_continued_last_run.json":  {contract.JobWorkflow, enums.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED},
	"migration_aborted.json":             {contract.JobWorkflow, enums.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED},
	"migration_failed.json":              {contract.JobWorkflow, enums.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED},
	"migration_queued.json":              {contract.JobWorkflow, enums.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED},
	"migration_account.json":             {contract.AccountWorkflow, enums.EVENT_TYPE_TIMER_STARTED},
	"migration_catalog_import.json":      {contract.ImportWorkflow, enums.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED},
	"migration_ramped.json":              {contract.JobWorkflow, enums.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED},
}

// TestReplayRecordedHistories replays every recorded history against the
// current workflow code: a change that would break runs in flight
// (nondeterminism) fails here. testdata/ holds histories of the current
// code; each subfolder keeps those of an earlier revision, which must
// still replay.
func TestReplayRecordedHistories(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.json"))
	older, _ := filepath.Glob(filepath.Join("testdata", "*", "*.json"))
	files = append(files, older...)
	if len(files) == 0 {
		t.Fatal("no recorded histories in testdata/; see TestRecordHistories")
	}
	seen := map[string]bool{}
	for _, path := range files {
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
				t.Fatal(err)
			}
			events := hist.GetEvents()
			if want, ok := recorded[name]; ok && filepath.Dir(path) == "testdata" {
				if got := events[0].GetWorkflowExecutionStartedEventAttributes().GetWorkflowType().GetName(); got != want.workflowType {
					t.Errorf("%s is a %s history, want %s", name, got, want.workflowType)
				}
				if last := events[len(events)-1].GetEventType(); last != want.closedBy {
					t.Errorf("%s ends with %v, want %v", name, last, want.closedBy)
				}
			}
			r := worker.NewWorkflowReplayer()
			wf.Register(r)
			if err := r.ReplayWorkflowHistory(quietLogger(), hist); err != nil {
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

// The replayer does catch a job that no longer does what its history
// says, so a passing replay means something.
func TestReplayDetectsNondeterminism(t *testing.T) {
	r := worker.NewWorkflowReplayer()
	r.RegisterWorkflowWithOptions(func(ctx workflow.Context, in contract.JobInput) (*contract.Status, error) {
		// A timer where the history asks the account for a slot.
		if err := workflow.Sleep(ctx, time.Minute); err != nil {
			return nil, err
		}
		return &contract.Status{}, nil
	}, workflow.RegisterOptions{Name: contract.JobWorkflow})
	r.RegisterWorkflowWithOptions(wf.Page, workflow.RegisterOptions{Name: contract.PageWorkflow})
	if err := r.ReplayWorkflowHistoryFromJSONFile(quietLogger(), filepath.Join("testdata", "migration_redriven.json")); err == nil {
		t.Fatal("replaying a changed job against its old history succeeded")
	}
}

// The recorded first run continued as new with a consistent state: every
// page it listed was scheduled, every report it counted was for a page it
// scheduled, and the counters match the pages done.
func TestRecordedContinueAsNewState(t *testing.T) {
	f, err := os.Open(filepath.Join("testdata", "migration_continued_first_run.json"))
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
	var next contract.JobInput
	for _, ev := range hist.GetEvents() {
		switch ev.GetEventType() {
		case enums.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED:
			initiated++
		case enums.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_STARTED:
			started++
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
		t.Errorf("%d pages initiated, %d started before continuing as new", initiated, started)
	}
	if st.Pages.Scheduled != st.Listing.Seq || st.Pages.Scheduled < initiated {
		t.Errorf("listed %d pages, scheduled %d, started %d children", st.Listing.Seq, st.Pages.Scheduled, initiated)
	}
	done := int64(st.Pages.Scheduled - st.Pages.InFlight())
	if st.Counters.Listed != int64(st.Listing.Seq)*10 || st.Counters.Done() != done*10 || st.Runs != 1 {
		t.Errorf("state %+v for %d pages done", st, done)
	}
}

func quietLogger() log.Logger {
	return log.NewStructuredLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})))
}
