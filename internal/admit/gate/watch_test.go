package gate

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/edgeflow/edgeflow/internal/admit"
)

// fakeRooms is a RoomSource held in memory.
type fakeRooms struct {
	mu    sync.Mutex
	snaps map[string]admit.Snapshot
	pages map[string]string
	reads int // Page calls
}

func (f *fakeRooms) List(context.Context) ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var names []string
	for n := range f.snaps {
		names = append(names, n)
	}
	return names, nil
}

func (f *fakeRooms) Snapshot(_ context.Context, room string) (admit.Snapshot, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s, ok := f.snaps[room]
	if !ok {
		return admit.Snapshot{}, ErrNoRoom
	}
	return s, nil
}

func (f *fakeRooms) Page(_ context.Context, room string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reads++
	return f.pages[room], nil
}

func (f *fakeRooms) set(s admit.Snapshot, page string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.snaps[s.Room], f.pages[s.Room] = s, page
}

// A deleted room is read as often as rooms are listed, so one created
// again under its name (the same workflow run) takes effect within
// seconds; its new settings version brings its new page.
func TestWatcherSeesADeletedRoomCreatedAgain(t *testing.T) {
	now := t0.Add(5 * time.Second)
	room, err := admit.NewRoom(admit.Settings{Name: "shop", Path: "/shop/", TotalActiveUsers: 10, NewUsersPerMinute: 10, CustomPageHTML: "<p>old</p>"}, 60, t0)
	if err != nil {
		t.Fatal(err)
	}
	src := &fakeRooms{snaps: map[string]admit.Snapshot{}, pages: map[string]string{}}
	src.set(*room.Snapshot, "<p>old</p>")
	reg := NewRegistry(admit.Gate{DataCenter: "ams", ID: "ams-1"})
	w := &Watcher{Source: src, Registry: reg, SnapshotEvery: 2 * time.Second, DiscoverEvery: 3 * time.Second,
		Logger: quietLogger(), Now: func() time.Time { return now }}
	if err := w.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	if r := reg.Match("h", "/shop/x"); r == nil {
		t.Fatal("the room is not routed")
	}

	deleted := *room.Snapshot // as the workflow publishes a deleted room
	deleted.Status, deleted.Seq = admit.StatusDeleted, deleted.Seq+1
	src.set(deleted, "")
	if wait := w.Refresh(context.Background(), "shop"); wait <= 0 || wait > w.DiscoverEvery {
		t.Errorf("a deleted room is read again in %s, want within the listing interval %s", wait, w.DiscoverEvery)
	}
	if r := reg.Match("h", "/shop/x"); r != nil {
		t.Fatal("a deleted room still takes traffic")
	}

	if err := room.Recreate(admit.Settings{Name: "shop", Path: "/shop/", TotalActiveUsers: 10, NewUsersPerMinute: 10, CustomPageHTML: "<p>new</p>"}, now); err != nil {
		t.Fatal(err)
	}
	src.set(*room.Snapshot, "<p>new</p>")
	reads := src.reads
	w.Refresh(context.Background(), "shop")
	r := reg.Match("h", "/shop/x")
	if r == nil {
		t.Fatal("the room created again is not routed")
	}
	if src.reads != reads+1 || r.state.Load().page == nil {
		t.Errorf("the room's new page was not read (%d reads)", src.reads-reads)
	}
}
