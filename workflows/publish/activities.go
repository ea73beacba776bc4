package publish

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/edgeflow/edgeflow/workflows/publish/contract"
)

// Activities are scheduled by the type names in the contract, the names
// recorded histories hold, never by a Go function: a Go rename then cannot
// change what a run in flight replays. Each call is typed here, in one place.

// publishOptions are the options of the publish queue's activities.
func publishOptions(ctx workflow.Context) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		TaskQueue:           contract.TaskQueue,
		StartToCloseTimeout: 30 * time.Minute,
		HeartbeatTimeout:    time.Minute,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute, MaximumAttempts: 8,
		},
	})
}

func listCatalog(ctx workflow.Context) (names []string, err error) {
	err = workflow.ExecuteActivity(ctx, contract.ListCatalogActivity).Get(ctx, &names)
	return names, err
}

// checkPackages is started, not awaited: a check runs several at once and
// takes their results (a []contract.PackageCheck each) in order.
func checkPackages(ctx workflow.Context, refs []contract.PackageRef) workflow.Future {
	return workflow.ExecuteActivity(ctx, contract.CheckPackagesActivity, refs)
}

func stageVersion(ctx workflow.Context, ref contract.VersionRef) (plan contract.PlanSummary, err error) {
	err = workflow.ExecuteActivity(ctx, contract.StageVersionActivity, ref).Get(ctx, &plan)
	return plan, err
}

func commit(ctx workflow.Context, v contract.PackageVersion) (res contract.CommitResult, err error) {
	err = workflow.ExecuteActivity(ctx, contract.CommitActivity, v).Get(ctx, &res)
	return res, err
}

func materialize(ctx workflow.Context, v contract.PackageVersion) error {
	return workflow.ExecuteActivity(ctx, contract.MaterializeActivity, v).Get(ctx, nil)
}

func findBatchResults(ctx workflow.Context, in contract.BatchResultsInput) (found []contract.FoundBatch, err error) {
	err = workflow.ExecuteActivity(ctx, contract.FindBatchResultsActivity, in).Get(ctx, &found)
	return found, err
}

// compressBatch runs on the compress queue.
func compressBatch(ctx workflow.Context, in contract.BatchInput) (summary contract.BatchSummary, err error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		TaskQueue: contract.CompressTaskQueue,
		// A batch holds at most a few MB, but one file can be 1 GiB; its
		// compression levels step down with size so that one file takes
		// about a minute of one core at most (transform.levelSteps).
		StartToCloseTimeout: time.Hour,
		HeartbeatTimeout:    time.Minute,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute, MaximumAttempts: 5,
		},
	})
	err = workflow.ExecuteActivity(ctx, contract.CompressBatchActivity, in).Get(ctx, &summary)
	return summary, err
}
