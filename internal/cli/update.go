package cli

import (
	"context"
	"strings"
	"time"

	"go.temporal.io/sdk/client"
)

// Update sends a workflow update and waits for its result. The server
// aborts an update whose workflow task failed (a worker restarting, a task
// timed out on a busy machine) without applying it; such an update is
// sent again a few times, with backoff, before its error is returned.
// Validators make a repeat safe: what was applied is refused, named.
func Update(ctx context.Context, c client.Client, opts client.UpdateWorkflowOptions, out any) error {
	if opts.WaitForStage == client.WorkflowUpdateStageUnspecified {
		opts.WaitForStage = client.WorkflowUpdateStageCompleted
	}
	backoff := 200 * time.Millisecond
	for attempt := 1; ; attempt++ {
		h, err := c.UpdateWorkflow(ctx, opts)
		if err == nil {
			err = h.Get(ctx, out)
		}
		if err == nil || attempt == 5 || !updateAborted(err) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(backoff):
		}
		backoff *= 2
	}
}

// updateAborted: the server's words for an update dropped with its failed
// workflow task (it has no error type of its own).
func updateAborted(err error) bool {
	return strings.Contains(err.Error(), "unexpected workflow task failure")
}
