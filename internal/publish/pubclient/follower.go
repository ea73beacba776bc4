package pubclient

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/edgeflow/edgeflow/workflows/publish/contract"
)

// FollowerStart is the run that follows registry's changes feed: one per
// registry, so a start while it runs finds the running one (`make run` and
// `schedule follow` start it).
func FollowerStart(registry string) (client.StartWorkflowOptions, string, any) {
	return client.StartWorkflowOptions{
		ID: contract.RegistryFollowerWorkflowID(registry), TaskQueue: contract.TaskQueue,
		WorkflowIDConflictPolicy: enums.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		WorkflowIDReusePolicy:    enums.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		StaticSummary:            contract.FollowerSummary(registry),
	}, contract.WorkflowTypeRegistryFollower, contract.FollowerInput{Registry: registry}
}

// Follower is a registry's follower as the console shows it.
type Follower struct {
	Registry   string `json:"registry"`
	WorkflowID string `json:"workflow_id"`
	// Running is false when no follower runs: the Schedule alone finds
	// new versions.
	Running bool                    `json:"running"`
	Status  contract.FollowerStatus `json:"status"`
	// Lag is now minus the last moment the follower had seen every change
	// of the feed; zero until it first caught up.
	Lag time.Duration `json:"lag"`
}

// Follower reads the state of registry's follower (a query on its
// workflow).
func (l Libraries) Follower(ctx context.Context, registry string) (Follower, error) {
	f := Follower{Registry: registry, WorkflowID: contract.RegistryFollowerWorkflowID(registry)}
	if l.Temporal == nil {
		return f, errors.New("follower: no Temporal client configured")
	}
	d, err := l.Temporal.DescribeWorkflow(ctx, f.WorkflowID, "")
	var nf *serviceerror.NotFound
	switch {
	case errors.As(err, &nf):
		return f, nil
	case err != nil:
		return f, fmt.Errorf("follower %s: %w", f.WorkflowID, err)
	case d.RawResponse.GetWorkflowExecutionInfo().GetStatus() != enums.WORKFLOW_EXECUTION_STATUS_RUNNING:
		return f, nil
	}
	f.Running = true
	v, err := l.Temporal.QueryWorkflow(ctx, f.WorkflowID, "", contract.ProgressQuery)
	if err != nil {
		return f, fmt.Errorf("follower %s: its state: %w", f.WorkflowID, err)
	}
	if err := v.Get(&f.Status); err != nil {
		return f, fmt.Errorf("follower %s: its state: %w", f.WorkflowID, err)
	}
	if !f.Status.CaughtUpAt.IsZero() {
		f.Lag = max(time.Since(f.Status.CaughtUpAt), 0)
	}
	return f, nil
}
