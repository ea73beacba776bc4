package migrate_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	acts "github.com/edgeflow/edgeflow/activities/migrate"
	"github.com/edgeflow/edgeflow/internal/migrate"
	wf "github.com/edgeflow/edgeflow/workflows/migrate"
	"github.com/edgeflow/edgeflow/workflows/migrate/contract"
)

func jobInput(pageSize int) contract.JobInput {
	return contract.JobInput{
		Job: "job-1", Account: "default", Overwrite: migrate.OverwriteIfDifferent,
		Source:   contract.Endpoint{Endpoint: "src:9000", Location: migrate.Location{Bucket: "src"}},
		Dest:     contract.Endpoint{Endpoint: "dst:9000", Location: migrate.Location{Bucket: "dst", Prefix: "copy/"}},
		Settings: contract.Settings{PageSize: pageSize, PagesInFlight: 3, PageSpan: 6, WatchEvery: time.Minute},
	}
}

func result(t *testing.T, env *testsuite.TestWorkflowEnvironment) contract.Status {
	t.Helper()
	if !env.IsWorkflowCompleted() {
		t.Fatal("workflow did not complete")
	}
	if err := env.GetWorkflowError(); err != nil {
		t.Fatalf("workflow failed: %v", err)
	}
	var s contract.Status
	if err := env.GetWorkflowResult(&s); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestJobCopiesEveryPageOnce(t *testing.T) {
	b := &bucket{objects: 2345, pageSize: 100}
	env := newEnv(t, b)
	env.ExecuteWorkflow(contract.WorkflowTypeMigration, jobInput(100))
	s := result(t, env)
	if s.State != contract.StateCompleted || s.Listed != 2345 || s.Copied != 2345 || s.Failed != 0 || s.Bytes != 23450 || !s.ListingDone {
		t.Fatalf("status %+v", s)
	}
	seen := map[int]int{}
	for _, in := range b.transfers {
		seen[in.Seq]++
		if in.Map.DestPrefix != "copy/" || in.Overwrite != migrate.OverwriteIfDifferent || in.Restart != 0 || in.Started.IsZero() {
			t.Fatalf("page input %+v", in)
		}
	}
	if len(seen) != b.pages() {
		t.Fatalf("%d pages copied, want %d", len(seen), b.pages())
	}
	for seq, n := range seen {
		if n != 1 {
			t.Fatalf("page %d copied %d times", seq, n)
		}
	}
	for i, seq := range b.listed {
		if seq != i {
			t.Fatalf("listing order %v", b.listed)
		}
	}
}

// The first pages of a listing are small and grow up to the page size,
// so copying starts after a short listing.
func TestJobRampsUpItsFirstPages(t *testing.T) {
	b := &bucket{objects: 12000, pageSize: 2000}
	env := newEnv(t, b)
	env.ExecuteWorkflow(contract.WorkflowTypeMigration, jobInput(2000))
	if s := result(t, env); s.State != contract.StateCompleted {
		t.Fatalf("status %+v", s)
	}
	want := []int{250, 1000, 2000, 2000, 2000, 2000}
	if !slices.Equal(b.sizes, want) {
		t.Fatalf("pages listed with sizes %v, want %v", b.sizes, want)
	}
}

func TestJobPauseResume(t *testing.T) {
	b := &bucket{objects: 1000, pageSize: 100, block: make(chan struct{})}
	env := newEnv(t, b)
	var atPause, afterPause int
	var pauseErr, resumeErr error
	var resumedState string
	env.RegisterDelayedCallback(func() {
		env.UpdateWorkflow(contract.PauseUpdate, "pause-1", &testsuite.TestUpdateCallback{
			OnAccept: func() {}, OnReject: func(err error) { pauseErr = err }, OnComplete: func(any, error) {},
		})
		b.mu.Lock()
		atPause = len(b.listed)
		b.mu.Unlock()
		close(b.block) // the pages in flight finish while paused
	}, time.Second)
	env.RegisterDelayedCallback(func() {
		b.mu.Lock()
		afterPause = len(b.listed)
		b.mu.Unlock()
		// Pausing twice is refused.
		env.UpdateWorkflow(contract.PauseUpdate, "pause-2", &testsuite.TestUpdateCallback{
			OnAccept: func() { t.Error("a paused job accepted pause") }, OnReject: func(error) {}, OnComplete: func(any, error) {},
		})
		env.UpdateWorkflow(contract.ResumeUpdate, "resume", &testsuite.TestUpdateCallback{
			OnAccept: func() {}, OnReject: func(err error) { resumeErr = err },
			OnComplete: func(v any, err error) {
				if s, ok := v.(contract.Status); ok {
					resumedState = s.State
				}
			},
		})
	}, time.Hour)
	env.ExecuteWorkflow(contract.WorkflowTypeMigration, jobInput(100))
	s := result(t, env)
	if pauseErr != nil || resumeErr != nil {
		t.Fatalf("pause %v, resume %v", pauseErr, resumeErr)
	}
	if afterPause != atPause {
		t.Fatalf("listing went on while paused: %d pages at pause, %d an hour later", atPause, afterPause)
	}
	if resumedState != contract.StateRunning {
		t.Fatalf("state after resume %q", resumedState)
	}
	if s.State != contract.StateCompleted || s.Copied != 1000 {
		t.Fatalf("status %+v", s)
	}
}

// A listing still running when the job is paused must not start its page:
// its answer is dropped and the page listed again on resume, counted once.
func TestJobPausedDuringListingStartsNothing(t *testing.T) {
	b := &bucket{objects: 500, pageSize: 100, listBlock: make(chan struct{}), listBlockFrom: 1}
	env := newEnv(t, b)
	var seqsWhilePaused []int
	env.RegisterDelayedCallback(func() {
		env.UpdateWorkflow(contract.PauseUpdate, "pause", &testsuite.TestUpdateCallback{
			OnAccept: func() {}, OnReject: func(err error) { t.Errorf("pause: %v", err) }, OnComplete: func(any, error) {},
		})
		close(b.listBlock) // page 1's listing answers after the pause
	}, time.Second)
	env.RegisterDelayedCallback(func() {
		b.mu.Lock()
		for _, in := range b.transfers {
			seqsWhilePaused = append(seqsWhilePaused, in.Seq)
		}
		b.mu.Unlock()
		env.UpdateWorkflow(contract.ResumeUpdate, "resume", &testsuite.TestUpdateCallback{
			OnAccept: func() {}, OnReject: func(err error) { t.Errorf("resume: %v", err) }, OnComplete: func(any, error) {},
		})
	}, time.Hour)
	env.ExecuteWorkflow(contract.WorkflowTypeMigration, jobInput(100))
	s := result(t, env)
	if len(seqsWhilePaused) != 1 || seqsWhilePaused[0] != 0 {
		t.Fatalf("pages transferred by the end of the pause: %v, want only page 0", seqsWhilePaused)
	}
	if s.State != contract.StateCompleted || s.Listed != 500 || s.Copied != 500 {
		t.Fatalf("status %+v", s)
	}
	seen := map[int]int{}
	for _, in := range b.transfers {
		seen[in.Seq]++
	}
	for seq := range b.pages() {
		if seen[seq] != 1 {
			t.Fatalf("page %d copied %d times (%v)", seq, seen[seq], seen)
		}
	}
}

func TestJobAbortStopsPages(t *testing.T) {
	// Pages 0 and 1 finish; pages from 2 on hang until cancelled. (The
	// partial counts a cancelled page reports are checked against a real
	// server: the test environment drops a cancellation's details.)
	b := &bucket{objects: 1000, pageSize: 100, block: make(chan struct{}), blockFrom: 2}
	env := newEnv(t, b)
	env.RegisterDelayedCallback(func() {
		env.UpdateWorkflow(contract.AbortUpdate, "abort", &testsuite.TestUpdateCallback{
			OnAccept: func() {}, OnReject: func(err error) { t.Errorf("abort refused: %v", err) }, OnComplete: func(any, error) {},
		})
	}, time.Second)
	env.RegisterDelayedCallback(func() {
		env.UpdateWorkflow(contract.ResumeUpdate, "resume-ended", &testsuite.TestUpdateCallback{
			OnAccept: func() { t.Error("an aborted job accepted resume") }, OnReject: func(error) {}, OnComplete: func(any, error) {},
		})
	}, 2*time.Second)
	env.ExecuteWorkflow(contract.WorkflowTypeMigration, jobInput(100))
	s := result(t, env)
	if s.State != contract.StateAborted || s.Copied != 200 {
		t.Fatalf("aborted: state %s copied %d; want aborted, 200", s.State, s.Copied)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.listed) != 5 {
		// Two pages done and three in flight: the span allows five listings.
		t.Fatalf("listing went on after abort: %v", b.listed)
	}
}

func TestJobCountsDuplicateAndForeignReportsOnce(t *testing.T) {
	b := &bucket{objects: 300, pageSize: 100, block: make(chan struct{})}
	env := newEnv(t, b)
	env.RegisterDelayedCallback(func() {
		var st contract.Status
		v, err := env.QueryWorkflow(contract.StatusQuery)
		if err != nil {
			t.Fatal(err)
		}
		_ = v.Get(&st)
		// A report of page 0 arrives (as if from the child's signal), then
		// again (a retried signal), and one from another execution of the job.
		rep := contract.PageReport{Execution: st.Execution, Seq: 0, Counters: migrate.Counters{Copied: 100, Bytes: 1000}}
		env.SignalWorkflow(contract.PageDoneSignal, rep)
		env.SignalWorkflow(contract.PageDoneSignal, rep)
		foreign := rep
		foreign.Execution, foreign.Seq = "another-execution", 1
		env.SignalWorkflow(contract.PageDoneSignal, foreign)
		never := rep
		never.Seq = 99
		env.SignalWorkflow(contract.PageDoneSignal, never)
		close(b.block)
	}, time.Second)
	env.ExecuteWorkflow(contract.WorkflowTypeMigration, jobInput(100))
	s := result(t, env)
	// Page 0 is counted from the first signal; its child's result is then a duplicate.
	if s.Copied != 300 || s.Bytes != 3000 {
		t.Fatalf("copied %d bytes %d; want 300 and 3000 (each report once)", s.Copied, s.Bytes)
	}
}

func TestJobDeadLettersAndRedrive(t *testing.T) {
	b := &bucket{objects: 500, pageSize: 100, failing: map[int]int{1: 3, 4: 2}, block: make(chan struct{})}
	env := newEnv(t, b)
	env.RegisterDelayedCallback(func() {
		env.UpdateWorkflow(contract.RedriveUpdate, "redrive", &testsuite.TestUpdateCallback{
			OnAccept: func() { close(b.block) }, OnReject: func(err error) { t.Errorf("redrive refused: %v", err) }, OnComplete: func(any, error) {},
		})
	}, time.Second)
	env.ExecuteWorkflow(contract.WorkflowTypeMigration, jobInput(100))
	s := result(t, env)
	if s.Copied != 500 || s.Failed != 0 || s.RedrivePasses != 1 {
		t.Fatalf("after redrive: copied %d failed %d passes %d; want 500, 0, 1", s.Copied, s.Failed, s.RedrivePasses)
	}
	redriven := map[int]bool{}
	for _, in := range b.transfers {
		if in.Pass == 1 {
			redriven[in.Seq] = true
			if !in.KeysOnly {
				t.Error("a redrive page must look its objects up")
			}
		}
	}
	if len(redriven) != 2 || !redriven[1] || !redriven[4] {
		t.Fatalf("redriven pages %v, want 1 and 4", redriven)
	}
}

func TestJobWithoutRedriveKeepsFailures(t *testing.T) {
	b := &bucket{objects: 250, pageSize: 100, failing: map[int]int{2: 7}}
	env := newEnv(t, b)
	env.ExecuteWorkflow(contract.WorkflowTypeMigration, jobInput(100))
	s := result(t, env)
	if s.State != contract.StateCompleted || s.Copied != 243 || s.Failed != 7 {
		t.Fatalf("status %+v", s)
	}
}

func TestRedriveRunOfEndedJob(t *testing.T) {
	b := &bucket{objects: 300, pageSize: 100, failing: map[int]int{0: 1, 2: 4}}
	env := newEnv(t, b)
	in := jobInput(100)
	started := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	in.Redrive = &contract.RedriveFrom{Execution: "exec-old", Started: started, Passes: 1,
		Counters: migrate.Counters{Listed: 300, Copied: 295, Failed: 5, Bytes: 2950}}
	env.ExecuteWorkflow(contract.WorkflowTypeMigration, in)
	s := result(t, env)
	if s.Execution != "exec-old" || s.Listed != 300 || s.Copied != 300 || s.Failed != 0 || s.RedrivePasses != 2 {
		t.Fatalf("status %+v", s)
	}
	for _, tr := range b.transfers {
		if tr.Pass != 2 || tr.Execution != "exec-old" || !tr.Started.Equal(started) {
			t.Fatalf("redrive page %+v", tr)
		}
	}
	if len(b.listed) != 0 {
		t.Fatal("a redrive run listed the source again")
	}
}

func TestJobContinuesAsNewWithConsistentState(t *testing.T) {
	b := &bucket{objects: 3000, pageSize: 100, block: make(chan struct{}), blockFrom: 5}
	env := newEnv(t, b)
	in := jobInput(100)
	in.Settings.HistoryBudget = 5000
	env.RegisterDelayedCallback(func() {
		env.SetCurrentHistoryLength(5001)
		close(b.block)
	}, time.Second)
	env.ExecuteWorkflow(contract.WorkflowTypeMigration, in)
	if !env.IsWorkflowCompleted() {
		t.Fatal("not completed")
	}
	err := env.GetWorkflowError()
	var can *workflow.ContinueAsNewError
	if !errors.As(err, &can) {
		t.Fatalf("want continue-as-new, got %v", err)
	}
	var next contract.JobInput
	if err := decode(can, &next); err != nil {
		t.Fatal(err)
	}
	st := next.Resume
	if st == nil || st.Runs != 1 || st.State != contract.StateRunning {
		t.Fatalf("resume state %+v", st)
	}
	// Every page the cursor passed was scheduled, and counted pages match
	// the counters.
	if st.Pages.Scheduled != st.Listing.Seq {
		t.Fatalf("listed %d pages, scheduled %d", st.Listing.Seq, st.Pages.Scheduled)
	}
	done := st.Pages.Scheduled - st.Pages.InFlight()
	if st.Counters.Copied != int64(done*100) || st.Counters.Listed != int64(st.Listing.Seq*100) {
		t.Fatalf("counters %+v for %d done pages", st.Counters, done)
	}

	// The next run picks up where it stopped: the pages still in flight
	// report to it (here, by signal from the test), the rest is listed.
	b2 := &bucket{objects: 3000, pageSize: 100}
	env2 := newEnv(t, b2)
	next.Settings.HistoryBudget = 0
	env2.RegisterDelayedCallback(func() {
		for _, s := range st.Pages.Outstanding() {
			env2.SignalWorkflow(contract.PageDoneSignal, contract.PageReport{Execution: st.Execution, Seq: s, Counters: migrate.Counters{Copied: 100, Bytes: 1000}})
		}
	}, time.Millisecond)
	env2.ExecuteWorkflow(contract.WorkflowTypeMigration, next)
	s := result(t, env2)
	if s.Copied != 3000 || s.Listed != 3000 || s.ContinuedAsNew != 1 {
		t.Fatalf("after continue-as-new: %+v", s)
	}
	for _, tr := range b2.transfers {
		if tr.Seq < st.Listing.Seq {
			t.Fatalf("page %d, listed before continue-as-new, was copied again", tr.Seq)
		}
	}
}

func TestJobFindsLostReports(t *testing.T) {
	// A run resumed with pages in flight whose children reported to a run
	// that no longer exists: the watchdog finds page 0's stored outcome and
	// starts page 1 again.
	b := &bucket{objects: 300, pageSize: 100, found: map[int]contract.PageReport{}}
	env := newEnv(t, b)
	in := jobInput(100)
	st := &contract.JobState{State: contract.StateRunning, Execution: "exec-1", Started: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
		Listing: migrate.Cursor{Seq: 2, Token: "token-2"}, Pages: migrate.Pages{Scheduled: 2},
		Counters: migrate.Counters{Listed: 200, ListedBytes: 2000}}
	b.found[0] = contract.PageReport{Execution: "exec-1", Seq: 0, Counters: migrate.Counters{Copied: 100, Bytes: 1000}}
	in.Resume = st
	env.ExecuteWorkflow(contract.WorkflowTypeMigration, in)
	s := result(t, env)
	if s.Copied != 300 || s.Listed != 300 {
		t.Fatalf("status %+v", s)
	}
	if len(b.findSeen) == 0 || len(b.findSeen[0]) != 2 {
		t.Fatalf("lost pages looked for: %v", b.findSeen)
	}
	restarted := 0
	for _, tr := range b.transfers {
		if tr.Seq == 0 {
			t.Fatal("page 0, whose outcome was found, was copied again")
		}
		if tr.Seq == 1 {
			restarted++
			if tr.Restart != 1 {
				t.Fatalf("restarted page 1 has Restart %d", tr.Restart)
			}
		}
	}
	if restarted != 1 {
		t.Fatalf("page 1 restarted %d times", restarted)
	}
}

func TestJobPrecheckFailureFailsWithStatus(t *testing.T) {
	b := &bucket{objects: 10, pageSize: 100}
	env := quietSuite().NewTestWorkflowEnvironment()
	wf.Register(env)
	acts.Register(env, &acts.Activities{})
	env.OnActivity(a.RequestSlot, mock.Anything, mock.Anything, mock.Anything).Return(nil)
	env.OnActivity(a.Precheck, mock.Anything, mock.Anything).Return(
		temporal.NewNonRetryableApplicationError("destination s3://dst on dst:9000: the bucket does not exist", contract.ErrPrecheck, nil))
	env.OnActivity(a.ArchiveJob, mock.Anything, mock.Anything).Return(nil)
	env.OnSignalExternalWorkflow(mock.Anything, mock.Anything, "", contract.ReleaseSignal, mock.Anything).Return(nil).Once()
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(contract.SlotGrantedSignal, nil) }, time.Millisecond)
	_ = b
	env.ExecuteWorkflow(contract.WorkflowTypeMigration, jobInput(100))
	err := env.GetWorkflowError()
	var app *temporal.ApplicationError
	if !errors.As(err, &app) || app.Type() != contract.ErrMigrationFailed {
		t.Fatalf("error %v", err)
	}
	var s contract.Status
	if err := app.Details(&s); err != nil {
		t.Fatal(err)
	}
	if s.State != contract.StateFailed || s.Error == "" || s.Job != "job-1" {
		t.Fatalf("status in the error %+v", s)
	}
	env.AssertExpectations(t)
}

func TestJobWaitsInLineUntilGranted(t *testing.T) {
	b := &bucket{objects: 100, pageSize: 100}
	env := quietSuite().NewTestWorkflowEnvironment()
	wf.Register(env)
	b.mock(t, env)
	env.OnSignalExternalWorkflow(mock.Anything, mock.Anything, "", contract.ReleaseSignal, mock.Anything).Return(nil)
	var queued string
	env.RegisterDelayedCallback(func() {
		v, _ := env.QueryWorkflow(contract.StatusQuery)
		var s contract.Status
		_ = v.Get(&s)
		queued = s.State
		env.SignalWorkflow(contract.SlotGrantedSignal, nil)
	}, 3*time.Hour)
	env.ExecuteWorkflow(contract.WorkflowTypeMigration, jobInput(100))
	s := result(t, env)
	if queued != contract.StateQueued {
		t.Fatalf("state while waiting %q", queued)
	}
	if s.Copied != 100 {
		t.Fatalf("status %+v", s)
	}
	// While queued it asked again now and then, in case a grant was lost.
	if asked := b.asked; asked < 3 {
		t.Fatalf("asked for a slot %d times in 3 hours", asked)
	}
}

func decode(can *workflow.ContinueAsNewError, v any) error {
	return converter.GetDefaultDataConverter().FromPayloads(can.Input, v)
}
