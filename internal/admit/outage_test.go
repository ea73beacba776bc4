package admit

import (
	"cmp"
	"context"
	"fmt"
	"testing"
	"time"
)

// outageRun is what a room did through an outage of its workflow: the
// gates' admissions by minute and the most sessions alive at once.
type outageRun struct {
	admitted   map[time.Time]int // by the minute of the decision
	admittedAt []time.Time
	outageFrom time.Time // the first minute with no snapshot of its own
	outageTo   time.Time // the minute the room came back in
	inOutage   int       // admitted in [outageFrom, outageTo)
	mostAlive  int
	room       *Room
	published  []*Snapshot // every snapshot from the room's return on
}

// runOutage drives a queueing room (more visitors than its limits take)
// through 4 minutes with its workflow up, outage minutes with it down —
// its snapshot frozen, the gates' reports held, as Temporal holds the
// signals of a workflow whose worker is down — and 4 minutes after it came
// back, checking both limits every second.
func runOutage(t *testing.T, s Settings, outage int) outageRun {
	t.Helper()
	return runOutageReports(t, s, outage, false)
}

// runOutageReports is runOutage; with aggregated, the gates' reports of a
// minute reach the room only once it ends, as a data center's aggregate
// does, so the room comes back knowing nothing of its current minute.
func runOutageReports(t *testing.T, s Settings, outage int, aggregated bool) outageRun {
	t.Helper()
	return runOutageWith(t, s, outageOptions{minutes: outage, aggregated: aggregated})
}

// outageOptions vary runOutage's world.
type outageOptions struct {
	minutes    int
	aggregated bool
	// arriveEvery is how often a new visitor arrives (default 2 s).
	arriveEvery time.Duration
	// recordSessions records each decision's session move in the shared
	// counters' sub-minute ledger, as gates with an Anywhere Redis do.
	recordSessions bool
	// strategy, when set, gives each gate its own (the even split on
	// counters of its own).
	strategy func(g Gate) Strategy
	// frozen is Temporal itself down rather than the room's workers: no
	// report reaches it meanwhile (the gates keep them), and once back its
	// timer fires before the reports the gates send again arrive.
	frozen bool
	// beginsAt is how far into its minute the outage begins (default 30 s).
	beginsAt time.Duration
}

func runOutageWith(t *testing.T, s Settings, o outageOptions) outageRun {
	t.Helper()
	outage, aggregated := o.minutes, o.aggregated
	arriveEvery := cmp.Or(o.arriveEvery, 2*time.Second)
	gates := []Gate{{"ams", "ams-1"}, {"ams", "ams-2"}, {"fra", "fra-1"}}
	w := newWorld(t, s, t0, 0, gates...)
	w.recordSessions = o.recordSessions
	// The gates record every session: the ledger may be read.
	w.counters.(*MemoryCounter).Ledgered = o.recordSessions
	if o.strategy != nil {
		for _, g := range w.gates {
			g.strategy = o.strategy(g.Gate)
		}
	}
	length := time.Minute
	run := outageRun{admitted: map[time.Time]int{}}
	type visitor struct {
		ticket *Ticket
		gate   int
		next   time.Time
	}
	var visitors []*visitor
	var held []Report     // reports sent while the room is down
	var withheld []Report // with aggregated, the return minute's, until it ends
	down := func(now time.Time) bool { return !now.Before(run.outageFrom) && now.Before(run.outageTo) }
	run.outageFrom = t0.Add(4 * length).Add(cmp.Or(o.beginsAt, 30*time.Second)) // mid-minute, as outages begin
	run.outageTo = MinuteOf(run.outageFrom, length).Add(time.Duration(outage) * length).Add(20 * time.Second)
	end := run.outageTo.Add(4 * length)
	n := 0
	for w.now.Before(end) {
		// 30 new visitors a minute, over the gates; everyone comes back
		// when told to, and an admitted visitor leaves.
		if w.now.Sub(t0)%arriveEvery == 0 {
			visitors = append(visitors, &visitor{gate: n % len(gates), next: w.now})
			n++
		}
		for _, v := range visitors {
			if v.next.After(w.now) || (v.ticket != nil && v.ticket.Admitted()) {
				continue
			}
			_, d := w.decide(gates[v.gate].ID, w.now, &v.ticket)
			switch d.Outcome {
			case Admit:
				run.admitted[d.Effect.Minute]++
				run.admittedAt = append(run.admittedAt, w.now)
				if down(w.now) {
					run.inOutage++
				}
			default:
				v.next = w.now.Add(max(d.RefreshIn, time.Second))
			}
		}
		alive := 0
		for _, at := range run.admittedAt {
			if w.now.Before(at.Add(time.Duration(s.SessionDuration) * length)) {
				alive++
			}
		}
		run.mostAlive = max(run.mostAlive, alive)
		if alive > s.TotalActiveUsers {
			t.Fatalf("%s: %d sessions alive, total_active_users %d", w.now.Format("15:04:05"), alive, s.TotalActiveUsers)
		}
		if down(w.now) {
			w.now = w.now.Add(time.Second)
			for _, g := range w.gates {
				g.tally.Finish(MinuteOf(w.now, length))
				held = append(held, g.tally.Pending()...)
			}
			continue
		}
		if held != nil {
			if o.frozen {
				w.room.Advance(w.now)
				w.sync()
			}
			// Back: the room takes every report it was sent (first, when
			// Temporal held them).
			for _, r := range held {
				if aggregated && r.Minute.Equal(MinuteOf(w.now, length)) {
					withheld = append(withheld, r)
					continue
				}
				if err := w.room.AddReport(r, w.now); err != nil {
					t.Fatal(err)
				}
			}
			held = nil
			// Its timer fired long ago: it publishes the current minute.
			w.room.Advance(w.now)
			w.sync()
		}
		if withheld != nil && MinuteOf(w.now, length).After(withheld[0].Minute) {
			for _, r := range withheld {
				if err := w.room.AddReport(r, w.now); err != nil {
					t.Fatal(err)
				}
			}
			withheld = nil
		}
		for _, g := range w.gates {
			g.tally.Finish(MinuteOf(w.now, length))
		}
		w.step(time.Second)
		if n := len(run.published); !w.now.Before(run.outageTo) && (n == 0 || run.published[n-1] != w.room.Snapshot) {
			run.published = append(run.published, w.room.Snapshot)
		}
	}
	run.room = w.room
	for m, got := range run.admitted {
		if got > s.NewUsersPerMinute {
			t.Errorf("minute %s: %d admitted, new_users_per_minute %d", m.Format("15:04"), got, s.NewUsersPerMinute)
		}
	}
	return run
}

// While the room cannot publish, the gates keep admitting new visitors on
// the shared counters, within both limits, and nothing overshoots when the
// room comes back. Before, a snapshot two minutes old admitted nobody new.
func TestOutageAdmitsWithinBothLimits(t *testing.T) {
	// Sessions of two minutes, not renewed: the gates know when the ones
	// they admitted end.
	s := Settings{Name: "shop", TotalActiveUsers: 30, NewUsersPerMinute: 12, SessionDuration: 2, DisableSessionRenewal: true,
		RefreshIntervalSeconds: 10, SnapshotMaxAgeSeconds: 3600}
	run := runOutage(t, s, 10)
	// Allowed: new_users_per_minute for each minute the room was down (the
	// visitors ask for more; sessions of two minutes at 12 a minute leave
	// total_active_users room to spare). The gates, not knowing in which
	// second of its minute a session began, count every session of the
	// last three minutes as running: at most 30 in three minutes.
	allowed := s.NewUsersPerMinute * 10
	t.Logf("admitted while the room was down: %d of %d allowed (%.0f%%); most alive at once %d", run.inOutage, allowed,
		100*float64(run.inOutage)/float64(allowed), run.mostAlive)
	if run.inOutage*2 < allowed {
		t.Errorf("admitted %d while the room was down, less than half of the %d allowed", run.inOutage, allowed)
	}
	for m := MinuteOf(run.outageFrom, time.Minute).Add(3 * time.Minute); m.Before(MinuteOf(run.outageTo, time.Minute)); m = m.Add(time.Minute) {
		if run.admitted[m] == 0 {
			t.Errorf("minute %s of the outage admitted nobody", m.Format("15:04"))
		}
	}
}

// A room back from an outage before the gates' reports of its current
// minute reach it (a data center's aggregate comes as the minute ends)
// allots that minute whole to the outage counter, so what the gates took
// on it before the snapshot counts against the minute's slots. Before,
// the room reserved the slots for the queue's buckets on counters of their
// own and the minute admitted its slots twice over (the chaos suite: 31
// sessions in three minutes, total_active_users 30).
func TestOutageReturnCountsTheCurrentMinutesTakes(t *testing.T) {
	s := Settings{Name: "shop", TotalActiveUsers: 30, NewUsersPerMinute: 12, SessionDuration: 2, DisableSessionRenewal: true,
		RefreshIntervalSeconds: 10, SnapshotMaxAgeSeconds: 3600}
	run := runOutageReports(t, s, 10, true)
	back := MinuteOf(run.outageTo, time.Minute)
	if n := run.admitted[back]; n == 0 {
		t.Errorf("the minute the room came back in admitted nobody")
	}
	// A session admitted in minute k runs into minute k+2: the room's
	// rule is that the admissions of a minute and the two before stay
	// within total_active_users.
	for m := back.Add(-2 * time.Minute); !m.After(back.Add(3 * time.Minute)); m = m.Add(time.Minute) {
		if n := run.admitted[m] + run.admitted[m.Add(-time.Minute)] + run.admitted[m.Add(-2*time.Minute)]; n > s.TotalActiveUsers {
			t.Errorf("minute %s: %d admitted in it and the two before, over total_active_users %d", m.Format("15:04"), n, s.TotalActiveUsers)
		}
	}
}

// Renewed sessions may run on for ever, so through an outage the gates
// count every session of the snapshot and every admission since as still
// running: the active-users limit holds whatever the sessions do.
func TestOutageWithRenewedSessionsCountsEverySessionAsRunning(t *testing.T) {
	for _, total := range []int{30, 200} {
		t.Run(fmt.Sprint(total), func(t *testing.T) {
			s := Settings{Name: "shop", TotalActiveUsers: total, NewUsersPerMinute: 12, SessionDuration: 2,
				RefreshIntervalSeconds: 10, SnapshotMaxAgeSeconds: 3600}
			run := runOutage(t, s, 6)
			t.Logf("admitted while the room was down: %d; most alive at once %d", run.inOutage, run.mostAlive)
			if total == 200 && run.inOutage < 3*s.NewUsersPerMinute {
				t.Errorf("with room for %d sessions, admitted only %d while the room was down", total, run.inOutage)
			}
		})
	}
}

// A gate still on an older snapshot while another gate read a later one
// is behind, not in an outage: the room publishes and allots the minute
// without knowing this gate's takes, so it admits nobody new.
func TestBehindGateIsNoOutage(t *testing.T) {
	s := Settings{Name: "shop", TotalActiveUsers: 100, NewUsersPerMinute: 20, SessionDuration: 2, SnapshotMaxAgeSeconds: 3600}
	room, err := NewRoom(s, 60, t0)
	if err != nil {
		t.Fatal(err)
	}
	snap := room.Snapshot
	store := NewMemoryCounter(func() time.Time { return t0 })
	g := Gate{DataCenter: "ams", ID: "ams-1"}
	decide := func(now time.Time, strategy Strategy) Decision {
		d, err := Decide(context.Background(), Input{Now: now, Snapshot: snap, Gate: g, Strategy: strategy})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	if d := decide(t0.Add(2*time.Minute+time.Second), SharedCounters{store}); d.Outcome != Queue {
		t.Errorf("two minutes after the snapshot's (the room may be slow, not down): %s, want queued", d.Outcome)
	}
	outage := t0.Add(3*time.Minute + time.Second)
	// Without shared counters a gate admits within its own share
	// (EvenShare: here all of the room's, as no other gate reported).
	if d := decide(outage, EvenSplit{Store: NewMemoryCounter(nil)}); d.Outcome != Admit {
		t.Errorf("in an outage without shared counters: %s, want admitted within the gate's last share", d.Outcome)
	}
	if d := decide(outage, SharedCounters{store}); d.Outcome != Admit || d.Effect.Pool != PoolNew || d.Effect.Scope != Anywhere {
		t.Fatalf("in an outage: %s from %s/%s, want admitted from the new visitors' Anywhere", d.Outcome, d.Effect.Pool, d.Effect.Scope)
	}
	later := *snap
	later.Minute = t0.Add(time.Minute)
	if err := MarkSnapshotRead(context.Background(), store, &later); err != nil {
		t.Fatal(err)
	}
	if d := decide(outage, SharedCounters{store}); d.Outcome != Queue {
		t.Errorf("another gate read a later snapshot: %s, want queued", d.Outcome)
	}
}

// The outage limit of a minute: the snapshot's sessions while they may
// run, everything allotted since, the outage counters of the sessions'
// minutes; never above new_users_per_minute.
func TestOutageLimit(t *testing.T) {
	ctx := context.Background()
	length := time.Minute
	snap := &Snapshot{Room: "shop", Minute: t0, ActiveUsers: 20,
		Settings: Settings{Name: "shop", TotalActiveUsers: 50, NewUsersPerMinute: 12, SessionDuration: 2, DisableSessionRenewal: true},
		Pools:    []Pool{{Slots: 10, Scopes: []Scope{{Name: "ams", Limit: 8}, {Name: Anywhere, Limit: 2}}}}}
	store := NewMemoryCounter(func() time.Time { return t0 })
	take := func(m time.Time, n int) {
		for range n {
			if ok, err := store.TakeBelow(ctx, OutageKey("shop", m), 1000, m.Add(time.Hour)); !ok || err != nil {
				t.Fatal(ok, err)
			}
		}
	}
	take(t0.Add(length), 1)   // a stale gate's Anywhere slot
	take(t0.Add(3*length), 7) // outage minutes
	take(t0.Add(4*length), 9)
	for _, c := range []struct {
		minute int
		renew  bool
		want   int
	}{
		// m = 3: sessions of minutes 1..3: the stale minute (ams: a quarter
		// of 8 = 2, and the 1 taken from Anywhere); 50 - 3 = 47, so 12.
		{3, false, 12},
		// m = 2: the snapshot's minute too (10; its sessions have ended):
		// 50 - 13; m = 5: minutes 3 and 4: 50 - 16.
		{2, false, 12},
		{5, false, 12},
		// Renewed: 20 + 10 + 3 + 7 + 9 = 49 by minute 5.
		{5, true, 1},
		{4, true, 50 - 40},
	} {
		s := *snap
		s.Settings.DisableSessionRenewal = !c.renew
		got, ok, err := OutageLimit(ctx, store, &s, t0.Add(time.Duration(c.minute)*length))
		if err != nil || !ok || got != c.want {
			t.Errorf("minute %d, renewed %t: %d, %t, %v; want %d", c.minute, c.renew, got, ok, err, c.want)
		}
	}
	snap.Settings.TotalActiveUsers = 14
	if got, _, _ := OutageLimit(ctx, store, snap, t0.Add(3*length)); got != 11 {
		t.Errorf("total 14, minute 3: %d, want 14 - 3", got)
	}
	snap.Settings.TotalActiveUsers = 7
	if got, _, _ := OutageLimit(ctx, store, snap, t0.Add(4*length)); got != 0 {
		t.Errorf("total 7, minute 4 (7 taken in minute 3): %d, want 0", got)
	}
}
