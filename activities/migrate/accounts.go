package migrate

import (
	"context"
	"errors"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/edgeflow/edgeflow/internal/migrate"
	"github.com/edgeflow/edgeflow/workflows/migrate/contract"
)

// RequestSlot asks a job's account for a slot, starting the account's
// workflow if it is not running (signal-with-start). The grant comes back
// by signal.
func (a *Activities) RequestSlot(ctx context.Context, account string, req contract.SlotRequest) error {
	defer beat(ctx)()
	limit := a.JobsPerAccount
	if limit < 1 {
		limit = migrate.DefaultJobLimit
	}
	_, err := a.Temporal.SignalWithStartWorkflow(ctx, contract.MigrationAccountWorkflowID(account), contract.AcquireSignal, req,
		client.StartWorkflowOptions{
			ID: contract.MigrationAccountWorkflowID(account), TaskQueue: contract.TaskQueue,
			StaticSummary: "Migration jobs of account " + account + ": at most N at once, the rest wait in line",
		},
		contract.WorkflowTypeMigrationAccount, contract.AccountInput{Account: account, Queue: migrate.JobQueue{Limit: limit}})
	return err
}

// StillRunning returns those of the workflows that are still running.
func (a *Activities) StillRunning(ctx context.Context, in contract.RunningInput) ([]string, error) {
	defer beat(ctx)()
	var running []string
	for _, id := range in.WorkflowIDs {
		d, err := a.Temporal.DescribeWorkflow(ctx, id, "")
		var notFound *serviceerror.NotFound
		if errors.As(err, &notFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if d.Status == enums.WORKFLOW_EXECUTION_STATUS_RUNNING {
			running = append(running, id)
		}
	}
	return running, nil
}
