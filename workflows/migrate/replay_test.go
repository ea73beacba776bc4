package migrate_test

import (
	"path/filepath"
	"testing"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/edgeflow/edgeflow/internal/testenv/replaytest"
	wf "github.com/edgeflow/edgeflow/workflows/migrate"
	"github.com/edgeflow/edgeflow/workflows/migrate/contract"
)

// recorded says how each history TestRecordHistories writes ends, so a
// regenerated file that ends differently (or a missing one) is noticed.
// An account keeps running: its history ends with the timer it waits on.
var recorded = map[string]replaytest.Expect{
	"migration_redriven.json":            {Type: contract.WorkflowTypeMigration, ClosedBy: enums.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED},
	"migration_page.json":                {Type: contract.WorkflowTypeMigrationPage, ClosedBy: enums.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED},
	"migration_redrive_page.json":        {Type: contract.WorkflowTypeMigrationPage, ClosedBy: enums.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED},
	"migration_continued_first_run.json": {Type: contract.WorkflowTypeMigration, ClosedBy: enums.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW},
	"migration_continued_last_run.json":  {Type: contract.WorkflowTypeMigration, ClosedBy: enums.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED},
	"migration_aborted.json":             {Type: contract.WorkflowTypeMigration, ClosedBy: enums.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED},
	"migration_failed.json":              {Type: contract.WorkflowTypeMigration, ClosedBy: enums.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED},
	"migration_queued.json":              {Type: contract.WorkflowTypeMigration, ClosedBy: enums.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED},
	"migration_account.json":             {Type: contract.WorkflowTypeMigrationAccount, ClosedBy: enums.EVENT_TYPE_TIMER_STARTED},
	"migration_catalog_import.json":      {Type: contract.WorkflowTypeMigrationCatalogImport, ClosedBy: enums.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED},
	"migration_ramped.json":              {Type: contract.WorkflowTypeMigration, ClosedBy: enums.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED},
}

// TestReplayRecordedHistories replays every recorded history against the
// current workflow code: a change that would break runs in flight
// (nondeterminism) fails here. testdata/ holds histories of the current
// code; each subfolder keeps those of an earlier revision, which must
// still replay.
func TestReplayRecordedHistories(t *testing.T) {
	replaytest.ReplayAll(t, func(r worker.WorkflowRegistry) { wf.Register(r) }, recorded, nil)
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
	}, workflow.RegisterOptions{Name: contract.WorkflowTypeMigration})
	r.RegisterWorkflowWithOptions(wf.Page, workflow.RegisterOptions{Name: contract.WorkflowTypeMigrationPage})
	if err := r.ReplayWorkflowHistoryFromJSONFile(replaytest.QuietLogger(), filepath.Join("testdata", "migration_redriven.json")); err == nil {
		t.Fatal("replaying a changed job against its old history succeeded")
	}
}

// The recorded first run continued as new with a consistent state: every
// page it listed was scheduled, every report it counted was for a page it
// scheduled, and the counters match the pages done.
func TestRecordedContinueAsNewState(t *testing.T) {
	hist := replaytest.Load(t, filepath.Join("testdata", "migration_continued_first_run.json"))
	var next contract.JobInput
	initiated := replaytest.ContinuedAsNew(t, hist, &next)
	st := next.Resume
	if st == nil {
		t.Fatal("no Resume state in the continue-as-new input")
	}
	if st.Pages.Scheduled != st.Listing.Seq || st.Pages.Scheduled < initiated {
		t.Errorf("listed %d pages, scheduled %d, started %d children", st.Listing.Seq, st.Pages.Scheduled, initiated)
	}
	done := int64(st.Pages.Scheduled - st.Pages.InFlight())
	if st.Counters.Listed != int64(st.Listing.Seq)*10 || st.Counters.Done() != done*10 || st.Runs != 1 {
		t.Errorf("state %+v for %d pages done", st, done)
	}
}
