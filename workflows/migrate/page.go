package migrate

import (
	"errors"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/edgeflow/edgeflow/workflows/migrate/contract"
)

// Page copies one page of a job (or, in a redrive pass, retries one page's
// dead letters) and reports to the job by signal, success or failure. When
// the job aborts it, the transfer stops early and the page still reports
// what it did, so the job's counters stay exact.
func Page(ctx workflow.Context, in contract.PageInput) (*contract.PageReport, error) {
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		TaskQueue: contract.TaskQueue,
		// A page of large objects takes long; heartbeats notice a dead worker.
		StartToCloseTimeout: 24 * time.Hour,
		HeartbeatTimeout:    in.Settings.HeartbeatTimeout,
		WaitForCancellation: true,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute, MaximumAttempts: 50,
			NonRetryableErrorTypes: []string{contract.ErrPermanent, contract.ErrPrecheck},
		},
	})
	if parent := workflow.GetInfo(ctx).ParentWorkflowExecution; parent != nil {
		// The transfer asks its job for its share of the limits; the
		// activity's input is not compared on replay, so no version.
		in.JobWorkflowID = parent.ID
	}
	rep, runErr := transferPage(actx, in)
	for {
		down, ok := storeDown(runErr)
		if !ok || workflow.GetVersion(ctx, "store-outage-wait", workflow.DefaultVersion, 1) == workflow.DefaultVersion {
			break
		}
		// A store is down: the job waits for it and says when it is back;
		// then the page is copied again, recovering (what it copied before
		// is found at the destination, not written twice).
		if !waitForStore(ctx, in, down) {
			rep, runErr = contract.PageReport{Execution: in.Execution, Pass: in.Pass, Seq: in.Seq, Item: in.Item, Aborted: true}, nil
			break
		}
		in.Restart++
		rep, runErr = transferPage(actx, in)
	}
	if runErr != nil {
		rep = contract.PageReport{Execution: in.Execution, Pass: in.Pass, Seq: in.Seq, Item: in.Item, Error: rootMessage(runErr)}
		// A cancelled transfer returns what it did as the cancellation's details.
		var cancelled *temporal.CanceledError
		if errors.As(runErr, &cancelled) {
			if !cancelled.HasDetails() || cancelled.Details(&rep) != nil {
				rep = contract.PageReport{Execution: in.Execution, Pass: in.Pass, Seq: in.Seq, Item: in.Item}
			}
			rep.Aborted, rep.Error = true, ""
		}
	}
	if parent := workflow.GetInfo(ctx).ParentWorkflowExecution; parent != nil {
		// Sent even when cancelled; the empty run ID reaches whichever run
		// of the job is current (after continue-as-new too).
		sctx, _ := workflow.NewDisconnectedContext(ctx)
		if err := workflow.SignalExternalWorkflow(sctx, parent.ID, "", contract.PageDoneSignal, rep).Get(sctx, nil); err != nil {
			workflow.GetLogger(ctx).Warn("page could not report to its job; the job's watchdog will find its outcome", "job", parent.ID, "error", err)
		}
	}
	if runErr != nil && !rep.Aborted {
		return nil, runErr
	}
	return &rep, nil
}

// storeDown is the outage a transfer stopped for, if it did.
func storeDown(err error) (contract.StoreDown, bool) {
	var app *temporal.ApplicationError
	var d contract.StoreDown
	if !errors.As(err, &app) || app.Type() != contract.ErrStoreUnavailable || !app.HasDetails() || app.Details(&d) != nil {
		return d, false
	}
	return d, true
}

// waitForStore tells the job a store is down and waits for its word that
// the store is back, or, should that word be lost, tries again after
// storeRecheck (a page that finds the store still down says so again).
// False: the page was cancelled (the job aborted) meanwhile.
func waitForStore(ctx workflow.Context, in contract.PageInput, down contract.StoreDown) bool {
	up := workflow.GetSignalChannel(ctx, contract.StoreUpSignal)
	for up.ReceiveAsync(nil) {
		// A word about an earlier outage says nothing about this one.
	}
	down.Execution = in.Execution
	if parent := workflow.GetInfo(ctx).ParentWorkflowExecution; parent != nil {
		if err := workflow.SignalExternalWorkflow(ctx, parent.ID, "", contract.StoreDownSignal, down).Get(ctx, nil); err != nil {
			workflow.GetLogger(ctx).Warn("page could not tell its job that a store is down", "job", parent.ID, "error", err)
		}
	}
	back := false
	sel := workflow.NewSelector(ctx)
	sel.AddReceive(up, func(c workflow.ReceiveChannel, _ bool) { c.Receive(ctx, nil); back = true })
	sel.AddFuture(workflow.NewTimer(ctx, storeRecheck), func(f workflow.Future) { back = f.Get(ctx, nil) == nil })
	sel.Select(ctx)
	return back && ctx.Err() == nil
}

// storeRecheck is how long a waiting page waits for the job's word.
const storeRecheck = 10 * time.Minute
