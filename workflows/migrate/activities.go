package migrate

import (
	"go.temporal.io/sdk/workflow"

	"github.com/edgeflow/edgeflow/workflows/migrate/contract"
)

// Activities are scheduled by the type names in the contract, the names
// recorded histories hold, never by a Go function: a Go rename then cannot
// change what a run in flight replays, and the workflows need no activity
// code. Each call is typed here, in one place; ctx carries the options.

func requestSlot(ctx workflow.Context, account string, req contract.SlotRequest) error {
	return workflow.ExecuteActivity(ctx, contract.RequestSlotActivity, account, req).Get(ctx, nil)
}

func precheck(ctx workflow.Context, in contract.PrecheckInput) error {
	return workflow.ExecuteActivity(ctx, contract.PrecheckActivity, in).Get(ctx, nil)
}

// listPage resolves to a contract.ListResult; the job waits for it in its
// selector.
func listPage(ctx workflow.Context, in contract.ListInput) workflow.Future {
	return workflow.ExecuteActivity(ctx, contract.ListPageActivity, in)
}

// deadPages resolves to a contract.DeadPagesResult.
func deadPages(ctx workflow.Context, in contract.DeadPagesInput) workflow.Future {
	return workflow.ExecuteActivity(ctx, contract.DeadPagesActivity, in)
}

func findReports(ctx workflow.Context, in contract.FindReportsInput) (found []contract.PageReport, err error) {
	err = workflow.ExecuteActivity(ctx, contract.FindReportsActivity, in).Get(ctx, &found)
	return found, err
}

func transferPage(ctx workflow.Context, in contract.PageInput) (rep contract.PageReport, err error) {
	err = workflow.ExecuteActivity(ctx, contract.TransferPageActivity, in).Get(ctx, &rep)
	return rep, err
}

func stillRunning(ctx workflow.Context, in contract.RunningInput) (running []string, err error) {
	err = workflow.ExecuteActivity(ctx, contract.StillRunningActivity, in).Get(ctx, &running)
	return running, err
}

// archiveJob resolves once the summary is stored.
func archiveJob(ctx workflow.Context, st contract.Status) workflow.Future {
	return workflow.ExecuteActivity(ctx, contract.ArchiveJobActivity, st)
}

// rebuildMetadata runs on Publish's queue (see workflows/publish/contract).
func rebuildMetadata(ctx workflow.Context, in contract.RebuildRequest) (counts contract.RebuildCounts, err error) {
	err = workflow.ExecuteActivity(ctx, contract.RebuildMetadataActivity, in).Get(ctx, &counts)
	return counts, err
}
