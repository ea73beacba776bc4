package roomclient

import (
	"context"
	"fmt"
	"sync"

	"go.temporal.io/api/workflowservice/v1"

	"github.com/edgeflow/edgeflow/internal/admit"
	"github.com/edgeflow/edgeflow/workflows/admit/contract"
)

// listQueries is how many rooms List asks at once: enough that a few
// hundred rooms list in a second or two, few enough to spare the frontend.
const listQueries = 16

// List returns one row per room, from each open room workflow's snapshot,
// sorted by host, path and name. Deleted rooms (kept running as tombstones)
// are left out unless withDeleted. A room whose workflow does not answer is
// listed with status "unavailable" and the reason, not dropped: a table
// that silently loses a room hides exactly the one in trouble.
func (c Client) List(ctx context.Context, withDeleted bool) ([]admit.RoomListEntry, error) {
	names, err := c.roomNames(ctx)
	if err != nil {
		return nil, err
	}
	rows := make([]admit.RoomListEntry, len(names))
	sem := make(chan struct{}, listQueries)
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			snap, err := c.Snapshot(ctx, name)
			if err != nil {
				rows[i] = admit.RoomListEntry{Name: name, Status: admit.StatusUnavailable, Error: err.Error()}
				return
			}
			rows[i] = admit.ListEntry(&snap)
			rows[i].Name = name
			// The live view's cause of failure, if any, is in the row's
			// live.error already, in words safe to show.
			rows[i].Live, _ = c.Live(ctx, name, &snap)
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	out := rows[:0]
	for _, r := range rows {
		if r.Status != admit.StatusDeleted || withDeleted {
			out = append(out, r)
		}
	}
	admit.SortRoomList(out)
	return out, nil
}

// roomNames lists the rooms whose workflow runs, through visibility (the
// Room search attribute every room workflow carries).
func (c Client) roomNames(ctx context.Context) ([]string, error) {
	query := fmt.Sprintf("WorkflowType = '%s' AND ExecutionStatus = 'Running'", contract.WorkflowTypeRoom)
	var names []string
	var token []byte
	for {
		resp, err := c.C.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: query, NextPageToken: token})
		if err != nil {
			return nil, fmt.Errorf("list the room workflows: %w", err)
		}
		for _, e := range resp.Executions {
			if name, ok := contract.RoomFromWorkflowID(e.GetExecution().GetWorkflowId()); ok {
				names = append(names, name)
			}
		}
		if token = resp.NextPageToken; len(token) == 0 {
			return names, nil
		}
	}
}
