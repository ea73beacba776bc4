package gate

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/edgeflow/edgeflow/internal/admit"
)

// fakeRooms is a RoomSource held in memory.
type fakeRooms struct {
	mu     sync.Mutex
	snaps  map[string]admit.Snapshot
	pages  map[string]string
	events map[string]map[string]string // by room, by event
	reads  int                          // Pages calls
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

func (f *fakeRooms) Pages(_ context.Context, room string) (Pages, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reads++
	return Pages{Room: f.pages[room], Events: f.events[room]}, nil
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

// While an event with its own page pre-queues or runs, queued visitors get
// the event's page, then the room's again; an event without a page of its
// own shows the room's, one with an empty page the default page. The gate
// reads the pages when the event is added (a new settings version), not
// when it begins: only the snapshot says which event affects the room.
func TestEventPageReachesTheGate(t *testing.T) {
	h := newHarness(t, queuedRoom("<p>room</p>"))
	src := &fakeRooms{snaps: map[string]admit.Snapshot{}, pages: map[string]string{}, events: map[string]map[string]string{}}
	w := &Watcher{Source: src, Registry: h.reg, Logger: quietLogger(), Now: h.clock}
	publish := func() {
		t.Helper()
		pages := PagesOf(h.room.Settings, h.room.Events) // what TemporalRooms.Pages reads from describe
		src.mu.Lock()
		src.snaps["shop"], src.pages["shop"], src.events["shop"] = *h.room.Snapshot, pages.Room, pages.Events
		src.mu.Unlock()
		if w.Refresh(context.Background(), "shop") < 0 {
			t.Fatal("refresh failed")
		}
	}
	at := func(when time.Time) {
		h.mu.Lock()
		h.now = when
		h.mu.Unlock()
		h.room.Advance(when)
		publish()
	}
	page := func(want string) {
		t.Helper()
		if res := h.get(newVisitor(), "/"); !strings.Contains(res.body, want) {
			t.Errorf("at %s (%s): the page lacks %q: %.200s", h.clock().Format("15:04:05"), h.room.Snapshot.Status, want, res.body)
		}
	}
	event := func(name string, from time.Time, pre bool, html *string) {
		t.Helper()
		e := admit.Event{Name: name, EventStartTime: from.Add(10 * time.Minute), EventEndTime: from.Add(20 * time.Minute), CustomPageHTML: html}
		if pre {
			e.PrequeueStartTime = &from
		}
		if _, err := h.room.AddEvent(e, h.clock()); err != nil {
			t.Fatal(err)
		}
	}
	eventPage, empty := "<p>event</p>", ""
	base := t0.Add(time.Hour)
	event("launch", base, true, &eventPage)
	event("plain", base.Add(time.Hour), false, nil)
	event("blank", base.Add(2*time.Hour), false, &empty)
	publish()
	page("<p>room</p>")

	reads := src.reads
	at(base) // pre-queueing
	page("<p>event</p>")
	at(base.Add(10 * time.Minute)) // running
	page("<p>event</p>")
	at(base.Add(20 * time.Minute)) // over
	page("<p>room</p>")
	at(base.Add(time.Hour + 10*time.Minute)) // an event without a page
	page("<p>room</p>")
	at(base.Add(2*time.Hour + 10*time.Minute)) // an event with the default page
	page(defaultPageMarker)
	at(base.Add(2*time.Hour + 20*time.Minute))
	page("<p>room</p>")
	if src.reads != reads {
		t.Errorf("the pages were read %d times more; the events changed no settings", src.reads-reads)
	}
}

// A room whose workflow vanished without being deleted (terminated, so no
// longer listed, its query NotFound) is kept: the gate decides on its last
// snapshot as when the room cannot publish — sessions pass, and new
// visitors only within what the outage's rules leave (here none: without
// shared counters the snapshot's minute, all of the room, counts as
// sessions that may still run) — says so
// on /status and in a metric, and forgets it after 24 hours. (The gate
// used to drop it and pass its traffic to the origin.)
func TestWatcherKeepsAVanishedRoom(t *testing.T) {
	h := newHarness(t, admit.Settings{Name: "shop", Path: "/shop/", TotalActiveUsers: 10, NewUsersPerMinute: 10, SnapshotMaxAgeSeconds: 120})
	src := &fakeRooms{snaps: map[string]admit.Snapshot{}, pages: map[string]string{}}
	src.set(*h.room.Snapshot, "")
	w := &Watcher{Source: src, Registry: h.reg, Logger: quietLogger(), Now: h.clock}
	ctx := context.Background()
	if err := w.Discover(ctx); err != nil {
		t.Fatal(err)
	}
	a := newVisitor()
	mustOrigin(t, h.get(a, "/shop/x"), "admitted")
	metrics := prometheus.NewPedanticRegistry()
	metrics.MustRegister(h.g.Collector())
	if v := metricValue(t, metrics, "edgeflow_gate_room_vanished", "room", "shop"); v != 0 {
		t.Errorf("vanished %v before it vanished", v)
	}

	// Terminated: gone from the listing, its query NotFound.
	src.mu.Lock()
	delete(src.snaps, "shop")
	src.mu.Unlock()
	w.Refresh(ctx, "shop")
	for range 3 {
		if err := w.Discover(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if h.reg.Match("h", "/shop/x") == nil {
		t.Fatal("the vanished room no longer takes its traffic")
	}
	mustOrigin(t, h.get(a, "/shop/x"), "a session in a vanished room")
	mustOrigin(t, h.get(newVisitor(), "/shop/x"), "a new visitor on the last snapshot, still fresh")
	st := h.g.Status()
	if len(st.Rooms) != 1 || !st.Rooms[0].Vanished || !st.Rooms[0].VanishedAt.Equal(h.clock()) {
		t.Errorf("status %+v, want the room vanished since %s", st.Rooms, h.clock())
	}
	if v := metricValue(t, metrics, "edgeflow_gate_room_vanished", "room", "shop"); v != 1 {
		t.Errorf("vanished %v, want 1", v)
	}

	// Three minutes on, an outage: no overshoot.
	h.mu.Lock()
	h.now = h.now.Add(3 * time.Minute)
	h.mu.Unlock()
	mustOrigin(t, h.get(a, "/shop/x"), "a session, on the vanished room's stale snapshot")
	hits := h.hits.Load()
	mustQueue(t, h.get(newVisitor(), "/shop/x"), 200, "a new visitor, on the vanished room's stale snapshot")
	if h.hits.Load() != hits {
		t.Error("a queued visitor reached the origin")
	}

	// 24 hours on, it is forgotten.
	h.mu.Lock()
	h.now = h.now.Add(24 * time.Hour)
	h.mu.Unlock()
	if err := w.Discover(ctx); err != nil {
		t.Fatal(err)
	}
	if h.reg.Room("shop") != nil {
		t.Error("a room vanished for a day is still kept")
	}
}

// A room that comes back is no longer vanished; a deleted room's workflow
// ending is no vanishing: its tombstone said deleted, and it is forgotten.
func TestWatcherVanishedRoomComesBackDeletedOneGoes(t *testing.T) {
	now := t0.Add(5 * time.Second)
	reg := NewRegistry(admit.Gate{DataCenter: "ams", ID: "ams-1"})
	src := &fakeRooms{snaps: map[string]admit.Snapshot{}, pages: map[string]string{}}
	w := &Watcher{Source: src, Registry: reg, Logger: quietLogger(), Now: func() time.Time { return now }}
	ctx := context.Background()
	for _, name := range []string{"shop", "gone"} {
		room, err := admit.NewRoom(admit.Settings{Name: name, Path: "/" + name + "/", TotalActiveUsers: 10, NewUsersPerMinute: 10}, 60, t0)
		if err != nil {
			t.Fatal(err)
		}
		src.set(*room.Snapshot, "")
	}
	if err := w.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	shop, gone := src.snaps["shop"], src.snaps["gone"]
	gone.Status = admit.StatusDeleted
	src.set(gone, "")
	w.Refresh(ctx, "gone")
	src.mu.Lock()
	delete(src.snaps, "shop")
	delete(src.snaps, "gone")
	src.mu.Unlock()
	w.Refresh(ctx, "shop")
	w.Refresh(ctx, "gone")
	if r := reg.Room("shop"); r == nil || r.VanishedAt().IsZero() {
		t.Fatal("shop is not kept as vanished")
	}
	if reg.Room("gone") != nil {
		t.Error("a deleted room whose workflow ended is kept")
	}
	src.set(shop, "")
	w.Refresh(ctx, "shop")
	if r := reg.Room("shop"); r == nil || !r.VanishedAt().IsZero() {
		t.Error("the room came back but is still vanished")
	}
}

// cancelingRooms ends the watch while a snapshot is being read.
type cancelingRooms struct {
	*fakeRooms
	cancel context.CancelFunc
}

func (c cancelingRooms) Snapshot(ctx context.Context, room string) (admit.Snapshot, error) {
	c.cancel()
	return c.fakeRooms.Snapshot(ctx, room)
}

// A read that ends after its watch was stopped (the room vanished from
// the listing meanwhile) does not make the room present again.
func TestWatcherLateReadKeepsTheRoomVanished(t *testing.T) {
	now := t0.Add(5 * time.Second)
	reg := NewRegistry(admit.Gate{DataCenter: "ams", ID: "ams-1"})
	src := &fakeRooms{snaps: map[string]admit.Snapshot{}, pages: map[string]string{}}
	room, err := admit.NewRoom(admit.Settings{Name: "shop", TotalActiveUsers: 10, NewUsersPerMinute: 10}, 60, t0)
	if err != nil {
		t.Fatal(err)
	}
	src.set(*room.Snapshot, "")
	w := &Watcher{Source: src, Registry: reg, Logger: quietLogger(), Now: func() time.Time { return now }}
	w.Refresh(context.Background(), "shop")
	reg.Vanish("shop", now)
	ctx, cancel := context.WithCancel(context.Background())
	w.Source = cancelingRooms{src, cancel}
	if wait := w.Refresh(ctx, "shop"); wait >= 0 {
		t.Errorf("a read after the watch ended: next in %s", wait)
	}
	if r := reg.Room("shop"); r == nil || r.VanishedAt().IsZero() {
		t.Error("a late read brought the vanished room back")
	}
}
