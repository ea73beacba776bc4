package gate

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"go.temporal.io/api/workflowservice/v1"

	"github.com/edgeflow/edgeflow/internal/admit"
	"github.com/edgeflow/edgeflow/internal/admit/roomclient"
	"github.com/edgeflow/edgeflow/workflows/admit/contract"
)

// RoomSource is where a gate learns about rooms: which exist, their
// snapshots and their custom pages.
type RoomSource interface {
	// List names the rooms that run (deleted ones may be among them).
	List(ctx context.Context) ([]string, error)
	Snapshot(ctx context.Context, room string) (admit.Snapshot, error)
	// Pages returns the room's custom pages, its own and its events'.
	Pages(ctx context.Context, room string) (Pages, error)
}

// ErrNoRoom is what a RoomSource answers for a room that does not exist.
var ErrNoRoom = roomclient.ErrNotFound

// TemporalRooms finds rooms through Temporal: the running Room workflows by
// visibility, their snapshots and settings by query.
type TemporalRooms struct{ Client roomclient.Client }

// roomsQuery lists every running room workflow (a deleted room keeps
// running as a tombstone; its snapshot says so).
var roomsQuery = fmt.Sprintf("WorkflowType = '%s' AND ExecutionStatus = 'Running'", contract.WorkflowTypeRoom)

// List implements RoomSource.
func (t TemporalRooms) List(ctx context.Context) ([]string, error) {
	var names []string
	var token []byte
	for {
		resp, err := t.Client.C.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
			Query: roomsQuery, PageSize: 1000, NextPageToken: token,
		})
		if err != nil {
			return nil, err
		}
		for _, e := range resp.Executions {
			if name, ok := strings.CutPrefix(e.GetExecution().GetWorkflowId(), contract.RoomWorkflowID("")); ok && admit.ValidName(name) {
				names = append(names, name)
			}
		}
		if token = resp.NextPageToken; len(token) == 0 {
			return names, nil
		}
	}
}

// Snapshot implements RoomSource.
func (t TemporalRooms) Snapshot(ctx context.Context, room string) (admit.Snapshot, error) {
	return t.Client.Snapshot(ctx, room)
}

// Pages implements RoomSource. An event's page takes effect without a
// settings change (when the event begins), so the gate holds every event's
// page from when the event is added (a settings change) and picks by the
// event its snapshot names.
func (t TemporalRooms) Pages(ctx context.Context, room string) (Pages, error) {
	d, err := t.Client.Describe(ctx, room)
	if err != nil {
		return Pages{}, err
	}
	return PagesOf(d.Settings, d.Events), nil
}

// Watcher keeps a gate's registry current: it discovers rooms every
// DiscoverEvery (a room created anywhere takes effect within seconds, no
// restart) and reads each room's snapshot every SnapshotEvery (more often
// for rooms with a short minute, and while a new minute's snapshot is due).
// When the source cannot be reached the gate keeps deciding on the last
// snapshot, by the engine's rules for a room that cannot publish
// (admit.InOutage), for as long as its counters answer. A room
// whose workflow is gone without the room being deleted is kept the same
// way, for VanishedFor (see Registry.Vanish).
type Watcher struct {
	Source        RoomSource
	Registry      *Registry
	SnapshotEvery time.Duration // default 2s
	DiscoverEvery time.Duration // default 3s
	Timeout       time.Duration // per call, default 5s
	VanishedFor   time.Duration // how long a vanished room is kept, default 24h
	// Shared is where the watcher marks each snapshot minute it read (the
	// shared counters; nil: nowhere), so that a gate still on an older
	// snapshot knows the room publishes and that it is behind, not in an
	// outage (admit.InOutage).
	Shared admit.Counter
	Logger *slog.Logger
	Now    func() time.Time

	mu      sync.Mutex
	watched map[string]*watchedRoom
	marked  map[string]time.Time // by room: the newest snapshot minute marked read
	// unreadEnded are the ended rooms whose last state could not be read
	// (logged once).
	unreadEnded map[string]bool
}

type watchedRoom struct {
	cancel context.CancelFunc
	misses int // listings in a row that did not name it
}

func (w *Watcher) defaults() {
	if w.SnapshotEvery <= 0 {
		w.SnapshotEvery = 2 * time.Second
	}
	if w.DiscoverEvery <= 0 {
		w.DiscoverEvery = 3 * time.Second
	}
	if w.Timeout <= 0 {
		w.Timeout = 5 * time.Second
	}
	if w.VanishedFor <= 0 {
		w.VanishedFor = DefaultVanishedFor
	}
	if w.Logger == nil {
		w.Logger = slog.Default()
	}
	if w.Now == nil {
		w.Now = time.Now
	}
}

// DefaultVanishedFor is how long a gate keeps a room that vanished.
const DefaultVanishedFor = 24 * time.Hour

// Discover lists the rooms once, starting to watch new ones and marking
// vanished those gone for two listings in a row (deleted ones are
// forgotten), and forgets the rooms vanished for longer than VanishedFor.
func (w *Watcher) Discover(ctx context.Context) error {
	w.defaults()
	lctx, cancel := context.WithTimeout(ctx, w.Timeout)
	names, err := w.Source.List(lctx)
	cancel()
	if err != nil {
		return err
	}
	listed := map[string]bool{}
	for _, n := range names {
		listed[n] = true
	}
	w.discoverListed(ctx, listed)
	// Then the rooms whose workflow ended while this gate did not watch
	// them (it started later).
	ended, err := w.ended(ctx, listed)
	if err != nil {
		return err
	}
	for _, e := range ended {
		w.holdEnded(ctx, e)
	}
	return nil
}

// discoverListed starts watching the listed rooms that are new, marks
// vanished the watched ones missing twice, and forgets the rooms vanished
// for longer than VanishedFor.
func (w *Watcher) discoverListed(ctx context.Context, listed map[string]bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.watched == nil {
		w.watched = map[string]*watchedRoom{}
	}
	for n := range listed {
		if wr := w.watched[n]; wr != nil {
			wr.misses = 0
			continue
		}
		rctx, rcancel := context.WithCancel(ctx)
		w.watched[n] = &watchedRoom{cancel: rcancel}
		go w.watch(rctx, n)
	}
	for n, wr := range w.watched {
		if listed[n] {
			continue
		}
		// Visibility is eventually consistent: one listing without a room
		// is not yet proof it is gone.
		if wr.misses++; wr.misses >= 2 {
			wr.cancel()
			delete(w.watched, n)
			w.vanish(n)
		}
	}
	for _, n := range w.Registry.ForgetVanished(w.Now().Add(-w.VanishedFor)) {
		w.Logger.Info("forgetting a room that vanished", "room", n, "after", w.VanishedFor)
	}
}

// vanish marks a room gone without a delete (a terminated or failed
// workflow): the gate keeps deciding on its last snapshot.
func (w *Watcher) vanish(name string) {
	if w.Registry.Vanish(name, w.Now()) {
		w.Logger.Warn("room vanished without being deleted; deciding on its last snapshot by the outage's rules",
			"room", name, "for", w.VanishedFor)
	}
}

// Sync lists the rooms and reads every snapshot once, before a gate takes
// traffic: a gate that knew no rooms would pass everyone to the origin. The
// rooms whose snapshot could not be read are named in an
// *UnreadRoomsError.
func (w *Watcher) Sync(ctx context.Context) error {
	w.defaults()
	lctx, cancel := context.WithTimeout(ctx, w.Timeout)
	names, err := w.Source.List(lctx)
	cancel()
	if err != nil {
		return err
	}
	var unread []string
	listed := map[string]bool{}
	for _, n := range names {
		listed[n] = true
		if w.Refresh(ctx, n) < 0 {
			unread = append(unread, n)
		}
	}
	ended, err := w.ended(ctx, listed)
	if err != nil {
		return err
	}
	for _, e := range ended {
		if !w.holdEnded(ctx, e) {
			unread = append(unread, e.Name)
		}
	}
	if len(unread) > 0 {
		return &UnreadRoomsError{Rooms: unread}
	}
	return nil
}

// UnreadRoomsError names the rooms whose snapshots could not be read.
type UnreadRoomsError struct{ Rooms []string }

func (e *UnreadRoomsError) Error() string {
	return "the snapshots of these rooms cannot be read: " + strings.Join(e.Rooms, ", ")
}

// Run discovers and watches rooms until ctx ends.
func (w *Watcher) Run(ctx context.Context) {
	w.defaults()
	failing := false
	for {
		err := w.Discover(ctx)
		switch {
		case err != nil && !failing && ctx.Err() == nil:
			w.Logger.Warn("cannot list rooms; deciding on the snapshots already read", "err", err)
			failing = true
		case err == nil && failing:
			w.Logger.Info("listing rooms again")
			failing = false
		}
		select {
		case <-ctx.Done():
			w.mu.Lock()
			for _, wr := range w.watched {
				wr.cancel()
			}
			w.mu.Unlock()
			return
		case <-time.After(w.DiscoverEvery):
		}
	}
}

// watch reads one room's snapshot until ctx ends.
func (w *Watcher) watch(ctx context.Context, name string) {
	for {
		wait := w.Refresh(ctx, name)
		if wait < 0 {
			wait = w.SnapshotEvery
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

// Refresh reads a room's snapshot (and its pages when its settings or
// events changed: both change the settings version) into the registry,
// and says when to read it again (negative: it failed).
func (w *Watcher) Refresh(ctx context.Context, name string) time.Duration {
	w.defaults()
	qctx, cancel := context.WithTimeout(ctx, w.Timeout)
	defer cancel()
	snap, err := w.Source.Snapshot(qctx, name)
	if errors.Is(err, ErrNoRoom) {
		w.vanish(name)
		return w.DiscoverEvery
	}
	if err != nil {
		if ctx.Err() == nil {
			w.Logger.Debug("room snapshot", "room", name, "err", err)
		}
		return -1
	}
	var pages *Pages
	if snap.SettingsVersion != w.Registry.settingsVersion(name) && snap.Status != admit.StatusDeleted {
		p, err := w.Source.Pages(qctx, name)
		if err != nil {
			return -1 // read both again, so the pages are never older than the settings
		}
		pages = &p
	}
	if ctx.Err() != nil {
		// The watch ended meanwhile (the room vanished from the listing):
		// a late read must not bring it back as present.
		return -1
	}
	if err := w.Registry.UpdatePages(&snap, pages, w.Now()); err != nil {
		w.Logger.Warn("custom page does not parse; using the default page", "room", name, "err", err)
	}
	w.markRead(qctx, &snap)
	return w.nextRead(&snap)
}

// markRead marks a snapshot's minute read in the shared counters once (a
// failed write is tried again at the next read).
func (w *Watcher) markRead(ctx context.Context, snap *admit.Snapshot) {
	if w.Shared == nil || snap.Status == admit.StatusDeleted {
		return
	}
	w.mu.Lock()
	done := !snap.Minute.After(w.marked[snap.Room])
	w.mu.Unlock()
	if done {
		return
	}
	if err := admit.MarkSnapshotRead(ctx, w.Shared, snap); err != nil {
		w.Logger.Debug("mark snapshot read", "room", snap.Room, "err", err)
		return
	}
	w.mu.Lock()
	if w.marked == nil {
		w.marked = map[string]time.Time{}
	}
	if snap.Minute.After(w.marked[snap.Room]) {
		w.marked[snap.Room] = snap.Minute
	}
	w.mu.Unlock()
}

// nextRead is how long to wait before reading a snapshot again: at most
// SnapshotEvery and a twelfth of the room's minute; four times as often
// once the room's next minute has begun and its snapshot is due; for a
// deleted room, as often as rooms are listed, since `room create` brings a
// deleted room back in the same workflow run, which the listing cannot
// tell apart.
func (w *Watcher) nextRead(snap *admit.Snapshot) time.Duration {
	if snap.Status == admit.StatusDeleted {
		return w.DiscoverEvery
	}
	every := min(w.SnapshotEvery, snap.MinuteLength()/12)
	if !w.Now().Before(snap.Minute.Add(snap.MinuteLength())) {
		every /= 4
	}
	return max(every, 50*time.Millisecond)
}
