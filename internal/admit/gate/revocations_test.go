package gate

import (
	"context"
	"io"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/edgeflow/edgeflow/internal/admit"
	"github.com/edgeflow/edgeflow/internal/devstack"
	"github.com/edgeflow/edgeflow/internal/testenv"
)

// Revocations hold until the session would have ended, are forgotten then,
// and a room holds at most Cap of them: past it a revocation is dropped
// and counted, and room is made again as they expire.
func TestRevocationsExpireAndAreBounded(t *testing.T) {
	r := &Revocations{Cap: 3}
	now := t0
	if r.Revoked("shop", "a", now) {
		t.Fatal("revoked in an empty set")
	}
	r.Revoke("shop", "a", now.Add(time.Minute), now)
	r.Revoke("shop", "b", now.Add(2*time.Minute), now)
	r.Revoke("shop", "gone", now.Add(-time.Second), now) // its session is over already
	if !r.Revoked("shop", "a", now) || !r.Revoked("shop", "b", now) || r.Revoked("blog", "a", now) || r.Revoked("shop", "gone", now) {
		t.Fatal("revocations not held per room and visitor")
	}
	if r.Revoked("shop", "a", now.Add(time.Minute)) || !r.Revoked("shop", "b", now.Add(time.Minute)) {
		t.Fatal("a revocation must hold until its session would have ended, and no longer")
	}
	r.Revoke("shop", "c", now.Add(time.Minute), now)
	r.Revoke("shop", "d", now.Add(time.Minute), now) // the fourth: past the cap
	if held, dropped := r.Held("shop"); held != 3 || dropped != 1 || r.Revoked("shop", "d", now) {
		t.Fatalf("past the cap: held %d, dropped %d; want 3 held and the fourth dropped", held, dropped)
	}
	later := now.Add(90 * time.Second) // a and c are over
	r.Revoke("shop", "e", later.Add(time.Minute), later)
	if held, _ := r.Held("shop"); held != 2 || !r.Revoked("shop", "e", later) || !r.Revoked("shop", "b", later) {
		t.Fatalf("a full room forgets what expired to take a new one: held %d", held)
	}
	r.Prune(now.Add(time.Hour))
	if held, _ := r.Held("shop"); held != 0 || r.total.Load() != 0 {
		t.Fatalf("after every session ended: held %d, total %d", held, r.total.Load())
	}
}

// Checking a session costs no allocation, held revocations or not; with
// none held, only an atomic load.
func TestRevokedCheckAllocatesNothing(t *testing.T) {
	r := &Revocations{}
	if n := testing.AllocsPerRun(100, func() { r.Revoked("shop", "visitor-1", t0) }); n != 0 {
		t.Errorf("empty set: %v allocations per check", n)
	}
	for i := range 1000 {
		r.Revoke("shop", "v"+strconv.Itoa(i), t0.Add(time.Minute), t0)
	}
	if n := testing.AllocsPerRun(100, func() { r.Revoked("shop", "visitor-1", t0) }); n != 0 {
		t.Errorf("1000 held: %v allocations per check", n)
	}
}

// hungRedis is a Redis that accepts connections and never answers.
func hungRedis(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			go func() { _, _ = io.Copy(io.Discard, c) }()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	})
	return "redis://" + ln.Addr().String() + "/0"
}

// commandCount counts the commands a Redis client sends.
type commandCount struct{ n atomic.Int64 }

func (c *commandCount) DialHook(next redis.DialHook) redis.DialHook { return next }
func (c *commandCount) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error { c.n.Add(1); return next(ctx, cmd) }
}
func (c *commandCount) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error { c.n.Add(int64(len(cmds))); return next(ctx, cmds) }
}

// countedRedis is a RedisCounter on url whose commands are counted.
func countedRedis(t *testing.T, url string) (*RedisCounter, *commandCount) {
	t.Helper()
	c, err := NewRedisClient(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	count := &commandCount{}
	c.AddHook(count)
	return &RedisCounter{Client: c}, count
}

// With a Redis that hangs, an admitted visitor's request goes to the origin
// without a single Redis command (the revocation check is in memory), and
// a queued visitor's try while the failover says the store is down makes
// none either: no slot in the minute the store failed, then the even
// split's, its try counted in this gate's memory.
func TestHungRedisNeverDelaysAdmittedOrQueuedVisitors(t *testing.T) {
	rc, sent := countedRedis(t, hungRedis(t))
	counters, err := NewCounters(rc, rc, StrategyCounters, quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, admit.Settings{Name: "shop", TotalActiveUsers: 10, NewUsersPerMinute: 1, RefreshIntervalSeconds: 10,
		EnabledOriginCommands: []string{"revoke"}},
		func(c *Config) { c.Counters = counters })
	ck := admittedCookie("shop", h.clock())
	value, err := Codec{Keys: h.keys}.Seal(ck)
	if err != nil {
		t.Fatal(err)
	}
	admitted := &visitor{cookies: map[string]string{CookieName: value}}
	for range 3 {
		mustOrigin(t, h.get(admitted, "/"), "an admitted visitor, Redis hung")
	}
	if n := sent.n.Load(); n != 0 {
		t.Fatalf("an admitted visitor's requests sent %d commands to Redis; want none in the request path", n)
	}

	// The failover has found the store down (a new visitor's take failed).
	counters.Failover.fail(h.clock(), context.DeadlineExceeded)
	q := newVisitor()
	mustQueue(t, h.get(q, "/"), 200, "a new visitor, the minute the store failed")
	h.advance(25 * time.Second) // past its refresh interval, same minute
	mustQueue(t, h.get(q, "/"), 200, "a queued visitor's try, the minute the store failed")
	h.advance(60 * time.Second) // the next minute: the even split
	mustOrigin(t, h.get(q, "/"), "a queued visitor's try on the even split")
	if n := sent.n.Load(); n != 0 {
		t.Fatalf("queued visitors' tries sent %d commands to a Redis the failover knows is down; want none", n)
	}
}

// A session revoked at gate A stays revoked at A while Redis is down, and
// once Redis answers again A writes it and gate B, sharing that Redis,
// reads it: B no longer honours the old cookie either.
func TestRevocationHoldsThroughOutageAndReachesOtherGates(t *testing.T) {
	testenv.Require(t, env)
	ctx := context.Background()
	dir := t.TempDir()
	srv, err := devstack.StartRedis(ctx, devstack.RedisOptions{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Stop(5 * time.Second) })
	settings := admit.Settings{Name: "shop", TotalActiveUsers: 10, NewUsersPerMinute: 10, EnabledOriginCommands: []string{"revoke"}}
	newGate := func(id string, configure ...func(*Config)) (*harness, *Revocations) {
		rc, _ := countedRedis(t, srv.URL)
		counters, err := NewCounters(rc, rc, StrategyCounters, quietLogger())
		if err != nil {
			t.Fatal(err)
		}
		h := newHarness(t, settings, append(configure, func(c *Config) {
			c.Counters = counters
			c.Gate.ID = id
		})...)
		counters.Revocations.Now = h.clock
		counters.Revocations.Rooms = RevokingRooms(h.reg)
		return h, counters.Revocations
	}
	a, revsA := newGate("ams-1")
	b, revsB := newGate("ams-2", func(c *Config) { c.Keys = a.keys })

	v := newVisitor()
	mustOrigin(t, a.get(v, "/"), "admitted at A")
	kept := v.clone()
	mustOrigin(t, b.get(kept.clone(), "/"), "the session at B")

	if err := srv.Stop(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	mustOrigin(t, a.get(v, "/logout"), "logging out at A, Redis down")
	if len(v.cookies) != 0 || revsA.Unsent() != 1 {
		t.Fatalf("the revocation at A: cookies %v, %d unsent", v.cookies, revsA.Unsent())
	}
	if r := a.get(kept.clone(), "/"); r.fromOrigin() {
		t.Fatal("A honoured the revoked session's old cookie while Redis was down")
	}
	bg, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	t.Cleanup(func() { stop(); wg.Wait() })
	for _, r := range []*Revocations{revsA, revsB} {
		wg.Go(func() { r.Run(bg, 20*time.Millisecond) })
	}
	// Down, A keeps trying to write it; B cannot read it yet.
	if r := a.get(kept.clone(), "/"); r.fromOrigin() {
		t.Fatal("A honoured the revoked session's old cookie while Redis was down")
	}

	srv, err = devstack.StartRedis(ctx, devstack.RedisOptions{Dir: dir, Port: portOf(t, srv.Addr)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Stop(5 * time.Second) })
	// At B the old cookie becomes a new visitor's once B has read the
	// revocation: whatever B decides for it (this room has free slots and
	// admits it anew), it is no longer the revoked session.
	old := visitorID(t, a, kept)
	deadline := time.Now().Add(15 * time.Second)
	for {
		c := kept.clone()
		if r := b.get(c, "/"); !r.fromOrigin() || visitorID(t, a, c) != old {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("B still honours the revoked session's old cookie with Redis back (A has %d unsent)", revsA.Unsent())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if revsA.Unsent() != 0 {
		t.Errorf("A still has %d unsent revocations once Redis took them", revsA.Unsent())
	}
	if !revsB.Revoked("shop", old, b.clock()) {
		t.Error("B does not hold the revocation it read")
	}
	copyAtA := kept.clone()
	if r := a.get(copyAtA, "/"); r.fromOrigin() && visitorID(t, a, copyAtA) == old {
		t.Fatal("A honoured the revoked session's old cookie")
	}
}

// visitorID opens the visitor's cookie of a harness's room.
func visitorID(t *testing.T, h *harness, v *visitor) string {
	t.Helper()
	c, _, err := Codec{Keys: h.keys}.Open(v.cookies[CookieName], h.room.Settings.Name, h.clock())
	if err != nil {
		t.Fatalf("the visitor's cookie does not open: %v", err)
	}
	return c.VisitorID
}
