package gate

import (
	"context"
	"fmt"
	"strings"
	"time"

	"go.temporal.io/api/workflowservice/v1"

	"github.com/edgeflow/edgeflow/internal/admit"
	"github.com/edgeflow/edgeflow/workflows/admit/contract"
)

// Rooms whose workflow ended without the room being deleted (terminated,
// failed): a gate that watched the room holds it vanished (Registry.Vanish);
// one started later learns of it from Temporal's record of ended runs,
// which it keeps for the namespace's retention period, and holds it the
// same way, from when it ended.

// EndedRoom is a room whose workflow ended without the room being deleted
// (terminated, failed, cancelled, timed out), and when it ended.
type EndedRoom struct {
	Name string
	At   time.Time
}

// EndedLister is a RoomSource that also names the rooms whose workflow
// ended without a delete (a deleted room keeps running as a tombstone), so
// that a gate started after that still holds them (Watcher.holdEnded)
// rather than pass their traffic.
type EndedLister interface {
	Ended(ctx context.Context) ([]EndedRoom, error)
}

// endedQuery lists the room workflow runs that ended other than by
// continuing as new: Temporal keeps them (and answers queries of their last
// state) for the namespace's retention period.
var endedQuery = fmt.Sprintf("WorkflowType = '%s' AND ExecutionStatus != 'Running' AND ExecutionStatus != 'ContinuedAsNew'", contract.WorkflowTypeRoom)

// Ended implements EndedLister: each room's latest ended run.
func (t TemporalRooms) Ended(ctx context.Context) ([]EndedRoom, error) {
	latest := map[string]time.Time{}
	var token []byte
	for {
		resp, err := t.Client.C.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
			Query: endedQuery, PageSize: 1000, NextPageToken: token,
		})
		if err != nil {
			return nil, err
		}
		for _, e := range resp.Executions {
			name, ok := strings.CutPrefix(e.GetExecution().GetWorkflowId(), contract.RoomWorkflowID(""))
			if at := e.GetCloseTime().AsTime(); ok && admit.ValidName(name) && at.After(latest[name]) {
				latest[name] = at
			}
		}
		if token = resp.NextPageToken; len(token) == 0 {
			break
		}
	}
	out := make([]EndedRoom, 0, len(latest))
	for name, at := range latest {
		out = append(out, EndedRoom{Name: name, At: at})
	}
	return out, nil
}

// ended lists the rooms whose workflow ended without a delete, not running
// again (listed), within VanishedFor, that the registry does not hold
// vanished yet and no watch follows. A room read live at the start (Sync)
// while the listing still named its ended run is neither watched nor
// vanished: it is taken here, or it would stay live on its last snapshot.
// A watched room is left to discoverListed, which waits for two listings
// without it (one may lag).
func (w *Watcher) ended(ctx context.Context, listed map[string]bool) ([]EndedRoom, error) {
	el, ok := w.Source.(EndedLister)
	if !ok {
		return nil, nil
	}
	lctx, cancel := context.WithTimeout(ctx, w.Timeout)
	all, err := el.Ended(lctx)
	cancel()
	if err != nil {
		return nil, err
	}
	var out []EndedRoom
	for _, e := range all {
		if listed[e.Name] || !e.At.After(w.Now().Add(-w.VanishedFor)) || w.isWatched(e.Name) {
			continue
		}
		if r := w.Registry.Room(e.Name); r == nil || r.VanishedAt().IsZero() {
			out = append(out, e)
		}
	}
	return out, nil
}

// holdEnded reads the last state of a room whose workflow ended without a
// delete and holds it vanished since then (Registry.Vanish): the gate
// decides on its last snapshot, as one that saw it end would have, rather
// than pass its traffic. False if its state cannot be read (yet).
func (w *Watcher) holdEnded(ctx context.Context, e EndedRoom) bool {
	qctx, cancel := context.WithTimeout(ctx, w.Timeout)
	defer cancel()
	snap, err := w.Source.Snapshot(qctx, e.Name)
	if err != nil {
		w.mu.Lock()
		warned := w.unreadEnded[e.Name]
		if w.unreadEnded == nil {
			w.unreadEnded = map[string]bool{}
		}
		w.unreadEnded[e.Name] = true
		w.mu.Unlock()
		if !warned {
			w.Logger.Warn("a room's workflow ended without the room being deleted, and its last snapshot cannot be read yet", "room", e.Name, "ended", e.At, "err", err)
		}
		return false
	}
	if snap.Status == admit.StatusDeleted {
		return true // a deleted room's tombstone ended: nothing to hold
	}
	pages, err := w.Source.Pages(qctx, e.Name)
	if err != nil {
		return false
	}
	if err := w.Registry.UpdatePages(&snap, &pages, w.Now()); err != nil {
		w.Logger.Warn("custom page does not parse; using the default page", "room", e.Name, "err", err)
	}
	if w.Registry.Vanish(e.Name, e.At) {
		w.Logger.Warn("room's workflow ended without the room being deleted; deciding on its last snapshot by the outage's rules",
			"room", e.Name, "ended", e.At, "for", w.VanishedFor)
	}
	return true
}

func (w *Watcher) isWatched(name string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.watched[name] != nil
}
