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
	j := &job{in: in, set: settings(ctx, in.Settings)}
	j.sel = workflow.NewSelector(ctx)
	j.wake = workflow.NewBufferedChannel(ctx, 1)
	j.signals = workflow.GetSignalChannel(ctx, contract.PageDoneSignal)
	j.st = in.Resume
	fresh := j.st == nil
	if fresh {
		j.st = j.initialState(ctx)
	}
	if err := j.registerHandlers(ctx); err != nil {
		return nil, err
	}
	j.sel.AddReceive(j.wake, func(c workflow.ReceiveChannel, _ bool) { c.Receive(ctx, nil) })
	j.sel.AddReceive(j.signals, func(c workflow.ReceiveChannel, _ bool) {
		var r contract.PageReport
		c.Receive(ctx, &r)
		j.record(ctx, r)
	})
	j.storeDowns = workflow.GetSignalChannel(ctx, contract.StoreDownSignal)
	j.sel.AddReceive(j.storeDowns, func(c workflow.ReceiveChannel, _ bool) {
		var d contract.StoreDown
		c.Receive(ctx, &d)
		j.storeDown(ctx, d)
	})
	j.lastReport = workflow.Now(ctx)

	if fresh && workflow.GetVersion(ctx, "check-job-input", workflow.DefaultVersion, 1) == 1 {
		// A starter other than ours may send settings no store accepts
		// (a part size that overflows): refused before anything runs.
		if err := in.Check(); err != nil {
			return j.fail(ctx, temporal.NewNonRetryableApplicationError(err.Error(), contract.ErrPermanent, nil))
		}
	}
	if fresh {
		j.setState(ctx, contract.StateQueued)
		if err := j.waitForSlot(ctx); err != nil {
			return j.fail(ctx, err)
		}
		if j.abort {
			return j.finishAborted(ctx)
		}
		j.setState(ctx, contract.StateRunning)
		if !j.st.Listing.Done && workflow.GetVersion(ctx, "list-during-precheck", workflow.DefaultVersion, 1) == 1 {
			// The first page is listed while the stores are checked (a
			// listing writes only to the job store); its copy starts only
			// once they pass, when run first selects its answer.
			j.listNext(ctx)
		}
		if err := j.precheck(ctx); err != nil {
			return j.fail(ctx, err)
		}
		j.st.Rate.Add(migrate.Sample{At: workflow.Now(ctx), Objects: j.st.Counters.Done(), Bytes: j.st.Counters.Bytes})
	}
	j.details(ctx)
	return j.run(ctx)
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

func (j *job) initialState(ctx workflow.Context) *contract.JobState {
	info := workflow.GetInfo(ctx)
	st := &contract.JobState{Execution: info.FirstRunID, Started: workflow.Now(ctx)}
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
func (j *job) run(ctx workflow.Context) (*contract.Status, error) {
	for {
		if j.failure != nil {
			j.cancelOutstanding(ctx)
			return j.fail(ctx, j.failure)
		}
		if j.abort {
			return j.finishAborted(ctx)
		}
		j.schedule(ctx)
		if j.finished() {
			return j.finishCompleted(ctx)
		}
		j.armWatchdog(ctx)
		j.sel.Select(ctx)
		for j.sel.HasPending() && j.failure == nil {
			j.sel.Select(ctx)
		}
		if j.failure == nil && !j.abort && !j.finished() && j.dueForContinueAsNew(ctx) {
			return j.continueAsNew(ctx)
		}
	}
}

// finished: the listing is done, every page reported, no redrive pending.
func (j *job) finished() bool {
	st := j.st
	return st.Listing.Done && !j.listing && st.Pages.AllDone() && st.Redrive == nil && !st.RedriveRequested
}

func (j *job) dueForContinueAsNew(ctx workflow.Context) bool {
	info := workflow.GetInfo(ctx)
	return info.GetCurrentHistoryLength() > j.set.HistoryBudget || info.GetContinueAsNewSuggested()
}

// continueAsNew settles what is in flight — the listing's answer and the
// starts of children (whose signals then reach the next run) — counts
// every report already delivered, and carries the state over.
func (j *job) continueAsNew(ctx workflow.Context) (*contract.Status, error) {
	for (j.listing || j.pendingStarts > 0) && j.failure == nil {
		j.sel.Select(ctx)
	}
	j.drainReports(ctx)
	j.drainStoreDowns(ctx)
	if j.failure != nil {
		j.cancelOutstanding(ctx)
		return j.fail(ctx, j.failure)
	}
	if err := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }); err != nil {
		return nil, err
	}
	j.st.Runs++
	next := j.in
	next.Resume = j.st
	// A sync run (MigrationSync) continues as a sync run.
	return nil, workflow.NewContinueAsNewError(ctx, workflow.GetInfo(ctx).WorkflowType.Name, next)
}

// activityOptions are those of the job's own short activities. They
// heartbeat, so one whose worker died is retried within a heartbeat
// timeout instead of at the end of its start-to-close timeout.
func (j *job) activityOptions(ctx workflow.Context) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
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
func (j *job) waitForSlot(ctx workflow.Context) error {
	granted, ask := false, true
	slot := workflow.GetSignalChannel(ctx, contract.SlotGrantedSignal)
	req := contract.SlotRequest{Job: j.slotName(ctx), WorkflowID: workflow.GetInfo(ctx).WorkflowExecution.ID}
	for !granted && !j.abort {
		if ask {
			if err := requestSlot(j.activityOptions(ctx), j.account(), req); err != nil {
				return fmt.Errorf("ask account %s for a slot: %w", j.account(), err)
			}
			ask = false
		}
		sel := workflow.NewSelector(ctx)
		sel.AddReceive(slot, func(c workflow.ReceiveChannel, _ bool) { c.Receive(ctx, nil); granted = true })
		// An update (abort, or a redrive asked for early) wakes the wait.
		sel.AddReceive(j.wake, func(c workflow.ReceiveChannel, _ bool) { c.Receive(ctx, nil) })
		timerCtx, cancelTimer := workflow.WithCancel(ctx)
		sel.AddFuture(workflow.NewTimer(timerCtx, 10*time.Minute), func(workflow.Future) { ask = true })
		sel.Select(ctx)
		cancelTimer()
	}
	return nil
}

// drainSignals takes the signals still queued when the job ends: reports
// already counted, grants asked for twice. Leaving them would count as
// signals the job never handled.
func (j *job) drainSignals(ctx workflow.Context) {
	j.drainReports(ctx)
	for j.storeDowns.ReceiveAsync(nil) {
	}
	slot := workflow.GetSignalChannel(ctx, contract.SlotGrantedSignal)
	for slot.ReceiveAsync(nil) {
	}
}

// slotName is what the job holds its account's slot as: the job, or a
// sync run's own workflow ID (a job's syncs may overlap one another).
func (j *job) slotName(ctx workflow.Context) string {
	if j.in.Sync != nil {
		return workflow.GetInfo(ctx).WorkflowExecution.ID
	}
	return j.in.Job
}

func (j *job) account() string {
	if j.in.Account == "" {
		return "default"
	}
	return j.in.Account
}

// releaseSlot gives the account slot back; an account that is gone has
// nothing to release.
func (j *job) releaseSlot(ctx workflow.Context) {
	ctx, _ = workflow.NewDisconnectedContext(ctx)
	req := contract.SlotRequest{Job: j.slotName(ctx), WorkflowID: workflow.GetInfo(ctx).WorkflowExecution.ID}
	_ = workflow.SignalExternalWorkflow(ctx, contract.MigrationAccountWorkflowID(j.account()), "", contract.ReleaseSignal, req).Get(ctx, nil)
}

func (j *job) precheck(ctx workflow.Context) error {
	in := contract.PrecheckInput{Job: j.in.Job, Source: j.in.Source, Dest: j.in.Dest, KeyList: j.in.KeyList}
	if err := precheck(j.activityOptions(ctx), in); err != nil {
		return fmt.Errorf("precheck: %w", err)
	}
	return nil
}

func (j *job) finishCompleted(ctx workflow.Context) (*contract.Status, error) {
	j.drainSignals(ctx)
	j.setState(ctx, contract.StateCompleted)
	s := j.status(ctx)
	j.end(ctx, s)
	workflow.GetLogger(ctx).Info("migration completed", "job", j.in.Job, "copied", s.Copied, "skipped", s.Skipped, "failed", s.Failed)
	return &s, nil
}

// finishAborted stops every page in flight, waits a while for their
// reports (so the counters say what was done), and ends.
func (j *job) finishAborted(ctx workflow.Context) (*contract.Status, error) {
	if w := j.st.Waiting; w != nil {
		j.st.Waited += workflow.Now(ctx).Sub(w.Since)
		j.st.Waiting = nil
	}
	j.setState(ctx, contract.StateAborted)
	j.cancelOutstanding(ctx)
	deadline := false
	timer := workflow.NewTimer(ctx, 2*j.set.HeartbeatTimeout+30*time.Second)
	j.sel.AddFuture(timer, func(workflow.Future) { deadline = true })
	for !deadline && (j.outstanding() > 0 || j.listing || j.pendingStarts > 0) {
		j.sel.Select(ctx)
	}
	j.releaseSlot(ctx)
	j.drainSignals(ctx)
	j.details(ctx)
	s := j.status(ctx)
	j.publishSync(ctx, s)
	j.awaitArchive(ctx, j.startArchive(ctx, s))
	return &s, nil
}

// publishSync keeps a sync run's final report in its memo, where the
// console's sync history reads it (the differences it names are in the
// result; the memo keeps the first few).
func (j *job) publishSync(ctx workflow.Context, s contract.Status) {
	if j.in.Sync == nil {
		return
	}
	r := contract.SyncReportOf(s)
	r.Differences = r.Differences[:min(len(r.Differences), 10)]
	_ = workflow.UpsertMemo(ctx, map[string]any{contract.MemoSync: r})
}

// fail ends the job as failed: the error carries the status as details.
func (j *job) fail(ctx workflow.Context, err error) (*contract.Status, error) {
	if j.st.Error == "" {
		j.st.Error = rootMessage(err)
	}
	j.drainSignals(ctx)
	j.setState(ctx, contract.StateFailed)
	s := j.status(ctx)
	j.end(ctx, s)
	return nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf("migration %s failed: %s", j.in.Job, j.st.Error), contract.ErrMigrationFailed, err, s)
}

// end archives the job's final status and gives its account slot back,
// both at once: the job's end waits for one round trip, not two.
func (j *job) end(ctx workflow.Context, s contract.Status) {
	j.publishSync(ctx, s)
	archived := j.startArchive(ctx, s)
	j.releaseSlot(ctx)
	j.awaitArchive(ctx, archived)
}

// startArchive keeps the job's final status in the job store (ArchiveJob),
// where the starters read it once retention has removed this workflow. It
// is best effort, on a context of its own (a cancelled job still leaves its
// summary): a job store down for minutes does not change how the job
// ended, and the workflow stays the answer until its retention. Nil on
// runs from before it (their histories have no archive).
func (j *job) startArchive(ctx workflow.Context, s contract.Status) workflow.Future {
	if workflow.GetVersion(ctx, "archive-job-summary", workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return nil
	}
	ctx, _ = workflow.NewDisconnectedContext(ctx)
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

func (j *job) awaitArchive(ctx workflow.Context, f workflow.Future) {
	if f == nil {
		return
	}
	ctx, _ = workflow.NewDisconnectedContext(ctx)
	if err := f.Get(ctx, nil); err != nil {
		workflow.GetLogger(ctx).Warn("the job's summary was not archived; status needs its workflow", "job", j.in.Job, "error", err)
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
func (j *job) drainReports(ctx workflow.Context) {
	for {
		var r contract.PageReport
		if !j.signals.ReceiveAsync(&r) {
			return
		}
		j.record(ctx, r)
	}
}
