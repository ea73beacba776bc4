package migrate_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	acts "github.com/edgeflow/edgeflow/activities/migrate"
	wf "github.com/edgeflow/edgeflow/workflows/migrate"
	"github.com/edgeflow/edgeflow/workflows/migrate/contract"
)

// archivedOnce checks that the job archived exactly one summary, the
// status it ended with.
func archivedOnce(t *testing.T, got []contract.Status, want contract.Status) {
	t.Helper()
	if len(got) != 1 {
		t.Fatalf("archived %d summaries, want 1: %+v", len(got), got)
	}
	a := got[0]
	if a.Job != want.Job || a.State != want.State || a.Counters != want.Counters || a.Execution != want.Execution ||
		a.Ended == nil || want.Ended == nil || !a.Ended.Equal(*want.Ended) || a.Error != want.Error {
		t.Fatalf("archived %+v, the job ended with %+v", a, want)
	}
}

// A completed job leaves its final status in the job store.
func TestCompletedJobArchivesItsSummary(t *testing.T) {
	b := &bucket{objects: 250, pageSize: 100, failing: map[int]int{1: 2}}
	env := newEnv(t, b)
	env.ExecuteWorkflow(contract.WorkflowTypeMigration, jobInput(100))
	s := result(t, env)
	if s.State != contract.StateCompleted || s.Failed != 2 {
		t.Fatalf("status %+v", s)
	}
	archivedOnce(t, b.archived, s)
}

// So does an aborted one.
func TestAbortedJobArchivesItsSummary(t *testing.T) {
	b := &bucket{objects: 1000, pageSize: 100, block: make(chan struct{}), blockFrom: 2}
	env := newEnv(t, b)
	env.RegisterDelayedCallback(func() {
		env.UpdateWorkflow(contract.AbortUpdate, "abort", &testsuite.TestUpdateCallback{
			OnAccept: func() {}, OnReject: func(err error) { t.Errorf("abort refused: %v", err) }, OnComplete: func(any, error) {},
		})
	}, time.Second)
	env.ExecuteWorkflow(contract.WorkflowTypeMigration, jobInput(100))
	s := result(t, env)
	if s.State != contract.StateAborted {
		t.Fatalf("status %+v", s)
	}
	archivedOnce(t, b.archived, s)
}

// And a failed one, with the status its error carries; a job store that
// refuses the summary does not change how the job ended.
func TestFailedJobArchivesItsSummaryBestEffort(t *testing.T) {
	for _, storeDown := range []bool{false, true} {
		env := quietSuite().NewTestWorkflowEnvironment()
		wf.Register(env)
		acts.Register(env, &acts.Activities{})
		env.OnActivity(a.RequestSlot, mock.Anything, mock.Anything, mock.Anything).Return(nil)
		env.OnActivity(a.Precheck, mock.Anything, mock.Anything).Return(
			temporal.NewNonRetryableApplicationError("destination s3://dst on dst:9000: the bucket does not exist", contract.ErrPrecheck, nil))
		var archived []contract.Status
		attempts := 0
		env.OnActivity(a.ArchiveJob, mock.Anything, mock.Anything).Return(func(ctx context.Context, st contract.Status) error {
			attempts++
			if storeDown {
				return errors.New("job store unavailable")
			}
			archived = append(archived, st)
			return nil
		})
		env.OnSignalExternalWorkflow(mock.Anything, mock.Anything, "", contract.ReleaseSignal, mock.Anything).Return(nil)
		env.RegisterDelayedCallback(func() { env.SignalWorkflow(contract.SlotGrantedSignal, nil) }, time.Millisecond)
		env.ExecuteWorkflow(contract.WorkflowTypeMigration, jobInput(100))
		var app *temporal.ApplicationError
		if err := env.GetWorkflowError(); !errors.As(err, &app) || app.Type() != contract.ErrMigrationFailed {
			t.Fatalf("store down %v: error %v", storeDown, env.GetWorkflowError())
		}
		var s contract.Status
		if err := app.Details(&s); err != nil {
			t.Fatal(err)
		}
		if storeDown {
			if attempts < 2 || len(archived) != 0 {
				t.Fatalf("a failing archive was tried %d times", attempts)
			}
			continue
		}
		if s.State != contract.StateFailed || s.Error == "" {
			t.Fatalf("status %+v", s)
		}
		archivedOnce(t, archived, s)
	}
}
