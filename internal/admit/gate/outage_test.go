package gate

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/edgeflow/edgeflow/internal/admit"
	"github.com/edgeflow/edgeflow/internal/testenv"
)

// A room whose workflow vanished without being deleted is decided as any
// room that cannot publish: on the shared counters (a real Redis) the gate
// keeps admitting new visitors minute after minute, never past
// new_users_per_minute or total_active_users, while admitted sessions pass.
// Before, from the second minute after its last snapshot's it admitted
// nobody new.
func TestVanishedRoomKeepsAdmittingWithinLimits(t *testing.T) {
	testenv.Require(t, env)
	rc := redisCounter(t, env.Redis.URL)
	counters := mustCounters(t, &rc, &rc, StrategyCounters)
	s := admit.Settings{Name: "vanished-" + strconv.FormatInt(time.Now().UnixNano(), 36), Path: "/shop/",
		TotalActiveUsers: 8, NewUsersPerMinute: 3, SessionDuration: 2, DisableSessionRenewal: true,
		RefreshIntervalSeconds: 10, SnapshotMaxAgeSeconds: 3600}
	h := newHarness(t, s, func(c *Config) { c.Counters = counters })
	// The gate's sessions go to the ledger in the background, as gatehost
	// runs them; the test's clock waits for each to land (it moves a
	// second a step, far faster than any recorder lags in real time).
	recorded, stopRecorder := context.WithCancel(context.Background())
	recorderDone := make(chan struct{})
	go func() { counters.Sessions.Run(recorded); close(recorderDone) }()
	t.Cleanup(func() { stopRecorder(); <-recorderDone })
	// The counters' keys expire with their minutes on Redis's clock: the
	// room runs a day ahead of it, so none expires during the test.
	start := time.Now().UTC().Add(24 * time.Hour).Truncate(time.Minute)
	var err error
	if h.room, err = admit.NewRoom(s, 60, start); err != nil {
		t.Fatal(err)
	}
	h.mu.Lock()
	h.now = start.Add(5 * time.Second)
	h.mu.Unlock()
	src := &fakeRooms{snaps: map[string]admit.Snapshot{}, pages: map[string]string{}}
	src.set(*h.room.Snapshot, "")
	w := &Watcher{Source: src, Registry: h.reg, Logger: quietLogger(), Now: h.clock, Shared: counters.Shared}
	ctx := context.Background()
	if err := w.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if n, err := rc.Load(ctx, admit.SnapshotReadKey(s.Name, start)); err != nil || n != 1 {
		t.Fatalf("the snapshot's minute marked read: %d, %v; want 1", n, err)
	}

	// Terminated: gone from the listing, its query NotFound.
	src.mu.Lock()
	delete(src.snaps, s.Name)
	src.mu.Unlock()
	w.Refresh(ctx, s.Name)
	for range 3 {
		if err := w.Discover(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if h.reg.Room(s.Name).VanishedAt().IsZero() {
		t.Fatal("the room is not marked vanished")
	}

	// Six new visitors a minute, twice what the room admits; the queued
	// come back when told to.
	type arrival struct {
		v    *visitor
		next time.Time
	}
	var (
		queue      []*arrival
		admittedAt []time.Time
		perMinute  = map[time.Time]int{}
		sessions   []*visitor
	)
	length := time.Minute
	for sec := 0; sec < 14*60; sec++ {
		now := start.Add(5*time.Second + time.Duration(sec)*time.Second)
		h.mu.Lock()
		h.now = now
		h.mu.Unlock()
		if sec%10 == 0 {
			queue = append(queue, &arrival{v: newVisitor(), next: now})
		}
		kept := queue[:0]
		for _, a := range queue {
			if a.next.After(now) {
				kept = append(kept, a)
				continue
			}
			res := h.get(a.v, "/shop/x")
			waitRecorded(t, counters.Sessions)
			if res.fromOrigin() {
				admittedAt = append(admittedAt, now)
				perMinute[admit.MinuteOf(now, length)]++
				sessions = append(sessions, a.v)
				continue
			}
			a.next = now.Add(time.Second)
			if ra, err := strconv.Atoi(res.header.Get("Refresh")); err == nil && ra > 0 {
				a.next = now.Add(time.Duration(ra) * time.Second)
			}
			kept = append(kept, a)
		}
		queue = kept
		alive := 0
		for _, at := range admittedAt {
			if now.Before(at.Add(time.Duration(s.SessionDuration) * length)) {
				alive++
			}
		}
		if alive > s.TotalActiveUsers {
			t.Fatalf("%s: %d sessions alive, total_active_users %d)", now.Sub(start), alive, s.TotalActiveUsers)
		}
	}
	inOutage := 0
	for m := start; m.Before(start.Add(14 * length)); m = m.Add(length) {
		n := perMinute[m]
		if n > s.NewUsersPerMinute {
			t.Errorf("minute %d: %d admitted, new_users_per_minute %d", m.Sub(start)/length, n, s.NewUsersPerMinute)
		}
		if !m.Before(start.Add(3 * length)) {
			inOutage += n
			if n == 0 {
				t.Errorf("minute %d of the vanished room's outage admitted nobody", m.Sub(start)/length)
			}
		}
	}
	// Allowed in the 11 outage minutes: 3 a minute (sessions of two
	// minutes at 3 a minute leave total_active_users room to spare).
	allowed := 11 * s.NewUsersPerMinute
	t.Logf("admitted in the outage: %d of %d allowed", inOutage, allowed)
	if inOutage*2 < allowed {
		t.Errorf("admitted %d in the outage, less than half of %d allowed", inOutage, allowed)
	}
	if len(sessions) == 0 {
		t.Fatal("nobody admitted")
	}
	mustOrigin(t, h.get(sessions[len(sessions)-1], "/shop/x"), "the last session admitted")
}

// waitRecorded waits until the recorder has applied every session move
// recorded so far.
func waitRecorded(t *testing.T, r *SessionRecorder) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for r.Pending() > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d session moves still not in the ledger after 30 s", r.Pending())
		}
		time.Sleep(time.Millisecond)
	}
}
