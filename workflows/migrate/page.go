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
	rep, runErr := transferPage(actx, in)
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
