package gate

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/edgeflow/edgeflow/internal/admit"
	"github.com/edgeflow/edgeflow/internal/devstack"
	"github.com/edgeflow/edgeflow/internal/testenv"
)

func redisCounter(t *testing.T, url string) RedisCounter {
	t.Helper()
	c, err := NewRedisClient(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return RedisCounter{Client: c}
}

// Concurrent takes from many connections never pass the limit, and the key
// expires with its minute.
func TestRedisCounterTakesBelowLimit(t *testing.T) {
	testenv.Require(t, env)
	rc := redisCounter(t, env.Redis.URL)
	ctx := context.Background()
	key := "test/" + t.Name() + "/" + strconv.FormatInt(time.Now().UnixNano(), 10)
	expire := time.Now().Add(90 * time.Second)
	var taken atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 60 {
				ok, err := rc.TakeBelow(ctx, key, 250, expire)
				if err != nil {
					t.Error(err)
					return
				}
				if ok {
					taken.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if taken.Load() != 250 {
		t.Fatalf("%d takes succeeded, want exactly the limit 250", taken.Load())
	}
	if n, err := rc.Load(ctx, key); err != nil || n != 250 {
		t.Fatalf("Load = %d, %v; want 250", n, err)
	}
	ttl, err := rc.Client.PTTL(ctx, key).Result()
	if err != nil || ttl <= 80*time.Second || ttl > 90*time.Second {
		t.Errorf("the key's expiry is %v away, want about 90s", ttl)
	}
	if n, err := rc.Load(ctx, key+"/none"); err != nil || n != 0 {
		t.Errorf("an absent key: %d, %v", n, err)
	}
	if ok, _ := rc.TakeBelow(ctx, key+"/zero", 0, expire); ok {
		t.Error("a zero limit gave a slot")
	}
}

func newVisitorsAt(t *testing.T, strategy admit.Strategy, snap *admit.Snapshot, now time.Time, g admit.Gate, n int) (admitted int, errs []error) {
	t.Helper()
	for range n {
		d, err := admit.Decide(context.Background(), admit.Input{Now: now, Snapshot: snap, Gate: g, Strategy: strategy})
		if err != nil {
			errs = append(errs, err)
		}
		if d.Outcome == admit.Admit {
			admitted++
		}
	}
	return admitted, errs
}

// Two gates of one data center share their Redis: uneven arrivals queue
// nobody before the limit, and concurrent arrivals never pass it.
func TestGatesShareRedisCounters(t *testing.T) {
	testenv.Require(t, env)
	s := admit.Settings{Name: "shared-" + strconv.FormatInt(time.Now().UnixNano(), 36), TotalActiveUsers: 1000, NewUsersPerMinute: 10}
	room, err := admit.NewRoom(s, 60, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	snap := room.Snapshot
	rc := redisCounter(t, env.Redis.URL)
	g1 := mustCounters(t, &rc, &rc, StrategyCounters)
	g2 := mustCounters(t, &rc, &rc, StrategyCounters)
	now := snap.Minute.Add(time.Second)
	a1, _ := newVisitorsAt(t, g1.Strategy, snap, now, admit.Gate{DataCenter: "ams", ID: "ams-1"}, 7)
	a2, _ := newVisitorsAt(t, g2.Strategy, snap, now, admit.Gate{DataCenter: "ams", ID: "ams-2"}, 3)
	if a1 != 7 || a2 != 3 {
		t.Fatalf("uneven arrivals 7 and 3 with 10 slots: admitted %d and %d, want all", a1, a2)
	}
	if a, _ := newVisitorsAt(t, g2.Strategy, snap, now, admit.Gate{DataCenter: "ams", ID: "ams-2"}, 1); a != 0 {
		t.Fatal("the 11th visitor was admitted")
	}

	// A spike on both gates at once, in a room of its own.
	s.Name += "-spike"
	room, _ = admit.NewRoom(s, 60, time.Now())
	snap = room.Snapshot
	now = snap.Minute.Add(time.Second)
	var total atomic.Int64
	var wg sync.WaitGroup
	for i, c := range []Counters{g1, g2, g1, g2} {
		wg.Go(func() {
			a, errs := newVisitorsAt(t, c.Strategy, snap, now, admit.Gate{DataCenter: "ams", ID: "ams-" + strconv.Itoa(i%2+1)}, 50)
			if len(errs) > 0 {
				t.Error(errs[0])
			}
			total.Add(int64(a))
		})
	}
	wg.Wait()
	if total.Load() != 10 {
		t.Fatalf("200 visitors at once on two gates: %d admitted, want exactly the 10 slots", total.Load())
	}
}

// While Redis is down the gate admits nobody new for the rest of the
// minute it failed in, then uses the even split; once Redis answers again
// it returns to the shared counters at the start of the minute after next.
func TestFailoverToEvenSplitAndBack(t *testing.T) {
	testenv.Require(t, env)
	ctx := context.Background()
	dir := t.TempDir()
	srv, err := devstack.StartRedis(ctx, devstack.RedisOptions{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Stop(5 * time.Second) })
	rc := redisCounter(t, srv.URL)
	c := mustCounters(t, &rc, &rc, StrategyCounters)
	f := c.Failover
	var clock atomic.Pointer[time.Time]
	f.Now = func() time.Time { return *clock.Load() }

	s := admit.Settings{Name: "failover", TotalActiveUsers: 1000, NewUsersPerMinute: 8}
	m0 := time.Now().UTC().Truncate(time.Minute).Add(time.Hour)
	minute := func(i int) (*admit.Snapshot, time.Time) {
		r, err := admit.NewRoom(s, 60, m0.Add(time.Duration(i)*time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		return r.Snapshot, r.Snapshot.Minute.Add(10 * time.Second)
	}
	g := admit.Gate{DataCenter: "ams", ID: "ams-1"}
	anywhereCount := func(i int) int64 {
		n, err := rc.Load(ctx, admit.CounterKey(s.Name, m0.Add(time.Duration(i)*time.Minute), admit.PoolNew, admit.Anywhere))
		if err != nil {
			t.Fatal(err)
		}
		return n
	}

	snap, now := minute(0)
	if a, _ := newVisitorsAt(t, c.Strategy, snap, now, g, 3); a != 3 || f.State() != StateShared {
		t.Fatalf("minute 0, Redis up: %d admitted (%s)", a, f.State())
	}
	if err := srv.Stop(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	a, errs := newVisitorsAt(t, c.Strategy, snap, now.Add(5*time.Second), g, 4)
	if a != 0 || len(errs) != 4 || !errors.Is(errs[0], ErrCountersDown) || f.State() != StateDown {
		t.Fatalf("minute 0, Redis down: %d admitted, errors %v, state %s; want none admitted (Redis may have given the whole minute away)", a, errs, f.State())
	}

	snap, now = minute(1)
	if a, errs := newVisitorsAt(t, c.Strategy, snap, now, g, 9); a != 8 || len(errs) != 0 {
		t.Fatalf("minute 1, Redis down: %d admitted (%v); want the even split's 8 for this, the only gate", a, errs)
	}

	// Redis comes back during minute 1.
	srv, err = devstack.StartRedis(ctx, devstack.RedisOptions{Dir: dir, Port: portOf(t, srv.Addr)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Stop(5 * time.Second) })
	recovery := now // the probe's clock stays in minute 1
	clock.Store(&recovery)
	probeCtx, stopProbe := context.WithCancel(ctx)
	defer stopProbe()
	go f.Run(probeCtx, 50*time.Millisecond)
	deadline := time.Now().Add(10 * time.Second)
	for f.State() != StateRecovering {
		if time.Now().After(deadline) {
			t.Fatalf("the probe did not notice Redis back: %s", f.State())
		}
		time.Sleep(20 * time.Millisecond)
	}

	snap, now = minute(2)
	// The even split still, its takes counted on Redis too for the gates
	// that never lost it (Failover.Mirror).
	if a, _ := newVisitorsAt(t, c.Strategy, snap, now, g, 2); a != 2 || anywhereCount(2) != 2 || f.State() != StateRecovering {
		t.Fatalf("minute 2, recovering: %d admitted, Redis counted %d, state %s; want the even split still, counted on Redis", a, anywhereCount(2), f.State())
	}
	snap, now = minute(3)
	if a, _ := newVisitorsAt(t, c.Strategy, snap, now, g, 2); a != 2 || anywhereCount(3) != 2 || f.State() != StateShared {
		t.Fatalf("minute 3: %d admitted, Redis counted %d, state %s; want the shared counters again", a, anywhereCount(3), f.State())
	}
}

// A gate whose Redis never answered starts on the even split after the
// minute it first failed in, and never admits past the limit meanwhile.
func TestRedisUnreachableFromTheStart(t *testing.T) {
	port, err := devstack.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	rc := redisCounter(t, "redis://127.0.0.1:"+strconv.Itoa(port)+"/0")
	c := mustCounters(t, &rc, &rc, StrategyCounters)
	r, _ := admit.NewRoom(admit.Settings{Name: "nowhere", TotalActiveUsers: 100, NewUsersPerMinute: 5}, 60, t0)
	g := admit.Gate{DataCenter: "ams", ID: "ams-1"}
	if a, _ := newVisitorsAt(t, c.Strategy, r.Snapshot, t0.Add(time.Second), g, 3); a != 0 {
		t.Fatalf("the first minute: %d admitted, want 0", a)
	}
	r2, _ := admit.NewRoom(admit.Settings{Name: "nowhere", TotalActiveUsers: 100, NewUsersPerMinute: 5}, 60, t0.Add(time.Minute))
	if a, _ := newVisitorsAt(t, c.Strategy, r2.Snapshot, t0.Add(61*time.Second), g, 7); a != 5 {
		t.Fatalf("the next minute: %d admitted, want the even split's 5", a)
	}
}

func portOf(t *testing.T, addr string) int {
	t.Helper()
	for i := len(addr) - 1; i >= 0; i-- {
		if addr[i] == ':' {
			p, err := strconv.Atoi(addr[i+1:])
			if err != nil {
				t.Fatal(err)
			}
			return p
		}
	}
	t.Fatalf("no port in %s", addr)
	return 0
}
