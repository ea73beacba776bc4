package gate

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/edgeflow/edgeflow/internal/admit"
	"github.com/edgeflow/edgeflow/internal/testenv"
)

// The session ledger on a real Redis: admissions, a renewal and a
// revocation, counted as ended only once their second is over, and keys
// that expire after their minute.
func TestRedisSessionLedger(t *testing.T) {
	testenv.Require(t, env)
	rc := redisCounter(t, env.Redis.URL)
	ctx := context.Background()
	room := "ledger-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	m := time.Now().Truncate(time.Minute).Add(10 * time.Minute) // a minute of expiries
	a, b, r := m.Add(10*time.Second), m.Add(20*time.Second+300*time.Millisecond), m.Add(30*time.Second)
	before := m.Add(-500 * time.Millisecond) // ended in the minute before m
	for _, e := range []time.Time{a, b, r, before} {
		if err := rc.MoveSession(ctx, room, time.Time{}, e); err != nil {
			t.Fatal(err)
		}
	}
	if err := rc.MoveSession(ctx, room, b, b.Add(time.Minute)); err != nil { // renewed
		t.Fatal(err)
	}
	if err := rc.MoveSession(ctx, room, r, time.Time{}); err != nil { // revoked
		t.Fatal(err)
	}
	for _, x := range []struct {
		name     string
		from, to time.Time
		want     int64
	}{
		{"before any expiry of the minute", m, a.Add(-time.Millisecond), 0},
		{"at a's expiry", m, a, 1},
		{"neither the renewed session at its old expiry nor the revoked one", m, m.Add(59 * time.Second), 1},
		{"the renewed one, once its new expiry's second is over", m.Add(time.Minute), b.Add(time.Minute).Truncate(time.Second).Add(time.Second), 1},
		{"not before", m.Add(time.Minute), b.Add(time.Minute), 0},
	} {
		n, err := rc.SessionsEnded(ctx, room, x.from, x.to)
		if err != nil {
			t.Fatal(err)
		}
		if n != x.want {
			t.Errorf("%s: %d ended, want %d", x.name, n, x.want)
		}
	}
	// The same answers as the in-process ledger the simulator uses.
	mem := admit.NewMemoryCounter(func() time.Time { return m })
	for _, e := range []time.Time{a, b, r, before} {
		_ = mem.MoveSession(ctx, room, time.Time{}, e)
	}
	_ = mem.MoveSession(ctx, room, b, b.Add(time.Minute))
	_ = mem.MoveSession(ctx, room, r, time.Time{})
	for _, to := range []time.Time{a, m.Add(59 * time.Second)} {
		want, _ := mem.SessionsEnded(ctx, room, m, to)
		if got, _ := rc.SessionsEnded(ctx, room, m, to); got != want {
			t.Errorf("to %s: Redis counts %d ended, memory %d", to.Format("04:05"), got, want)
		}
	}
	ttl, err := rc.Client.TTL(ctx, expiryKey(room, a.Unix())).Result()
	if err != nil || ttl <= 0 || ttl > 13*time.Minute+ledgerKeep {
		t.Errorf("the minute's key expires in %v (%v), want after its minute plus %v", ttl, err, ledgerKeep)
	}
}

// shifted moves a ledger's times by d: the gate tests' clock is in the past,
// where the real Redis would expire the ledger's keys at once.
type shifted struct {
	admit.SessionLedger
	d time.Duration
}

func (s shifted) at(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return t.Add(s.d)
}

func (s shifted) MoveSession(ctx context.Context, room string, from, to time.Time) error {
	return s.SessionLedger.MoveSession(ctx, room, s.at(from), s.at(to))
}

func (s shifted) SessionsEnded(ctx context.Context, room string, from, to time.Time) (int64, error) {
	return s.SessionLedger.SessionsEnded(ctx, room, s.at(from), s.at(to))
}

// A gate with an Anywhere Redis records its sessions in the room's ledger
// there, in the background: an admission at its expiry, a renewal moved to
// the new one, a revocation taken away. (Before, the gate recorded none, so
// no ended session freed a place at the gate as it did in the simulator.)
func TestGateRecordsSessionsInTheLedger(t *testing.T) {
	testenv.Require(t, env)
	ctx := context.Background()
	rc := redisCounter(t, env.Redis.URL)
	counters, err := NewCounters(&rc, &rc, StrategyCounters, quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	if counters.Sessions == nil {
		t.Fatal("a gate with an Anywhere Redis keeps no session ledger")
	}
	ledger := shifted{SessionLedger: rc, d: time.Since(t0).Truncate(time.Minute) + time.Hour}
	counters.Sessions.Ledger = ledger
	room := "ledger-gate-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	h := newHarness(t, admit.Settings{Name: room, TotalActiveUsers: 10, NewUsersPerMinute: 10, SessionDuration: 2,
		EnabledOriginCommands: []string{"revoke"}}, func(c *Config) { c.Counters = counters })
	bg, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { counters.Sessions.Run(bg); close(done) }()
	t.Cleanup(func() { stop(); <-done })

	// endingAt waits until the ledger counts want sessions ending at e.
	endingAt := func(e time.Time, want int64, what string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			n, err := ledger.SessionsEnded(ctx, room, e.Add(-time.Second), e.Add(time.Second))
			if err == nil && n == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: %d sessions (err %v) end at %s, want %d", what, n, err, e, want)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	v := newVisitor()
	admitted := h.clock()
	mustOrigin(t, h.get(v, "/"), "a new visitor, slots free")
	first := admitted.Add(2 * time.Minute)
	endingAt(first, 1, "admitted")

	h.advance(15 * time.Second) // past a renewal interval
	renewed := h.clock()
	mustOrigin(t, h.get(v, "/"), "the session, renewed")
	second := renewed.Add(2 * time.Minute)
	endingAt(second, 1, "renewed")
	endingAt(first, 0, "renewed, at the old expiry")

	mustOrigin(t, h.get(v, "/logout"), "the origin's logout page")
	endingAt(second, 0, "revoked")
}

// A request never waits on the ledger: with nobody applying the moves (a
// Redis too slow to keep up), a full queue drops them and counts them.
func TestSessionRecorderNeverHoldsARequest(t *testing.T) {
	var r SessionRecorder
	now := time.Now()
	const moves = recorderQueue + 1000
	for i := range moves {
		r.Record("shop", admit.Effect{SessionTo: now.Add(time.Duration(i) * time.Second)})
	}
	if got := r.Lost(); got != moves-recorderQueue {
		t.Fatalf("%d moves lost, want %d (the queue holds %d)", got, moves-recorderQueue, recorderQueue)
	}
}

// The sessions still running by the ledger on a real Redis, as a gate in
// an outage reads them (admit.OutageLimitAt): admissions, a renewal moved
// across minutes and a revocation, the same as the in-process ledger.
func TestRedisSessionsLive(t *testing.T) {
	testenv.Require(t, env)
	rc := redisCounter(t, env.Redis.URL)
	ctx := context.Background()
	room := "live-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	now := time.Now().Truncate(time.Minute).Add(10*time.Minute + 30*time.Second)
	mem := admit.NewMemoryCounter(func() time.Time { return now })
	mem.Ledgered = true
	moves := [][2]time.Time{
		{{}, now.Add(-time.Second)},     // ended
		{{}, now.Add(90 * time.Second)}, // runs into the next minute
		{{}, now.Add(4 * time.Minute)},  // runs four minutes on
		{{}, now.Add(3 * time.Minute)},  // revoked below
		{now.Add(3 * time.Minute), {}},  // the revocation
		{{}, now.Add(20 * time.Second)}, // renewed below
		{now.Add(20 * time.Second), now.Add(5 * time.Minute)},
	}
	for _, mv := range moves {
		if err := rc.MoveSession(ctx, room, mv[0], mv[1]); err != nil {
			t.Fatal(err)
		}
		_ = mem.MoveSession(ctx, room, mv[0], mv[1])
	}
	for _, x := range []struct {
		at   time.Time
		want int64
	}{{now, 3}, {now.Add(2 * time.Minute), 2}, {now.Add(290 * time.Second), 1}, {now.Add(6 * time.Minute), 0}} {
		got, err := rc.SessionsLive(ctx, room, x.at, 5*time.Minute+time.Second)
		if err != nil {
			t.Fatal(err)
		}
		inMem, _ := mem.SessionsLive(ctx, room, x.at, 5*time.Minute+time.Second)
		if got != x.want || inMem != x.want {
			t.Errorf("at %s: Redis %d, in process %d running; want %d", x.at.Sub(now), got, inMem, x.want)
		}
	}
}
