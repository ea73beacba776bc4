package publish

import (
	"fmt"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/edgeflow/edgeflow/workflows/publish/contract"
)

func startBatch(ctx workflow.Context, in contract.PublishInput, plan contract.PlanSummary, batch int) workflow.ChildWorkflowFuture {
	cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{
		WorkflowID: contract.ProcessBatchWorkflowID(in.Name, in.Version, batch),
		TaskQueue:  contract.TaskQueue,
		// Children outlive a continue-as-new of their version and report by signal.
		ParentClosePolicy:     enums.PARENT_CLOSE_POLICY_ABANDON,
		WorkflowIDReusePolicy: enums.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		TypedSearchAttributes: temporal.NewSearchAttributes(contract.PackageKey.ValueSet(in.Name), contract.VersionKey.ValueSet(in.Version)),
		StaticSummary:         fmt.Sprintf("%s@%s batch %d of %d", in.Name, in.Version, batch+1, plan.Batches),
	})
	return workflow.ExecuteChildWorkflow(cctx, ProcessBatch, contract.BatchInput{
		Name: in.Name, Version: in.Version, Batch: batch, Options: plan.Options, Fingerprint: plan.Fingerprint,
		Execution: workflow.GetInfo(ctx).FirstRunID,
	})
}

// cancelOutstanding asks every batch started (in this run or an earlier
// one) that has not reported to stop: a failed version must not keep the
// compress pool busy. Children that already ended ignore the request.
func cancelOutstanding(ctx workflow.Context, in contract.PublishInput, st *contract.PublishState) {
	var pending []workflow.Future
	for b := 0; b < st.Started; b++ {
		if !st.IsDone(b) {
			pending = append(pending, workflow.RequestCancelExternalWorkflow(ctx, contract.ProcessBatchWorkflowID(in.Name, in.Version, b), ""))
		}
	}
	for _, f := range pending {
		_ = f.Get(ctx, nil)
	}
}

// ProcessBatch runs one batch's CPU work on the compress pool and signals the
// version that started it, success or failure.
func ProcessBatch(ctx workflow.Context, in contract.BatchInput) (*contract.BatchSummary, error) {
	summary, runErr := compressBatch(ctx, in)
	done := contract.BatchDone{Batch: in.Batch, Execution: in.Execution}
	if runErr != nil {
		done.Error = runErr.Error()
	} else {
		done.Summary = &summary
	}
	if parent := workflow.GetInfo(ctx).ParentWorkflowExecution; parent != nil {
		// Empty run ID: the signal reaches whichever run of the version is current.
		if err := workflow.SignalExternalWorkflow(ctx, parent.ID, "", contract.BatchDoneSignal, done).Get(ctx, nil); err != nil {
			// Failing makes the version see this batch end unreported.
			return nil, fmt.Errorf("batch %d could not report to %s: %w", in.Batch, parent.ID, err)
		}
	}
	if runErr != nil {
		return nil, runErr
	}
	return &summary, nil
}
