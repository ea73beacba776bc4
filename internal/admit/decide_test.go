package admit

import (
	"context"
	"errors"
	"math"
	"sync"
	"testing"
	"time"
)

// decideAt decides for one visitor on a fresh room snapshot with shared
// counters.
func decideAt(t *testing.T, snap *Snapshot, now time.Time, ticket *Ticket) Decision {
	t.Helper()
	d, err := Decide(context.Background(), Input{Now: now, Snapshot: snap, Ticket: ticket, Gate: Gate{"ams", "ams-1"},
		Strategy: SharedCounters{NewMemoryCounter(nil)}, Entropy: 7})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func roomSnapshot(t *testing.T, mut func(*Settings)) *Snapshot {
	t.Helper()
	s := Settings{Name: "shop", TotalActiveUsers: 100, NewUsersPerMinute: 100}
	if mut != nil {
		mut(&s)
	}
	r, err := NewRoom(s, 60, t0)
	if err != nil {
		t.Fatal(err)
	}
	return r.Snapshot
}

func TestSessionRules(t *testing.T) {
	now := t0.Add(30 * time.Second)
	ms := func(t time.Time) int64 { return t.UnixMilli() }
	admitted := func(accepted, last time.Time) *Ticket {
		return &Ticket{Room: "shop", BucketID: ms(MinuteOf(accepted, time.Minute)), AcceptedAt: ms(accepted), LastCheckInTime: ms(last)}
	}
	for _, c := range []struct {
		name    string
		renewal bool
		ticket  *Ticket
		want    Outcome
		renewed bool // the ticket's check-in moves to now
	}{
		{"a session checked in 4 minutes ago passes", true, admitted(now.Add(-20*time.Minute), now.Add(-4*time.Minute)), Pass, true},
		{"5 minutes after the last check-in it has expired: a new arrival", true, admitted(now.Add(-20*time.Minute), now.Add(-5*time.Minute)), Admit, true},
		{"without renewal the session runs from admission", false, admitted(now.Add(-6*time.Minute), now.Add(-time.Second)), Admit, true},
		{"without renewal, within 5 minutes of admission it passes", false, admitted(now.Add(-4*time.Minute), now.Add(-time.Minute)), Pass, true},
		{"a check-in seconds ago is not rewritten", true, admitted(now.Add(-time.Minute), now.Add(-3*time.Second)), Pass, false},
		{"a ticket of another room is no ticket", true, &Ticket{Room: "other", AcceptedAt: ms(now), LastCheckInTime: ms(now)}, Admit, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			snap := roomSnapshot(t, func(s *Settings) { s.DisableSessionRenewal = !c.renewal })
			d := decideAt(t, snap, now, c.ticket)
			if d.Outcome != c.want {
				t.Fatalf("outcome %s, want %s", d.Outcome, c.want)
			}
			if d.SetTicket != c.renewed || (c.renewed && d.Ticket.LastCheckInTime != ms(now)) {
				t.Errorf("ticket %+v set %v", d.Ticket, d.SetTicket)
			}
			if d.Outcome == Admit && (d.Ticket.AcceptedAt != ms(now) || d.Ticket.BucketID != ms(t0) || !d.Effect.NewVisitor || !d.Effect.Admitted) {
				t.Errorf("a new arrival's ticket %+v effect %+v", d.Ticket, d.Effect)
			}
		})
	}
	// A pass in a new minute moves the session to it (renewal) and counts it
	// as seen; without renewal it is seen but not moved.
	snap := roomSnapshot(t, nil)
	d := decideAt(t, snap, now, admitted(now.Add(-2*time.Minute), now.Add(-time.Minute)))
	if !d.Effect.Seen || !d.Effect.Renewed.Equal(t0.Add(-time.Minute)) {
		t.Errorf("renewal effect %+v", d.Effect)
	}
	snap = roomSnapshot(t, func(s *Settings) { s.DisableSessionRenewal = true })
	d = decideAt(t, snap, now, admitted(now.Add(-2*time.Minute), now.Add(-time.Minute)))
	if !d.Effect.Seen || !d.Effect.Renewed.IsZero() || d.Ticket.LastCheckInTime != ms(now) {
		t.Errorf("no-renewal effect %+v ticket %+v", d.Effect, d.Ticket)
	}
}

func TestRoomWideRules(t *testing.T) {
	now := t0.Add(30 * time.Second)
	session := &Ticket{Room: "shop", AcceptedAt: now.Add(-time.Minute).UnixMilli(), LastCheckInTime: now.Add(-time.Minute).UnixMilli()}
	for _, c := range []struct {
		name            string
		mut             func(*Settings)
		newOut, session Outcome
		reason          string
	}{
		{"suspended: straight to the origin", func(s *Settings) { s.Suspended = true }, Bypass, Bypass, ""},
		{"reject: everyone sees the closed page", func(s *Settings) { s.QueueingMethod = Reject }, Closed, Closed, ""},
		{"passthrough admits and counts", func(s *Settings) { s.QueueingMethod = Passthrough }, Admit, Pass, ""},
		{"queue_all queues new visitors, sessions pass", func(s *Settings) { s.QueueAll = true }, Queue, Pass, ReasonQueueAll},
	} {
		t.Run(c.name, func(t *testing.T) {
			snap := roomSnapshot(t, c.mut)
			d := decideAt(t, snap, now, nil)
			if d.Outcome != c.newOut || d.Reason != c.reason {
				t.Errorf("new visitor: %s (%s), want %s", d.Outcome, d.Reason, c.newOut)
			}
			if d.Outcome == Admit && (d.Effect.Pool != "" || !d.Effect.Admitted) {
				t.Errorf("passthrough effect %+v", d.Effect)
			}
			if d.Outcome == Queue && (!d.Wait.QueueAll || d.Wait.Known) {
				t.Errorf("queue_all wait %+v", d.Wait)
			}
			if d := decideAt(t, snap, now, session); d.Outcome != c.session {
				t.Errorf("session: %s, want %s", d.Outcome, c.session)
			}
		})
	}
}

// A gate whose snapshot is older than its maximum age queues new visitors;
// sessions still pass. So does a gate with no snapshot at all.
func TestStaleSnapshot(t *testing.T) {
	snap := roomSnapshot(t, func(s *Settings) { s.SnapshotMaxAgeSeconds = 100 })
	if d := decideAt(t, snap, t0.Add(100*time.Second), nil); d.Outcome != Admit {
		t.Fatalf("at 100 s: %s", d.Outcome)
	}
	late := t0.Add(101 * time.Second)
	if d := decideAt(t, snap, late, nil); d.Outcome != Queue || d.Reason != ReasonStale {
		t.Fatalf("at 101 s: %s %s", d.Outcome, d.Reason)
	}
	session := &Ticket{Room: "shop", AcceptedAt: late.Add(-time.Minute).UnixMilli(), LastCheckInTime: late.Add(-time.Minute).UnixMilli()}
	if d := decideAt(t, snap, late, session); d.Outcome != Pass {
		t.Errorf("session on a stale snapshot: %s", d.Outcome)
	}
	// The maximum age is never under a minute and a half of the room's.
	short := roomSnapshot(t, func(s *Settings) { s.SnapshotMaxAgeSeconds = 10 })
	if short.MaxAge() != 90*time.Second {
		t.Errorf("max age %s", short.MaxAge())
	}
	gone := &Snapshot{Room: "shop", Status: StatusDeleted, PublishedAt: late}
	if d := decideAt(t, gone, late, nil); d.Outcome != Bypass || d.SetTicket {
		t.Errorf("deleted room: %+v", d)
	}
	if d, _ := Decide(context.Background(), Input{Now: late}); d.Outcome != Queue || d.Reason != ReasonNoSnapshot {
		t.Errorf("no snapshot: %+v", d)
	}
	if d, _ := Decide(context.Background(), Input{Now: late, Ticket: session}); d.Outcome != Pass {
		t.Errorf("no snapshot, session: %+v", d)
	}
}

// The jitter stays within ±20% and averages to the base.
func TestJitterRefresh(t *testing.T) {
	sum, n := 0, 10000
	seen := map[int]bool{}
	for i := range n {
		r := JitterRefresh(30, uint64(i)*2654435761)
		if r < 24 || r > 36 {
			t.Fatalf("jittered %d out of 30 ± 20%%", r)
		}
		sum += r
		seen[r] = true
	}
	if avg := float64(sum) / float64(n); math.Abs(avg-30) > 0.2 || len(seen) < 10 {
		t.Errorf("average %.2f over %d values", avg, len(seen))
	}
	if JitterRefresh(2, 99) != 2 || JitterRefresh(0, 5) != 1 {
		t.Error("tiny intervals")
	}
	for _, c := range []struct {
		setting int
		minute  time.Duration
		want    int
	}{
		{20, time.Minute, 20}, {30, time.Minute, 30}, {1, time.Minute, 1}, {45, time.Minute, 30},
		// A compressed minute scales the default and keeps explicit values
		// up to half of it.
		{20, 10 * time.Second, 3}, {2, 10 * time.Second, 2}, {5, 10 * time.Second, 5}, {30, 10 * time.Second, 5},
		{20, 6 * time.Second, 2}, {20, 3 * time.Second, 1}, {4, 3 * time.Second, 1},
	} {
		if got := RefreshBase(c.setting, c.minute); got != c.want {
			t.Errorf("RefreshBase(%d, %s) = %d, want %d", c.setting, c.minute, got, c.want)
		}
	}
}

func TestRevoke(t *testing.T) {
	now := t0.Add(30 * time.Second)
	session := &Ticket{Room: "shop", AcceptedAt: now.Add(-2 * time.Minute).UnixMilli(), LastCheckInTime: now.Add(-70 * time.Second).UnixMilli()}
	if _, ok := Revoke(roomSnapshot(t, nil), session, now); ok {
		t.Error("revoke without the origin command enabled")
	}
	snap := roomSnapshot(t, func(s *Settings) { s.EnabledOriginCommands = []string{"revoke"} })
	eff, ok := Revoke(snap, session, now)
	if !ok || !eff.Revoked.Equal(t0.Add(-time.Minute)) || !eff.Minute.Equal(t0) {
		t.Errorf("revoke effect %+v", eff)
	}
	if _, ok := Revoke(snap, &Ticket{Room: "shop", BucketID: t0.UnixMilli(), LastCheckInTime: now.UnixMilli()}, now); ok {
		t.Error("revoked a queued visitor")
	}
}

type failingStrategy struct{}

func (failingStrategy) Name() string { return "failing" }
func (failingStrategy) TakeSlot(context.Context, SlotRequest) (string, bool, error) {
	return "", false, errors.New("redis: connection refused")
}

// A failing counter store queues (never admits on a guess); the fallback
// strategy takes over.
func TestCounterFailure(t *testing.T) {
	snap := roomSnapshot(t, nil)
	d, err := Decide(context.Background(), Input{Now: t0, Snapshot: snap, Gate: Gate{"ams", "ams-1"}, Strategy: failingStrategy{}})
	if err == nil || d.Outcome != Queue || d.Reason != ReasonCounterError {
		t.Fatalf("failing strategy: %+v %v", d, err)
	}
	var heard int
	fb := Fallback{Primary: failingStrategy{}, Secondary: EvenSplit{Store: NewMemoryCounter(nil)}, OnError: func(error) { heard++ }}
	d, err = Decide(context.Background(), Input{Now: t0, Snapshot: snap, Gate: Gate{"ams", "ams-1"}, Strategy: fb})
	if err != nil || d.Outcome != Admit || heard != 1 || fb.Name() != "failing|even" {
		t.Fatalf("fallback: %+v %v heard %d", d, err, heard)
	}
}

func TestMemoryCounter(t *testing.T) {
	now := t0
	c := NewMemoryCounter(func() time.Time { return now })
	ctx := context.Background()
	var wg sync.WaitGroup
	var mu sync.Mutex
	granted := 0
	for range 8 {
		wg.Go(func() {
			for range 100 {
				if ok, _ := c.TakeBelow(ctx, "k", 250, t0.Add(time.Minute)); ok {
					mu.Lock()
					granted++
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	if n, _ := c.Load(ctx, "k"); granted != 250 || n != 250 {
		t.Fatalf("granted %d, count %d; want exactly 250", granted, n)
	}
	now = t0.Add(2 * time.Minute)
	if ok, _ := c.TakeBelow(ctx, "other", 1, now.Add(time.Minute)); !ok || c.Len() != 1 {
		t.Errorf("expired key kept: %d keys", c.Len())
	}
}

// The tally adds effects up into cumulative reports with growing sequence
// numbers; only changed minutes are pending.
func TestTally(t *testing.T) {
	tl := NewTally("shop", Gate{"ams", "ams-1"}, 0)
	m1 := t0.Add(time.Minute)
	tl.Add(Effect{Minute: t0, NewVisitor: true, Admitted: true, Pool: PoolNew, Scope: Anywhere, Seen: true})
	tl.Add(Effect{Minute: t0, NewVisitor: true, Bucket: t0, Waiting: 1})
	tl.Add(Effect{Minute: t0, EarlyRefresh: true})
	tl.Add(Effect{})
	first := tl.Pending()
	if len(first) != 1 || first[0].Admitted != 1 || first[0].NewVisitors != 2 || first[0].Seq != 1 || len(first[0].Queued) != 1 || first[0].EarlyRefreshes != 1 {
		t.Fatalf("first %+v", first)
	}
	tl.Add(Effect{Minute: t0, Admitted: true, FromQueue: true, Pool: PoolNew, Scope: Anywhere, Bucket: t0, Waiting: -1, Seen: true})
	tl.Add(Effect{Minute: m1, Seen: true, Renewed: t0})
	tl.Heartbeat(m1.Add(time.Minute))
	next := tl.Pending()
	if len(next) != 3 || next[0].Seq != 2 || next[0].Admitted != 2 || len(next[0].Queued) != 0 || next[0].Taken[0].Count != 2 ||
		len(next[1].Renewed) != 1 || next[2].Admitted != 0 {
		t.Fatalf("next %+v", next)
	}
	if len(tl.Pending()) != 0 {
		t.Error("nothing changed, yet reports are pending")
	}
	for _, r := range next {
		if err := r.Validate("shop", time.Minute); err != nil {
			t.Errorf("report invalid: %v", err)
		}
	}
	tl.Forget(m1)
	if _, ok := tl.Report(t0); ok {
		t.Error("forgotten minute still reported")
	}
}

func TestReportValidation(t *testing.T) {
	ok := Report{Room: "shop", DataCenter: "ams", Gate: "ams-1", Minute: t0, Seq: 1}
	for _, c := range []struct {
		name string
		mut  func(*Report)
	}{
		{"another room", func(r *Report) { r.Room = "x" }},
		{"no data center", func(r *Report) { r.DataCenter = "" }},
		{"bad gate", func(r *Report) { r.Gate = "a/b" }},
		{"unaligned minute", func(r *Report) { r.Minute = t0.Add(time.Second) }},
		{"negative", func(r *Report) { r.Admitted = -1 }},
		{"renewal from the future", func(r *Report) { r.Renewed = []MinuteCount{{Minute: t0, Count: 1}} }},
		{"bucket from the future", func(r *Report) { r.Queued = []MinuteCount{{Minute: t0.Add(time.Minute), Count: 1}} }},
		{"bad scope", func(r *Report) { r.Taken = []PoolCount{{Pool: PoolNew, Scope: "a b", Count: 1}} }},
		{"too many entries", func(r *Report) { r.Queued = make([]MinuteCount, maxReportEntries+1) }},
	} {
		r := ok
		c.mut(&r)
		if err := r.Validate("shop", time.Minute); err == nil {
			t.Errorf("%s: accepted", c.name)
		}
	}
	if err := ok.Validate("shop", time.Minute); err != nil {
		t.Error(err)
	}
}
