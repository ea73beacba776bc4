package gate

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/edgeflow/edgeflow/internal/admit"
)

// stoppableStore is a data center's Redis in memory: stopped, every call
// fails as on a Redis that does not answer; started again, it is empty
// (make cluster's Redis persists nothing).
type stoppableStore struct {
	mu      sync.Mutex
	stopped bool
	c       *admit.MemoryCounter
}

var errStopped = errors.New("dial tcp 127.0.0.1:6380: connect: connection refused")

func newStoppableStore() *stoppableStore { return &stoppableStore{c: admit.NewMemoryCounter(nil)} }

func (s *stoppableStore) store() (*admit.MemoryCounter, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return nil, errStopped
	}
	return s.c, nil
}

func (s *stoppableStore) TakeBelow(ctx context.Context, key string, limit int64, expireAt time.Time) (bool, error) {
	c, err := s.store()
	if err != nil {
		return false, err
	}
	return c.TakeBelow(ctx, key, limit, expireAt)
}

func (s *stoppableStore) Load(ctx context.Context, key string) (int64, error) {
	c, err := s.store()
	if err != nil {
		return 0, err
	}
	return c.Load(ctx, key)
}

func (s *stoppableStore) ping(context.Context) error {
	_, err := s.store()
	return err
}

func (s *stoppableStore) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopped = true
}

func (s *stoppableStore) startEmpty() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopped, s.c = false, admit.NewMemoryCounter(nil)
}

// switchWorld is make cluster-test's admit fault in miniature: a room
// bound by total_active_users (24 active, 8 new a minute, sessions of 4
// minutes), dc1's two gates on dc1's Redis with Anywhere on a Redis of its
// own, as NewCounters builds them.
type switchWorld struct {
	name  string
	dc1   *stoppableStore
	gates []admit.Gate
	fails []*Failover
}

func newSwitchWorld(t *testing.T) *switchWorld {
	w := &switchWorld{name: "switch", dc1: newStoppableStore()}
	anywhere := admit.NewMemoryCounter(nil)
	for _, id := range []string{"dc1-1", "dc1-2"} {
		w.gates = append(w.gates, admit.Gate{DataCenter: "dc1", ID: id})
		w.fails = append(w.fails, &Failover{
			Shared: admit.SharedCounters{Store: admit.ScopeStores{DataCenter: w.dc1, Anywhere: anywhere}},
			Even:   admit.EvenSplit{Store: admit.NewMemoryCounter(nil), DataCenterOnly: true},
			Probe:  w.dc1.ping,
			Logger: quietLogger(),
		})
	}
	return w
}

// snapshot of minute: dc1limit of the new visitors' pool in dc1's scope,
// the rest of the slots in dc2's, no headroom (total_active_users binds).
func (w *switchWorld) snapshot(minute time.Time, dc1Limit, slots int) *admit.Snapshot {
	s := admit.Settings{Name: w.name, TotalActiveUsers: 24, NewUsersPerMinute: 8, SessionDuration: 4, DisableSessionRenewal: true}.WithDefaults()
	return &admit.Snapshot{Room: w.name, Minute: minute, MinuteSeconds: 60, PublishedAt: minute, Settings: s,
		ActiveUsers: 24 - slots, SlotsAvailable: slots, NewUserSlots: slots, GatesActive: 4,
		TrafficHistory: []admit.TrafficShare{
			{DataCenter: "dc1", Gates: []string{"dc1-1", "dc1-2"}, DataCenterWorkersActive: 2},
			{DataCenter: "dc2", Gates: []string{"dc2-1", "dc2-2"}, DataCenterWorkersActive: 2},
		},
		Pools: []admit.Pool{{Slots: slots, Scopes: []admit.Scope{{Name: "dc1", Limit: dc1Limit}, {Name: "dc2", Limit: slots - dc1Limit}}}}}
}

// admit sends n new visitors to each of dc1's gates at now.
func (w *switchWorld) admit(t *testing.T, snap *admit.Snapshot, now time.Time, n int) int {
	t.Helper()
	total := 0
	for i, g := range w.gates {
		a, _ := newVisitorsAt(t, w.fails[i], snap, now, g, n)
		total += a
	}
	return total
}

// staleFloor is what the room allots dc1 in the minute after snap's for
// gates still deciding on snap, after dc1 took taken of it in snap's
// minute (Room.carry): the most those gates may admit then.
func staleFloor(snap *admit.Snapshot, taken int) int {
	return admit.StaleRemainder(snap.Pools[0].Scopes[0], taken)
}

// A gate that changes counters between two minutes (to the even split when
// its Redis fails, back to Redis once it answers again) finds on the new
// counters nothing of what it took in the minute before. In the minute
// after a snapshot's a gate may spend a quarter of what that snapshot left
// (StaleRemainder), which it reads from the counters of the snapshot's
// minute: on the other counters it read nothing taken, and admitted beyond
// what the room allots for it. make cluster-test saw 25 admitted in a
// minute and the 4 before, over total_active_users 24, while dc1's Redis
// came and went. In the first minute on new counters the gate spends
// nothing on the minute before's snapshot; the new one comes within
// seconds.
func TestNoStaleSpendingAcrossACounterSwitch(t *testing.T) {
	m0 := time.Now().UTC().Truncate(time.Minute).Add(time.Hour)
	minute := func(k int) time.Time { return m0.Add(time.Duration(k) * time.Minute) }

	t.Run("the minute after Redis fails", func(t *testing.T) {
		w := newSwitchWorld(t)
		// m0: dc1's 8 slots spent on its Redis, which then stops.
		snap0 := w.snapshot(minute(0), 8, 8)
		if a := w.admit(t, snap0, minute(0).Add(10*time.Second), 4); a != 8 {
			t.Fatalf("m0 on Redis: %d admitted, want 8", a)
		}
		w.dc1.stop()
		w.admit(t, snap0, minute(0).Add(20*time.Second), 1)
		for i, f := range w.fails {
			if f.State() != StateDown {
				t.Fatalf("%s: %s after its Redis stopped, want %s", w.gates[i].ID, f.State(), StateDown)
			}
		}
		// m1, on the even split, before m1's snapshot arrives.
		floor := staleFloor(snap0, 8)
		if a := w.admit(t, snap0, minute(1).Add(time.Second), 4); a > floor {
			t.Errorf("the first minute on the even split, on the snapshot of the minute before: %d admitted, the room allots %d for it", a, floor)
		}
		// The next minute on the even split spends a stale snapshot as
		// usual: the even split counted its minute.
		snap1 := w.snapshot(minute(1), 8, 8)
		if a := w.admit(t, snap1, minute(1).Add(10*time.Second), 2); a != 4 {
			t.Fatalf("m1 on the even split: %d admitted, want 4", a)
		}
		if want := staleFloor(snap1, 4); want == 0 || w.admit(t, snap1, minute(2).Add(time.Second), 4) != want {
			t.Errorf("m2 on the even split, on m1's snapshot: want %d admitted", want)
		}
	})

	t.Run("the minute Redis is taken up again", func(t *testing.T) {
		w := newSwitchWorld(t)
		w.dc1.stop()
		snap0 := w.snapshot(minute(0), 4, 8)
		w.admit(t, snap0, minute(0).Add(time.Second), 1)
		// m1: Redis answers again (empty); back on it from m3.
		snap1 := w.snapshot(minute(1), 4, 8)
		if a := w.admit(t, snap1, minute(1).Add(5*time.Second), 4); a != 4 {
			t.Fatalf("m1 on the even split: %d admitted, want 4 (2 a gate)", a)
		}
		w.dc1.startEmpty()
		for i, f := range w.fails {
			f.Now = func() time.Time { return minute(1).Add(30 * time.Second) }
			f.probe(context.Background())
			if f.State() != StateRecovering {
				t.Fatalf("%s: %s once its Redis answers, want %s", w.gates[i].ID, f.State(), StateRecovering)
			}
		}
		// m2: the even split spends all of dc1's 4.
		snap2 := w.snapshot(minute(2), 4, 8)
		if a := w.admit(t, snap2, minute(2).Add(5*time.Second), 4); a != 4 {
			t.Fatalf("m2 on the even split: %d admitted, want 4", a)
		}
		// m3, back on Redis, before m3's snapshot arrives.
		floor := staleFloor(snap2, 4)
		if a := w.admit(t, snap2, minute(3).Add(time.Second), 4); a > floor {
			t.Errorf("the first minute back on Redis, on the snapshot of the minute before: %d admitted, the room allots %d for it", a, floor)
		}
		for i, f := range w.fails {
			if f.State() != StateShared {
				t.Fatalf("%s: %s in m3, want %s", w.gates[i].ID, f.State(), StateShared)
			}
		}
		// The next minute on Redis spends a stale snapshot as usual.
		snap3 := w.snapshot(minute(3), 4, 8)
		if a := w.admit(t, snap3, minute(3).Add(10*time.Second), 1); a != 2 {
			t.Fatalf("m3 on Redis: %d admitted, want 2", a)
		}
		if want := staleFloor(snap3, 2); want == 0 || w.admit(t, snap3, minute(4).Add(time.Second), 4) != want {
			t.Errorf("m4 on Redis, on m3's snapshot: want %d admitted", want)
		}
	})
}

// A Sentinel failover lasts seconds: a gate that took a slot in them
// falls back, while one that did not never sees the failure and stays on
// the shared counters. Once the store answers, the first gate spends the
// even split until the minute after next, on counters of its own; the
// other, on the shared ones, found none of those takes there and spent its
// scope again (within the minute) and, in the minute after, a quarter of
// what the shared counters said the even minute left (the stale
// remainder), beyond what the room allots for it. TestGatesThroughASentinelFailover
// saw 12 admitted in a minute of 10. A gate on the even split while the
// store answers counts its takes on the shared counters too.
func TestAGateThatMissedTheFailoverSeesTheEvenSplitsTakes(t *testing.T) {
	m0 := time.Now().UTC().Truncate(time.Minute).Add(time.Hour)
	minute := func(k int) time.Time { return m0.Add(time.Duration(k) * time.Minute) }
	w := newSwitchWorld(t)
	for _, f := range w.fails {
		f.Mirror = admit.ScopeStores{DataCenter: w.dc1, Anywhere: admit.NewMemoryCounter(nil)}
	}
	missed, fell := 0, 1 // dc1-1 took nothing during the failover; dc1-2 did
	snap0 := w.snapshot(minute(0), 8, 8)
	w.dc1.stop()
	if a, _ := newVisitorsAt(t, w.fails[fell], snap0, minute(0).Add(10*time.Second), w.gates[fell], 1); a != 0 {
		t.Fatalf("admitted on a store that failed: %d", a)
	}
	w.dc1.startEmpty() // a promoted replica
	w.fails[fell].Now = func() time.Time { return minute(0).Add(12 * time.Second) }
	w.fails[fell].probe(context.Background())
	if st := w.fails[fell].State(); st != StateRecovering {
		t.Fatalf("%s: %s, want %s", w.gates[fell].ID, st, StateRecovering)
	}
	if st := w.fails[missed].State(); st != StateShared {
		t.Fatalf("%s: %s, want %s", w.gates[missed].ID, st, StateShared)
	}
	// m1: the gate that fell back spends its even half first, then the
	// other asks for the whole scope on the shared counters.
	snap1 := w.snapshot(minute(1), 8, 8)
	even, _ := newVisitorsAt(t, w.fails[fell], snap1, minute(1).Add(5*time.Second), w.gates[fell], 8)
	shared, _ := newVisitorsAt(t, w.fails[missed], snap1, minute(1).Add(10*time.Second), w.gates[missed], 8)
	if even != 4 || even+shared > 8 {
		t.Errorf("m1: %d admitted on the even split and %d on the shared counters, of dc1's 8", even, shared)
	}
	// m2, before m2's snapshot: the gate on the shared counters spends
	// what the room allots for the stale snapshot, no more.
	floor := staleFloor(snap1, even+shared)
	if a, _ := newVisitorsAt(t, w.fails[missed], snap1, minute(2).Add(time.Second), w.gates[missed], 8); a > floor {
		t.Errorf("m2 on m1's snapshot: %d admitted, the room allots %d for it (m1 took %d)", a, floor, even+shared)
	}
}
