package admit

import (
	"context"
	"testing"
	"time"
)

func TestSessionLedgerAdmitRenewRevokeExpire(t *testing.T) {
	ctx := context.Background()
	now := t0
	c := NewMemoryCounter(func() time.Time { return now })
	ended := func(from, to time.Time) int64 {
		t.Helper()
		n, err := c.SessionsEnded(ctx, "shop", from, to)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	a, b, r := t0.Add(10*time.Second), t0.Add(20*time.Second+300*time.Millisecond), t0.Add(30*time.Second)
	before := t0.Add(-500 * time.Millisecond)        // ended in the minute before: the room did not count it at t0
	for _, e := range []time.Time{a, b, r, before} { // four admissions
		if err := c.MoveSession(ctx, "shop", time.Time{}, e); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.MoveSession(ctx, "other", time.Time{}, a); err != nil {
		t.Fatal(err)
	}
	// b is renewed to a minute later; r is revoked.
	if err := c.MoveSession(ctx, "shop", b, b.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := c.MoveSession(ctx, "shop", r, time.Time{}); err != nil {
		t.Fatal(err)
	}
	for _, x := range []struct {
		name     string
		from, to time.Time
		want     int64
	}{
		{"before any expiry (and not the one that ended before the minute)", t0, a.Add(-time.Millisecond), 0},
		{"at a's expiry", t0, a, 1},
		{"the renewed session is not freed at its old expiry, nor the revoked one at its", t0, t0.Add(59 * time.Second), 1},
		{"a session ends at the end of its expiry's second, never before", t0.Add(time.Minute), b.Add(time.Minute), 0},
		{"the renewed session, at its new expiry", t0.Add(time.Minute), b.Add(time.Minute).Truncate(time.Second).Add(time.Second), 1},
		{"only from the start asked", a.Add(time.Second), t0.Add(time.Minute), 0},
	} {
		if got := ended(x.from, x.to); got != x.want {
			t.Errorf("%s: %d sessions ended in [%s, %s], want %d", x.name, got, x.from.Format("04:05.000"), x.to.Format("04:05.000"), x.want)
		}
	}
	// Bounded: expiry seconds long past are dropped.
	if c.Expiries() == 0 {
		t.Fatal("the ledger holds nothing")
	}
	now = t0.Add(10 * time.Minute)
	if _, err := c.TakeBelow(ctx, "k", 1, now.Add(time.Minute)); err != nil { // any call forgets
		t.Fatal(err)
	}
	if n := c.Expiries(); n != 0 {
		t.Errorf("%d expiry seconds kept 10 minutes on, want none", n)
	}
}

// freedRoom is a room bound by total_active_users: 10 sessions of 2
// minutes admitted in its first minute, one every 5 s from 5 s, so that
// its third minute begins with all 10 counted and ends them one by one.
func freedRoom(t *testing.T) (*Room, *MemoryCounter, *time.Time) {
	t.Helper()
	now := t0
	s := Settings{Name: "shop", TotalActiveUsers: 10, NewUsersPerMinute: 10, SessionDuration: 2}
	r, err := NewRoom(s, 60, t0)
	if err != nil {
		t.Fatal(err)
	}
	c := NewMemoryCounter(func() time.Time { return now })
	tally := NewTally("shop", Gate{"ams", "ams-1"}, 0)
	for i := 1; i <= 10; i++ {
		now = t0.Add(time.Duration(5*i) * time.Second)
		d := decideWith(t, r.Snapshot, c, now, nil)
		if d.Outcome != Admit {
			t.Fatalf("visitor %d at %s: %s, want admitted", i, now.Format("04:05"), d.Outcome)
		}
		tally.Add(d.Effect)
	}
	for _, m := range []time.Duration{time.Minute, 2 * time.Minute} {
		now = t0.Add(m + r.Grace() + time.Second)
		tally.Finish(MinuteOf(now, time.Minute))
		tally.Heartbeat(MinuteOf(now, time.Minute))
		for _, rep := range tally.Pending() {
			if err := r.AddReport(rep, now); err != nil {
				t.Fatal(err)
			}
		}
		for {
			if _, ok := r.Advance(now); !ok {
				break
			}
		}
	}
	if r.Snapshot.SlotsAvailable != 0 || r.Snapshot.ActiveUsers != 10 {
		t.Fatalf("third minute: %d active, %d slots, want 10 and 0", r.Snapshot.ActiveUsers, r.Snapshot.SlotsAvailable)
	}
	return r, c, &now
}

func decideWith(t *testing.T, snap *Snapshot, c *MemoryCounter, now time.Time, ticket *Ticket) Decision {
	t.Helper()
	d, err := Decide(context.Background(), Input{Now: now, Snapshot: snap, Ticket: ticket, Gate: Gate{"ams", "ams-1"},
		Strategy: SharedCounters{c}, Entropy: 7})
	if err != nil {
		t.Fatal(err)
	}
	if err := RecordSession(context.Background(), c, snap.Room, d.Effect); err != nil {
		t.Fatal(err)
	}
	return d
}

// A session that ends mid-minute frees its place within the second, not
// at the next minute; never more places than sessions ended.
func TestSessionEndingMidMinuteFreesItsSlot(t *testing.T) {
	r, c, now := freedRoom(t)
	snap, third := r.Snapshot, t0.Add(2*time.Minute)
	// The first session (admitted at 0:05) ends at 2:05.
	*now = third.Add(4 * time.Second)
	if d := decideWith(t, snap, c, *now, nil); d.Outcome == Admit {
		t.Fatalf("at %s, before any session ended: admitted", now.Format("04:05"))
	}
	*now = third.Add(5 * time.Second)
	d := decideWith(t, snap, c, *now, nil)
	if d.Outcome != Admit {
		t.Fatalf("at %s, a session ended: %s (%s), want admitted in its place", now.Format("04:05"), d.Outcome, d.Reason)
	}
	if d.Effect.Pool != PoolNew || d.Effect.Scope != Anywhere {
		t.Errorf("counted on %s/%s, want the new visitors' Anywhere", d.Effect.Pool, d.Effect.Scope)
	}
	if d := decideWith(t, snap, c, now.Add(4*time.Second), nil); d.Outcome == Admit {
		t.Fatal("a second visitor took the one ended session's place: overshoot")
	}
	// By 2:25 four sessions have ended: three more places.
	*now = third.Add(25 * time.Second)
	admitted := 0
	for range 10 {
		if d := decideWith(t, snap, c, *now, nil); d.Outcome == Admit {
			admitted++
		}
	}
	if admitted != 4 {
		t.Errorf("at %s, 5 sessions ended and 1 place taken: %d admitted, want 4", now.Format("04:05"), admitted)
	}
}

// A session renewed before its expiry keeps its place: it is never counted
// as freed at its old expiry.
func TestRenewedSessionIsNotFreed(t *testing.T) {
	r, c, now := freedRoom(t)
	snap, third := r.Snapshot, t0.Add(2*time.Minute)
	// The first session, admitted at 0:05, renews at 2:03 (a ticket whose
	// last check-in was 0:05).
	first := &Ticket{Room: "shop", BucketID: t0.UnixMilli(), AcceptedAt: t0.Add(5 * time.Second).UnixMilli(),
		LastCheckInTime: t0.Add(5 * time.Second).UnixMilli()}
	*now = third.Add(3 * time.Second)
	if d := decideWith(t, snap, c, *now, first); d.Outcome != Pass || d.Effect.SessionTo.IsZero() {
		t.Fatalf("renewal: %s, move %v -> %v, want a pass moving the expiry", d.Outcome, d.Effect.SessionFrom, d.Effect.SessionTo)
	}
	*now = third.Add(9 * time.Second)
	if d := decideWith(t, snap, c, *now, nil); d.Outcome == Admit {
		t.Fatal("admitted in the place of a session that was renewed: overshoot")
	}
	*now = third.Add(10 * time.Second) // the second session (0:10) ends
	if d := decideWith(t, snap, c, *now, nil); d.Outcome != Admit {
		t.Fatalf("at %s: %s, want admitted in the place of the second session", now.Format("04:05"), d.Outcome)
	}
}

// Revoking a session frees nothing by itself (the room counts it at the
// next minute) and takes it out of the ledger, so its expiry frees nothing
// either.
func TestRevokedSessionLeavesTheLedger(t *testing.T) {
	_, c, _ := freedRoom(t)
	at := t0.Add(2*time.Minute + time.Second)
	snap := &Snapshot{Room: "shop", MinuteSeconds: 60, Minute: MinuteOf(at, time.Minute),
		Settings: Settings{Name: "shop", SessionDuration: 2, EnabledOriginCommands: []string{"revoke"}}.WithDefaults()}
	first := &Ticket{Room: "shop", AcceptedAt: t0.Add(5 * time.Second).UnixMilli(), LastCheckInTime: t0.Add(5 * time.Second).UnixMilli()}
	eff, ok := Revoke(snap, first, at)
	if !ok || !eff.SessionFrom.Equal(t0.Add(2*time.Minute+5*time.Second)) {
		t.Fatalf("revoke: ok %v, move from %v, want the session's expiry 02:05", ok, eff.SessionFrom)
	}
	if err := RecordSession(context.Background(), c, "shop", eff); err != nil {
		t.Fatal(err)
	}
	if n, _ := c.SessionsEnded(context.Background(), "shop", t0.Add(2*time.Minute), t0.Add(2*time.Minute+5*time.Second)); n != 0 {
		t.Errorf("%d ended by 02:05 after the revocation, want 0", n)
	}
}
