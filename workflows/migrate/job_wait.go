package migrate

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/edgeflow/edgeflow/internal/migrate"
	"github.com/edgeflow/edgeflow/workflows/migrate/contract"
)

// A store outage is a pause, not a pile of dead letters: a page (or the
// listing) that finds a store down stops and says so; the job then starts
// nothing new and probes that store, with backoff capped at a minute and
// no limit, until the probe passes; then it tells the waiting pages to go
// on and lists again. The wait is the job's state (JobState.Waiting), so a
// worker dying, or a continue-as-new, in the middle of it loses nothing;
// an abort ends it as any other.

// enterWait starts waiting for a side (or notes that the job waits already).
// False: the run predates waiting (replay of an older history).
func (j *job) enterWait(ctx workflow.Context, d contract.StoreDown) bool {
	if workflow.GetVersion(ctx, "store-outage-wait", workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return false
	}
	if j.st.Waiting == nil {
		j.st.Waiting = &contract.StoreWait{Side: d.Side, Since: workflow.Now(ctx), Reason: d.Reason}
		workflow.GetLogger(ctx).Warn("a store is down; the job waits for it", "job", j.in.Job, "side", d.Side, "reason", d.Reason)
		j.details(ctx)
	}
	return true
}

// storeDown records a page's word that a store is down.
func (j *job) storeDown(ctx workflow.Context, d contract.StoreDown) {
	if d.Execution != j.st.Execution || contract.Ended(j.st.State) || j.abort {
		return
	}
	j.enterWait(ctx, d)
}

// drainStoreDowns takes the outage words already delivered (before
// continue-as-new, and at the end), so none is lost with the run.
func (j *job) drainStoreDowns(ctx workflow.Context) {
	for {
		var d contract.StoreDown
		if !j.storeDowns.ReceiveAsync(&d) {
			return
		}
		j.storeDown(ctx, d)
	}
}

// armProbe keeps one probe of the waited-for store scheduled: a durable
// timer of migrate.ProbeDelay, then the ProbeStore activity.
func (j *job) armProbe(ctx workflow.Context) {
	w := j.st.Waiting
	if w == nil || j.probing {
		return
	}
	j.probing = true
	timer := workflow.NewTimer(ctx, migrate.ProbeDelay(w.Probes))
	j.sel.AddFuture(timer, func(workflow.Future) {
		in := contract.ProbeInput{Job: j.in.Job, Side: w.Side, Endpoint: j.in.Dest}
		if w.Side == migrate.SideSource {
			in.Endpoint = j.in.Source
		}
		actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
			TaskQueue: contract.TaskQueue, StartToCloseTimeout: 2 * time.Minute, HeartbeatTimeout: j.set.HeartbeatTimeout,
			// One try per probe: the job's timer is the backoff.
			RetryPolicy: &temporal.RetryPolicy{MaximumAttempts: 1},
		})
		j.sel.AddFuture(workflow.ExecuteActivity(actx, contract.ProbeStoreActivity, in), func(f workflow.Future) {
			j.probing = false
			if j.st.Waiting != w {
				return
			}
			if err := f.Get(ctx, nil); err != nil {
				w.Probes++
				j.details(ctx)
				return
			}
			j.endWait(ctx)
		})
	})
}

// endWait: the store is back. The waiting pages are told to go on (a page
// not waiting ignores the word), and the listing resumes where it was.
func (j *job) endWait(ctx workflow.Context) {
	w := j.st.Waiting
	j.st.Waiting = nil
	j.st.Waited += workflow.Now(ctx).Sub(w.Since)
	j.lastReport = workflow.Now(ctx) // the watchdog counts from here, not from before the wait
	workflow.GetLogger(ctx).Info("the store is back; the job goes on", "job", j.in.Job, "side", w.Side, "waited", workflow.Now(ctx).Sub(w.Since))
	var pending []workflow.Future
	for _, id := range j.outstandingPageIDs(ctx) {
		pending = append(pending, workflow.SignalExternalWorkflow(ctx, id, "", contract.StoreUpSignal, nil))
	}
	for _, f := range pending {
		_ = f.Get(ctx, nil) // a page that ended has nothing to resume
	}
	j.details(ctx)
}

// outstandingPageIDs are the workflow IDs of the unreported page children.
func (j *job) outstandingPageIDs(ctx workflow.Context) []string {
	var ids []string
	for _, s := range j.st.Pages.Outstanding() {
		ids = append(ids, j.pageWorkflowID(ctx, 0, s))
	}
	if r := j.st.Redrive; r != nil {
		for _, item := range r.Items.Outstanding() {
			ids = append(ids, j.pageWorkflowID(ctx, r.Pass, r.Seqs[item]))
		}
	}
	return ids
}

// waitingStatus fills the status's waiting fields.
func (j *job) waitingStatus(ctx workflow.Context, s *contract.Status) {
	waited := j.st.Waited
	if w := j.st.Waiting; w != nil && !contract.Ended(j.st.State) {
		since := w.Since
		s.WaitingFor, s.WaitingSince, s.WaitingReason = w.Side, &since, w.Reason
		waited += workflow.Now(ctx).Sub(w.Since)
	}
	s.WaitedSeconds = waited.Seconds()
}

// waitingDetails is the waiting line of the job's details in the Web UI.
func waitingDetails(s contract.Status) string {
	if s.WaitingFor == "" {
		return ""
	}
	return fmt.Sprintf("\n\n**waiting for the %s store** since %s (no new transfers; probing it): %s",
		s.WaitingFor, s.WaitingSince.UTC().Format(time.RFC3339), s.WaitingReason)
}
