package publish_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/edgeflow/edgeflow/internal/testenv/replaytest"
	"github.com/edgeflow/edgeflow/workflows/publish"
	"github.com/edgeflow/edgeflow/workflows/publish/contract"
)

// TestRecordFollowerHistories records testdata/registry_follower.json, the
// first run of a RegistryFollower: a poll that finds two catalog packages
// and starts their check, a stalled poll and its back-off, a change of a
// package while its check may still run, idle polls, and the
// continue-as-new its small history budget forces. Like TestRecordHistories
// it runs only on the dev server EDGEFLOW_RECORD_HISTORY names:
//
//	EDGEFLOW_RECORD_HISTORY=127.0.0.1:7388 go test ./workflows/publish/ -run TestRecordFollowerHistories -v
func TestRecordFollowerHistories(t *testing.T) {
	c := replaytest.Dial(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var polls atomic.Int64
	replaytest.StartWorker(t, c, contract.TaskQueue, func(pool worker.Worker) {
		publish.Register(pool)
		registerRecordingStubs(pool)
		pool.RegisterActivityWithOptions(func(ctx context.Context, in contract.FollowInput) (*contract.FollowResult, error) {
			now := time.Now().UTC()
			switch polls.Add(1) {
			case 1:
				return &contract.FollowResult{LastSeq: "2", Names: []string{"rec-a", "rec-c"}, Changes: 2, CaughtUpAt: now}, nil
			case 2:
				return nil, errors.New("registry changes feed stalled: no answer within 16s (a long-poll of 1s)")
			case 3:
				return &contract.FollowResult{LastSeq: "5", Names: []string{"rec-a"}, Changes: 3, CaughtUpAt: now}, nil
			}
			time.Sleep(100 * time.Millisecond) // a long-poll with nothing new
			return &contract.FollowResult{LastSeq: in.Since, CaughtUpAt: now}, nil
		}, activity.RegisterOptions{Name: contract.FollowRegistryActivity})
	})
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID: contract.RegistryFollowerWorkflowID(contract.RegistryNPM), TaskQueue: contract.TaskQueue,
		WorkflowIDReusePolicy: enums.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
	}, publish.RegistryFollower, contract.FollowerInput{Registry: contract.RegistryNPM, Since: "0", PollWait: time.Second, HistoryBudget: 60})
	if err != nil {
		t.Fatalf("start the follower (the server must be fresh): %v", err)
	}
	first := run.GetRunID()
	for {
		d, err := c.DescribeWorkflow(ctx, run.GetID(), "")
		if err == nil && d.WorkflowExecution.RunID != first {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("the follower never continued as new: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	replaytest.WriteHistory(t, ctx, c, "registry_follower.json", run.GetID(), first)
	if err := c.TerminateWorkflow(ctx, run.GetID(), "", "recorded"); err != nil {
		t.Fatal(err)
	}
}
