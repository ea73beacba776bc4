package cli

import (
	"context"
	"errors"
	"testing"

	"go.temporal.io/sdk/client"
)

// flakyUpdates fails its first updates as the server does when their
// workflow task failed, then answers.
type flakyUpdates struct {
	client.Client
	failures, calls int
	err             error
}

type answered struct{ client.WorkflowUpdateHandle }

func (answered) Get(_ context.Context, out any) error { *(out.(*string)) = "done"; return nil }

func (f *flakyUpdates) UpdateWorkflow(context.Context, client.UpdateWorkflowOptions) (client.WorkflowUpdateHandle, error) {
	f.calls++
	if f.calls <= f.failures {
		return nil, f.err
	}
	return answered{}, nil
}

func TestUpdateSendsAgainWhatAFailedTaskDropped(t *testing.T) {
	aborted := errors.New("Unable to perform workflow execution update due to unexpected workflow task failure.")
	c := &flakyUpdates{failures: 2, err: aborted}
	var out string
	if err := Update(context.Background(), c, client.UpdateWorkflowOptions{UpdateName: "pause"}, &out); err != nil || out != "done" || c.calls != 3 {
		t.Fatalf("err %v, out %q, calls %d", err, out, c.calls)
	}
	c = &flakyUpdates{failures: 99, err: aborted}
	if err := Update(context.Background(), c, client.UpdateWorkflowOptions{}, &out); err == nil || c.calls != 5 {
		t.Fatalf("a task failing every time: err %v after %d calls", err, c.calls)
	}
	refused := errors.New("job j is paused; only a running job can be paused")
	c = &flakyUpdates{failures: 1, err: refused}
	if err := Update(context.Background(), c, client.UpdateWorkflowOptions{}, &out); !errors.Is(err, refused) || c.calls != 1 {
		t.Fatalf("a refused update is not sent again: err %v after %d calls", err, c.calls)
	}
}
