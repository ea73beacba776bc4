package gate

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/edgeflow/edgeflow/internal/admit"
)

// endedSource is a RoomSource whose rooms' workflows all ended (none runs),
// whose last states are still read by query.
type endedSource struct {
	*fakeRooms
	ended []EndedRoom
}

func (endedSource) List(context.Context) ([]string, error) { return nil, nil }

func (e endedSource) Ended(context.Context) ([]EndedRoom, error) { return e.ended, nil }

// A gate started after a room's workflow ended without a delete (it was
// terminated) holds the room from its last state and queues its new
// visitors, as a gate that watched it end does. Before, it knew only the
// running workflows, never learned the room existed and passed its traffic.
func TestGateStartedAfterARoomEndedQueuesIt(t *testing.T) {
	h := newHarness(t, admit.Settings{Name: "shop", Path: "/shop/", TotalActiveUsers: 10, NewUsersPerMinute: 10})
	last := *h.room.Snapshot
	h.reg.Remove("shop") // this gate never saw the room
	h.mu.Lock()
	h.now = t0.Add(10 * time.Minute)
	h.mu.Unlock()
	if r := h.get(newVisitor(), "/shop/cart"); !r.fromOrigin() {
		t.Fatalf("a room the gate does not know: %d %q, want the origin's (the defect this test is about)", r.status, r.body)
	}

	endedAt := t0.Add(90 * time.Second)
	src := endedSource{fakeRooms: &fakeRooms{snaps: map[string]admit.Snapshot{"shop": last}, pages: map[string]string{}},
		ended: []EndedRoom{{Name: "shop", At: endedAt}}}
	w := &Watcher{Source: src, Registry: h.reg, Logger: quietLogger(), Now: h.clock}
	if err := w.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	room := h.reg.Room("shop")
	if room == nil || !room.VanishedAt().Equal(endedAt) {
		t.Fatalf("the ended room is not held vanished since it ended: %v", room)
	}
	if r := h.get(newVisitor(), "/shop/cart"); r.fromOrigin() {
		t.Fatalf("a new visitor of the ended room reached the origin: %d", r.status)
	}
	if err := w.Discover(context.Background()); err != nil || h.reg.Room("shop") == nil {
		t.Fatalf("a listing forgot the ended room: %v", err)
	}
}

// Ended rooms the gate does not hold: a deleted room's tombstone that
// ended, and a room that ended longer ago than a vanished room is kept. One
// whose last state cannot be read holds the gate's start (Sync names it).
func TestEndedRoomsNotHeld(t *testing.T) {
	now := t0.Add(10 * time.Minute)
	room, err := admit.NewRoom(admit.Settings{Name: "gone", Path: "/gone/", TotalActiveUsers: 10, NewUsersPerMinute: 10}, 60, t0)
	if err != nil {
		t.Fatal(err)
	}
	deleted := *room.Snapshot
	deleted.Room, deleted.Settings.Name, deleted.Settings.Path, deleted.Status = "tomb", "tomb", "/tomb/", admit.StatusDeleted
	src := endedSource{fakeRooms: &fakeRooms{snaps: map[string]admit.Snapshot{"gone": *room.Snapshot, "tomb": deleted}, pages: map[string]string{}},
		ended: []EndedRoom{{Name: "gone", At: now.Add(-25 * time.Hour)}, {Name: "tomb", At: now.Add(-time.Minute)}}}
	reg := NewRegistry(admit.Gate{DataCenter: "ams", ID: "ams-1"})
	w := &Watcher{Source: src, Registry: reg, Logger: quietLogger(), Now: func() time.Time { return now }}
	if err := w.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := len(reg.Rooms()); n != 0 {
		t.Errorf("%d rooms held, want none", n)
	}
	src.ended = append(src.ended, EndedRoom{Name: "unread", At: now.Add(-time.Minute)})
	w.Source = src
	var unread *UnreadRoomsError
	if err := w.Sync(context.Background()); !errors.As(err, &unread) || len(unread.Rooms) != 1 || unread.Rooms[0] != "unread" {
		t.Errorf("Sync with an ended room whose state cannot be read: %v, want it named", err)
	}
}

// laggingSource lists a room as running once after its workflow ended
// (visibility is eventually consistent), then as ended.
type laggingSource struct {
	*fakeRooms
	listings int
	ended    []EndedRoom
}

func (l *laggingSource) List(context.Context) ([]string, error) {
	if l.listings++; l.listings == 1 {
		return []string{"shop"}, nil
	}
	return nil, nil
}

func (l *laggingSource) Ended(context.Context) ([]EndedRoom, error) {
	if l.listings == 1 {
		return nil, nil
	}
	return l.ended, nil
}

// A gate whose first listing still named a room whose workflow had just
// ended (its last state still answers queries) holds the room vanished once
// the listing says it ended. Before, the room read at the start was neither
// watched nor taken for ended, and stayed live on its last snapshot for
// good (.ci/run: TestGateStartedAfterTerminationHoldsTheRoom).
func TestRoomListedRunningAtStartThenEndedIsHeldVanished(t *testing.T) {
	now := t0.Add(10 * time.Minute)
	room, err := admit.NewRoom(admit.Settings{Name: "shop", Path: "/shop/", TotalActiveUsers: 10, NewUsersPerMinute: 10}, 60, t0)
	if err != nil {
		t.Fatal(err)
	}
	endedAt := now.Add(-time.Minute)
	for _, next := range []string{"Sync", "Discover"} {
		t.Run(next, func(t *testing.T) {
			src := &laggingSource{fakeRooms: &fakeRooms{snaps: map[string]admit.Snapshot{"shop": *room.Snapshot}, pages: map[string]string{}},
				ended: []EndedRoom{{Name: "shop", At: endedAt}}}
			reg := NewRegistry(admit.Gate{DataCenter: "ams", ID: "ams-1"})
			w := &Watcher{Source: src, Registry: reg, Logger: quietLogger(), Now: func() time.Time { return now }}
			if err := w.Sync(context.Background()); err != nil {
				t.Fatal(err)
			}
			if r := reg.Room("shop"); r == nil || !r.VanishedAt().IsZero() {
				t.Fatalf("after the first listing: held %t, want the room held live", r != nil)
			}
			var err error
			if next == "Sync" {
				err = w.Sync(context.Background())
			} else {
				err = w.Discover(context.Background())
			}
			if err != nil {
				t.Fatal(err)
			}
			if r := reg.Room("shop"); r == nil || !r.VanishedAt().Equal(endedAt) {
				t.Fatalf("after the listing that says it ended: held %t, want it held vanished since %s", r != nil, endedAt)
			}
		})
	}
}
