// Package migrate holds Migrate's workflows: a job (Migration) lists the
// source page by page and fans the pages out to children (MigrationPage)
// that copy them and report by signal; an account workflow
// (MigrationAccount) admits at most N jobs of an account at once.
package migrate

import (
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/edgeflow/edgeflow/internal/migrate"
	"github.com/edgeflow/edgeflow/workflows/migrate/contract"
)

// job is one run of a Migration workflow: its input, its durable state and
// what is in flight right now (which does not survive continue-as-new and
// is settled before it).
type job struct {
	ctx workflow.Context
	in  contract.JobInput
	st  *contract.JobState
	set contract.Settings

	sel     workflow.Selector
	wake    workflow.Channel // update handlers nudge the main loop
	signals workflow.ReceiveChannel

	listing       bool // a listing activity is in flight
	pendingStarts int  // children whose start is not yet confirmed
	abort         bool
	failure       error
	lastReport    time.Time
	watching      bool // a watchdog timer is armed
	storeDowns    workflow.ReceiveChannel
	probing       bool // a probe of the waited-for store is scheduled
}

// Job runs one migration job. Its workflow ID is contract.MigrationWorkflowID.
func Job(ctx workflow.Context, in contract.JobInput) (*contract.Status, error) {
	j := &job{ctx: ctx, in: in, set: settings(ctx, in.Settings)}
	j.sel = workflow.NewSelector(ctx)
	j.wake = workflow.NewBufferedChannel(ctx, 1)
	j.signals = workflow.GetSignalChannel(ctx, contract.PageDoneSignal)
	j.st = in.Resume
	fresh := j.st == nil
	if fresh {
		j.st = j.initialState()
	}
	if err := j.registerHandlers(); err != nil {
		return nil, err
	}
	j.sel.AddReceive(j.wake, func(c workflow.ReceiveChannel, _ bool) { c.Receive(ctx, nil) })
	j.sel.AddReceive(j.signals, func(c workflow.ReceiveChannel, _ bool) {
		var r contract.PageReport
		c.Receive(ctx, &r)
		j.record(r)
	})
	j.storeDowns = workflow.GetSignalChannel(ctx, contract.StoreDownSignal)
	j.sel.AddReceive(j.storeDowns, func(c workflow.ReceiveChannel, _ bool) {
		var d contract.StoreDown
		c.Receive(ctx, &d)
		j.storeDown(d)
	})
	j.lastReport = workflow.Now(ctx)

	if fresh && workflow.GetVersion(ctx, "check-job-input", workflow.DefaultVersion, 1) == 1 {
		// A starter other than ours may send settings no store accepts
		// (a part size that overflows): refused before anything runs.
		if err := in.Check(); err != nil {
			return j.fail(temporal.NewNonRetryableApplicationError(err.Error(), contract.ErrPermanent, nil))
		}
	}
	if fresh {
		j.setState(contract.StateQueued)
		if err := j.waitForSlot(); err != nil {
			return j.fail(err)
		}
		if j.abort {
			return j.finishAborted()
		}
		j.setState(contract.StateRunning)
		if !j.st.Listing.Done && workflow.GetVersion(ctx, "list-during-precheck", workflow.DefaultVersion, 1) == 1 {
			// The first page is listed while the stores are checked (a
			// listing writes only to the job store); its copy starts only
			// once they pass, when run first selects its answer.
			j.listNext()
		}
		if err := j.precheck(); err != nil {
			return j.fail(err)
		}
		j.st.Rate.Add(migrate.Sample{At: workflow.Now(ctx), Objects: j.st.Counters.Done(), Bytes: j.st.Counters.Bytes})
	}
	j.details()
	return j.run()
}

// settings fills the job's unset settings with the defaults, recorded in
// the history (a side effect), so a later change of a default never changes
// what a replay of this run does.
func settings(ctx workflow.Context, s contract.Settings) contract.Settings {
	var out contract.Settings
	v := workflow.SideEffect(ctx, func(workflow.Context) any { return s.WithDefaults() })
	if err := v.Get(&out); err != nil {
		return s.WithDefaults()
	}
	return out
}

func (j *job) initialState() *contract.JobState {
	info := workflow.GetInfo(j.ctx)
	st := &contract.JobState{Execution: info.FirstRunID, Started: workflow.Now(j.ctx)}
	if r := j.in.Redrive; r != nil {
		// A redrive run works on the data of the execution it redrives.
		st.Execution, st.Started, st.Passes, st.Counters = r.Execution, r.Started, r.Passes, r.Counters
		st.Listing.Done = true
		st.RedriveRequested = true
	}
	return st
}

// run is the main loop: schedule what may start, wait for one event, repeat,
// until every page has reported, the job fails or is aborted, or its history
// is due for continue-as-new.
func (j *job) run() (*contract.Status, error) {
	for {
		if j.failure != nil {
			j.cancelOutstanding()
			return j.fail(j.failure)
		}
		if j.abort {
			return j.finishAborted()
		}
		j.schedule()
		if j.finished() {
			return j.finishCompleted()
		}
		j.armWatchdog()
		j.sel.Select(j.ctx)
		for j.sel.HasPending() && j.failure == nil {
			j.sel.Select(j.ctx)
		}
		if j.failure == nil && !j.abort && !j.finished() && j.dueForContinueAsNew() {
			return j.continueAsNew()
		}
	}
}

// finished: the listing is done, every page reported, no redrive pending.
func (j *job) finished() bool {
	st := j.st
	return st.Listing.Done && !j.listing && st.Pages.AllDone() && st.Redrive == nil && !st.RedriveRequested
}

func (j *job) dueForContinueAsNew() bool {
	info := workflow.GetInfo(j.ctx)
	return info.GetCurrentHistoryLength() > j.set.HistoryBudget || info.GetContinueAsNewSuggested()
}

// continueAsNew settles what is in flight — the listing's answer and the
// starts of children (whose signals then reach the next run) — counts
// every report already delivered, and carries the state over.
func (j *job) continueAsNew() (*contract.Status, error) {
	for (j.listing || j.pendingStarts > 0) && j.failure == nil {
		j.sel.Select(j.ctx)
	}
	j.drainReports()
	j.drainStoreDowns()
	if j.failure != nil {
		j.cancelOutstanding()
		return j.fail(j.failure)
	}
	if err := workflow.Await(j.ctx, func() bool { return workflow.AllHandlersFinished(j.ctx) }); err != nil {
		return nil, err
	}
	j.st.Runs++
	next := j.in
	next.Resume = j.st
	return nil, workflow.NewContinueAsNewError(j.ctx, contract.WorkflowTypeMigration, next)
}

// activityOptions are those of the job's own short activities. They
// heartbeat, so one whose worker died is retried within a heartbeat
// timeout instead of at the end of its start-to-close timeout.
func (j *job) activityOptions() workflow.Context {
	return workflow.WithActivityOptions(j.ctx, workflow.ActivityOptions{
		TaskQueue:           contract.TaskQueue,
		StartToCloseTimeout: 10 * time.Minute,
		HeartbeatTimeout:    j.set.HeartbeatTimeout,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute, MaximumAttempts: 30,
			NonRetryableErrorTypes: []string{contract.ErrPrecheck, contract.ErrPermanent},
		},
	})
}

// waitForSlot asks the account for a slot and waits in line (state queued)
// until it is granted or the job is aborted. The request is repeated now
// and then, so a lost grant or a restarted account cannot strand the job.
func (j *job) waitForSlot() error {
	granted, ask := false, true
	slot := workflow.GetSignalChannel(j.ctx, contract.SlotGrantedSignal)
	req := contract.SlotRequest{Job: j.in.Job, WorkflowID: workflow.GetInfo(j.ctx).WorkflowExecution.ID}
	for !granted && !j.abort {
		if ask {
			if err := requestSlot(j.activityOptions(), j.account(), req); err != nil {
				return fmt.Errorf("ask account %s for a slot: %w", j.account(), err)
			}
			ask = false
		}
		sel := workflow.NewSelector(j.ctx)
		sel.AddReceive(slot, func(c workflow.ReceiveChannel, _ bool) { c.Receive(j.ctx, nil); granted = true })
		// An update (abort, or a redrive asked for early) wakes the wait.
		sel.AddReceive(j.wake, func(c workflow.ReceiveChannel, _ bool) { c.Receive(j.ctx, nil) })
		timerCtx, cancelTimer := workflow.WithCancel(j.ctx)
		sel.AddFuture(workflow.NewTimer(timerCtx, 10*time.Minute), func(workflow.Future) { ask = true })
		sel.Select(j.ctx)
		cancelTimer()
	}
	return nil
}

// drainSignals takes the signals still queued when the job ends: reports
// already counted, grants asked for twice. Leaving them would count as
// signals the job never handled.
func (j *job) drainSignals() {
	j.drainReports()
	for j.storeDowns.ReceiveAsync(nil) {
	}
	slot := workflow.GetSignalChannel(j.ctx, contract.SlotGrantedSignal)
	for slot.ReceiveAsync(nil) {
	}
}

func (j *job) account() string {
	if j.in.Account == "" {
		return "default"
	}
	return j.in.Account
}

// releaseSlot gives the account slot back; an account that is gone has
// nothing to release.
func (j *job) releaseSlot() {
	ctx, _ := workflow.NewDisconnectedContext(j.ctx)
	req := contract.SlotRequest{Job: j.in.Job, WorkflowID: workflow.GetInfo(j.ctx).WorkflowExecution.ID}
	_ = workflow.SignalExternalWorkflow(ctx, contract.MigrationAccountWorkflowID(j.account()), "", contract.ReleaseSignal, req).Get(ctx, nil)
}

func (j *job) precheck() error {
	in := contract.PrecheckInput{Job: j.in.Job, Source: j.in.Source, Dest: j.in.Dest, KeyList: j.in.KeyList}
	if err := precheck(j.activityOptions(), in); err != nil {
		return fmt.Errorf("precheck: %w", err)
	}
	return nil
}

func (j *job) finishCompleted() (*contract.Status, error) {
	j.drainSignals()
	j.setState(contract.StateCompleted)
	s := j.status()
	j.end(s)
	workflow.GetLogger(j.ctx).Info("migration completed", "job", j.in.Job, "copied", s.Copied, "skipped", s.Skipped, "failed", s.Failed)
	return &s, nil
}

// finishAborted stops every page in flight, waits a while for their
// reports (so the counters say what was done), and ends.
func (j *job) finishAborted() (*contract.Status, error) {
	if w := j.st.Waiting; w != nil {
		j.st.Waited += workflow.Now(j.ctx).Sub(w.Since)
		j.st.Waiting = nil
	}
	j.setState(contract.StateAborted)
	j.cancelOutstanding()
	deadline := false
	timer := workflow.NewTimer(j.ctx, 2*j.set.HeartbeatTimeout+30*time.Second)
	j.sel.AddFuture(timer, func(workflow.Future) { deadline = true })
	for !deadline && (j.outstanding() > 0 || j.listing || j.pendingStarts > 0) {
		j.sel.Select(j.ctx)
	}
	j.releaseSlot()
	j.drainSignals()
	j.details()
	s := j.status()
	j.awaitArchive(j.startArchive(s))
	return &s, nil
}

// fail ends the job as failed: the error carries the status as details.
func (j *job) fail(err error) (*contract.Status, error) {
	if j.st.Error == "" {
		j.st.Error = rootMessage(err)
	}
	j.drainSignals()
	j.setState(contract.StateFailed)
	s := j.status()
	j.end(s)
	return nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf("migration %s failed: %s", j.in.Job, j.st.Error), contract.ErrMigrationFailed, err, s)
}

// end archives the job's final status and gives its account slot back,
// both at once: the job's end waits for one round trip, not two.
func (j *job) end(s contract.Status) {
	archived := j.startArchive(s)
	j.releaseSlot()
	j.awaitArchive(archived)
}

// startArchive keeps the job's final status in the job store (ArchiveJob),
// where the starters read it once retention has removed this workflow. It
// is best effort, on a context of its own (a cancelled job still leaves its
// summary): a job store down for minutes does not change how the job
// ended, and the workflow stays the answer until its retention. Nil on
// runs from before it (their histories have no archive).
func (j *job) startArchive(s contract.Status) workflow.Future {
	if workflow.GetVersion(j.ctx, "archive-job-summary", workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return nil
	}
	ctx, _ := workflow.NewDisconnectedContext(j.ctx)
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		TaskQueue:           contract.TaskQueue,
		StartToCloseTimeout: time.Minute,
		HeartbeatTimeout:    j.set.HeartbeatTimeout,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: 30 * time.Second, MaximumAttempts: 10,
		},
	})
	return archiveJob(ctx, s)
}

func (j *job) awaitArchive(f workflow.Future) {
	if f == nil {
		return
	}
	ctx, _ := workflow.NewDisconnectedContext(j.ctx)
	if err := f.Get(ctx, nil); err != nil {
		workflow.GetLogger(j.ctx).Warn("the job's summary was not archived; status needs its workflow", "job", j.in.Job, "error", err)
	}
}

// rootMessage is the innermost message of an error chain: what went wrong,
// without the layers of activity and workflow wrapping.
func rootMessage(err error) string {
	var app *temporal.ApplicationError
	if errors.As(err, &app) {
		return app.Error()
	}
	for {
		next := errors.Unwrap(err)
		if next == nil {
			return err.Error()
		}
		err = next
	}
}

// drainReports records every page report already delivered, each decoded
// into a fresh value: decoding into the last one would keep the fields a
// report leaves out (an error, a redrive count, an abort) at the previous
// report's values.
func (j *job) drainReports() {
	for {
		var r contract.PageReport
		if !j.signals.ReceiveAsync(&r) {
			return
		}
		j.record(r)
	}
}
