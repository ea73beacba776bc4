package admit

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// A new room publishes at once, with every slot Anywhere.
func TestNewRoomPublishesAtOnce(t *testing.T) {
	r, err := NewRoom(Settings{Name: "shop", TotalActiveUsers: 200, NewUsersPerMinute: 100}, 60, t0.Add(17*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	s := r.Snapshot
	if s == nil || !s.Minute.Equal(t0) || s.SlotsAvailable != 100 || s.Status != StatusNotQueueing || s.Seq != 1 {
		t.Fatalf("first snapshot %+v", s)
	}
	if len(s.Pools) != 1 || s.Pools[0].Limit(Anywhere) != 100 {
		t.Fatalf("pools %+v, want the 100 slots Anywhere", s.Pools)
	}
	if s.Settings.SessionDuration != 5 || s.Settings.QueueingMethod != FIFO || s.Settings.QueueingStatusCode != 200 {
		t.Errorf("defaults not applied: %+v", s.Settings)
	}
	if got := r.NextWake(t0.Add(17 * time.Second)); !got.Equal(t0.Add(time.Minute + 5*time.Second)) {
		t.Errorf("next wake %s, want the next minute plus 5 s of grace", got)
	}
	if _, err := NewRoom(Settings{Name: "x", TotalActiveUsers: 1, NewUsersPerMinute: 1}, 2, t0); err == nil {
		t.Error("a 2-second minute was accepted")
	}
}

// The "How Waiting Room makes queueing decisions" post's San Jose state,
// produced by reports: 20 sessions seen in San Jose and 30 in London during
// 11:44, each admitted then.
func TestRollupFromReports(t *testing.T) {
	r, err := NewRoom(Settings{Name: "shop", TotalActiveUsers: 200, NewUsersPerMinute: 200}, 60, t0.Add(-time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	prev := t0.Add(-time.Minute)
	add := func(rep Report) {
		t.Helper()
		rep.Room, rep.Minute, rep.Final = "shop", prev, true // sent once the minute ended
		if err := r.AddReport(rep, t0); err != nil {
			t.Fatal(err)
		}
	}
	for i, n := range []int{8, 7, 5} {
		add(Report{DataCenter: "sjc", Gate: fmt.Sprintf("sjc-%d", i+1), Seq: 1, Admitted: n, Seen: n, NewVisitors: n,
			Taken: []PoolCount{{Pool: PoolNew, Scope: Anywhere, Count: n}}})
	}
	add(Report{DataCenter: "lhr", Gate: "lhr-1", Seq: 1, Admitted: 3, Seen: 3})
	add(Report{DataCenter: "lhr", Gate: "lhr-1", Seq: 2, Admitted: 30, Seen: 30, NewVisitors: 31, // replaces seq 1
		Queued: []MinuteCount{{Minute: prev, Count: 1}}, Taken: []PoolCount{{Pool: PoolNew, Scope: Anywhere, Count: 30}}})
	add(Report{DataCenter: "lhr", Gate: "lhr-1", Seq: 1, Admitted: 99, Seen: 99}) // older: ignored
	snap, ok := r.Advance(t0.Add(5 * time.Second))
	if !ok || !snap.Minute.Equal(t0) {
		t.Fatalf("no snapshot for 11:45: %+v", snap)
	}
	if snap.ActiveUsers != 50 || snap.SlotsAvailable != 150 || snap.CurrentlyWaiting != 1 || snap.Status != StatusQueueing {
		t.Fatalf("snapshot: active %d, slots %d, waiting %d, %s", snap.ActiveUsers, snap.SlotsAvailable, snap.CurrentlyWaiting, snap.Status)
	}
	if len(snap.TrafficHistory) != 2 || snap.TrafficHistory[1].DataCenter != "sjc" || snap.TrafficHistory[1].Share != 0.10 ||
		len(snap.TrafficHistory[1].Gates) != 3 || snap.TrafficHistory[0].Share != 0.15 || snap.AnywhereShare != 0.75 || snap.GatesActive != 4 {
		t.Fatalf("traffic %+v anywhere %v gates %d", snap.TrafficHistory, snap.AnywhereShare, snap.GatesActive)
	}
	// One visitor waits (bucket 11:44) and gets a reserved slot; the other
	// 149 are split 10% / 15% / Anywhere.
	if len(snap.Buckets) != 1 || snap.Buckets[0].ReservedSlots != 1 || snap.NewUserSlots != 149 {
		t.Fatalf("buckets %+v, new %d", snap.Buckets, snap.NewUserSlots)
	}
	np := snap.Pool(time.Time{})
	if np.Limit("sjc") != 14 || np.Limit("lhr") != 22 || np.Limit(Anywhere) != 113 {
		t.Errorf("new visitors' pool %+v, want sjc 14 (14.9), lhr 22 (22.35), Anywhere 113", np)
	}
	// Let-in rate: 50 admitted over the one minute the room existed.
	if snap.LetInPerMinute != 50 || !snap.Estimate.Known {
		t.Errorf("let in %v, estimate %+v", snap.LetInPerMinute, snap.Estimate)
	}
}

// Sessions count until session_duration minutes after their last check-in;
// renewals move them, revocations end them, and with renewal disabled they
// run from admission.
func TestActiveUsersFollowSessions(t *testing.T) {
	for _, renewal := range []bool{true, false} {
		t.Run(fmt.Sprintf("renewal %v", renewal), func(t *testing.T) {
			s := Settings{Name: "shop", TotalActiveUsers: 1000, NewUsersPerMinute: 1000, SessionDuration: 3, DisableSessionRenewal: !renewal,
				EnabledOriginCommands: []string{"revoke"}}
			w := newWorld(t, s, t0, 0, Gate{"ams", "ams-1"})
			tickets := make([]*Ticket, 10)
			for i := range tickets {
				if d := w.request("ams-1", &tickets[i]); d.Outcome != Admit {
					t.Fatalf("visitor %d: %s", i, d.Outcome)
				}
			}
			w.step(65 * time.Second)
			if a := w.room.Snapshot.ActiveUsers; a != 10 {
				t.Fatalf("minute 1: active %d, want 10", a)
			}
			// Visitors 0-4 keep browsing; visitor 9 is revoked.
			eff, ok := Revoke(w.gate("ams-1").snap, tickets[9], w.now)
			if !ok {
				t.Fatal("revoke refused")
			}
			w.gate("ams-1").tally.Add(eff)
			for m := 1; m <= 4; m++ {
				for i := range 5 {
					if d := w.request("ams-1", &tickets[i]); d.Outcome != Pass && d.Outcome != Admit {
						t.Fatalf("minute %d visitor %d: %s", m, i, d.Outcome)
					}
				}
				w.step(time.Minute)
			}
			// At minute 5: the idle visitors' sessions (minute 0) ended after
			// 3 minutes; the browsing ones were renewed into minute 4 — or,
			// without renewal, ended at minute 3 and were admitted again.
			want := 5
			if a := w.room.Snapshot.ActiveUsers; a != want {
				t.Fatalf("minute 5: active %d, want %d", a, want)
			}
			if !renewal && w.room.Ledger.Totals(t0.Add(3*time.Minute)).Admitted != 5 {
				t.Error("without renewal the browsing visitors are admitted again at minute 3")
			}
		})
	}
}

// A queued visitor is counted once a minute; refreshing early changes
// nothing and is reported.
func TestWaitingCountsAndHammering(t *testing.T) {
	w := newWorld(t, Settings{Name: "shop", TotalActiveUsers: 1, NewUsersPerMinute: 1, RefreshIntervalSeconds: 20}, t0, 0, Gate{"ams", "ams-1"}, Gate{"fra", "fra-1"})
	var first, second *Ticket
	if d := w.request("ams-1", &first); d.Outcome != Admit {
		t.Fatal(d.Outcome)
	}
	// A ticket handed out is not a visitor waiting: the second visitor is
	// counted when it comes back, which a FIFO room asks of it at once.
	d := w.request("ams-1", &second)
	if d.Outcome != Queue || d.Reason != ReasonLimits || d.RefreshIn != time.Second || d.Effect.Waiting != 0 {
		t.Fatalf("second visitor: %s %s refresh %s waiting %d", d.Outcome, d.Reason, d.RefreshIn, d.Effect.Waiting)
	}
	w.step(time.Second)
	d = w.request("ams-1", &second)
	if d.Outcome != Queue || d.Reason != ReasonLimits || d.Effect.Waiting != 1 || d.RefreshIn < 16*time.Second || d.RefreshIn > 24*time.Second {
		t.Fatalf("second visitor, back: %s %s refresh %s waiting %d", d.Outcome, d.Reason, d.RefreshIn, d.Effect.Waiting)
	}
	held := *second
	w.step(5 * time.Second)
	d = w.request("fra-1", &second) // hammering at another gate
	if d.Outcome != Queue || d.Reason != ReasonEarlyRefresh || !d.Effect.EarlyRefresh || d.SetTicket || *second != held {
		t.Fatalf("early refresh: %+v", d)
	}
	w.step(25 * time.Second)
	if d = w.request("fra-1", &second); d.Reason != ReasonLimits || d.Effect.Waiting != 0 {
		t.Fatalf("on-time check-in in the same minute: %+v (counted twice?)", d)
	}
	w.step(30 * time.Second)
	w.request("ams-1", &second)
	w.step(10 * time.Second)
	s := w.room.Snapshot
	if s.CurrentlyWaiting != 1 || len(s.Buckets) != 1 || !s.Buckets[0].Key.Equal(t0) || s.Status != StatusQueueing {
		t.Fatalf("snapshot after 2 minutes: waiting %d buckets %+v", s.CurrentlyWaiting, s.Buckets)
	}
	if got := w.room.Ledger.Totals(t0).EarlyRefreshes; got != 1 {
		t.Errorf("early refreshes reported %d, want 1", got)
	}
	// The first session (5 minutes) blocks the one slot.
	if s.ActiveUsers != 1 || s.SlotsAvailable != 0 {
		t.Errorf("active %d, slots %d", s.ActiveUsers, s.SlotsAvailable)
	}
}

// "Waiting Room: Random Queueing": users 1..5 wait FIFO (5 → 4 → 3 → 2 → 1, 1
// next). The room switches to random and user 4 gets in; switched back to
// FIFO the order is 5 → 3 → 2 → 1.
func TestFIFORandomFIFOKeepsOrder(t *testing.T) {
	s := Settings{Name: "shop", TotalActiveUsers: 1, NewUsersPerMinute: 1, SessionDuration: 30}
	w := newWorld(t, s, t0, 0, Gate{"ams", "ams-1"})
	var filler *Ticket
	if d := w.request("ams-1", &filler); d.Outcome != Admit {
		t.Fatal(d.Outcome)
	}
	users := make([]*Ticket, 6) // users[1..5]
	// Each user arrives in a minute of its own; everyone waiting checks in
	// every minute.
	for u := 1; u <= 5; u++ {
		w.step(10 * time.Second)
		for v := 1; v <= u; v++ {
			if d := w.request("ams-1", &users[v]); d.Outcome != Queue {
				t.Fatalf("user %d at minute %d: %s", v, u, d.Outcome)
			}
		}
		w.step(time.Second) // the new user comes back, to be counted
		if d := w.request("ams-1", &users[u]); d.Outcome != Queue || d.Effect.Waiting != 1 {
			t.Fatalf("user %d back at minute %d: %s %+v", u, u, d.Outcome, d.Effect)
		}
		w.step(49 * time.Second)
	}
	w.step(10 * time.Second)
	checkAll := func(order []int) (admitted []int) {
		for _, v := range order {
			if users[v].Admitted() {
				continue
			}
			if d := w.request("ams-1", &users[v]); d.Outcome == Admit {
				admitted = append(admitted, v)
			}
		}
		return admitted
	}
	setSettings := func(method QueueingMethod, total int) {
		t.Helper()
		ns := w.room.Settings
		ns.QueueingMethod, ns.TotalActiveUsers = method, total
		if _, err := w.room.SetSettings(ns, w.room.SettingsVersion, w.now); err != nil {
			t.Fatal(err)
		}
		w.sync()
	}
	if b := w.room.Snapshot.Buckets; len(b) != 5 {
		t.Fatalf("buckets %+v, want 5 of one each", b)
	}
	// Random, one slot: whoever checks in first after its release moment —
	// user 4 — gets it.
	setSettings(Random, 2)
	snap := w.room.Snapshot
	for PacedLimit(1, w.now.Sub(snap.Minute), time.Minute, snap.ReleaseSeed(snap.Minute, PoolNew, Anywhere)) == 0 {
		w.step(time.Second)
	}
	if got := checkAll([]int{4, 5, 3, 2, 1}); fmt.Sprint(got) != "[4]" {
		t.Fatalf("random admitted %v, want [4]", got)
	}
	// That was the minute's one new user. The next minute, back to FIFO
	// with one more slot: user 1 is next, whoever checks in first.
	w.step(time.Minute)
	setSettings(FIFO, 3)
	if got := checkAll([]int{5, 3, 2, 1}); fmt.Sprint(got) != "[1]" {
		t.Fatalf("FIFO admitted %v, want [1]", got)
	}
	// A minute later the queue is 5 → 3 → 2 (user u arrived in minute u-1).
	w.step(20 * time.Second)
	checkAll([]int{5, 3, 2})
	w.step(time.Minute)
	var keys []string
	for _, b := range w.room.Snapshot.Buckets {
		keys = append(keys, b.Key.Sub(t0).String())
	}
	if fmt.Sprint(keys) != "[1m0s 2m0s 4m0s]" {
		t.Errorf("waiting buckets %v, want users 2, 3 and 5's", keys)
	}
}

// Switching methods in the middle of a queue loses no one's place and the
// reservations are tracked in random mode too.
func TestRandomKeepsReservations(t *testing.T) {
	w := newWorld(t, Settings{Name: "shop", TotalActiveUsers: 10, NewUsersPerMinute: 2, QueueingMethod: Random}, t0, 0, Gate{"ams", "ams-1"})
	tickets := make([]*Ticket, 6)
	for i := range tickets {
		w.request("ams-1", &tickets[i])
	}
	w.step(25 * time.Second) // the queued come back, and are counted
	for i := range tickets {
		if !tickets[i].Admitted() {
			if d := w.request("ams-1", &tickets[i]); d.Outcome != Queue || d.Effect.Waiting != 1 {
				t.Fatalf("visitor %d back: %s %+v", i, d.Outcome, d.Effect)
			}
		}
	}
	w.step(40 * time.Second)
	s := w.room.Snapshot
	if s.CurrentlyWaiting != 4 || len(s.Buckets) != 1 || s.Buckets[0].ReservedSlots != 2 || !s.PacedRelease {
		t.Fatalf("random snapshot %+v", s)
	}
	if p := s.Pool(t0); p != nil {
		t.Errorf("random mode uses no bucket pool: %+v", p)
	}
}

// Property: with shared counters and snapshots that reach the gates late,
// neither limit is ever overshot, whatever the traffic.
func TestCountersNeverOvershoot(t *testing.T) {
	for seed := uint64(1); seed <= 6; seed++ {
		for _, delay := range []time.Duration{0, 5 * time.Second, 20 * time.Second} {
			t.Run(fmt.Sprintf("seed %d delay %s", seed, delay), func(t *testing.T) {
				checkNoOvershoot(t, seed, delay)
			})
		}
	}
}

func checkNoOvershoot(t *testing.T, seed uint64, delay time.Duration) {
	rng := rand.New(rand.NewPCG(seed, 42))
	s := Settings{Name: "shop", TotalActiveUsers: 120, NewUsersPerMinute: 50, SessionDuration: 2,
		QueueingMethod: []QueueingMethod{FIFO, Random}[seed%2]}
	var gates []Gate
	for _, dc := range []string{"ams", "fra", "sjc"} {
		for i := range 3 {
			gates = append(gates, Gate{dc, fmt.Sprintf("%s-%d", dc, i)})
		}
	}
	w := newWorld(t, s, t0, delay, gates...)
	type visitor struct {
		ticket *Ticket
		gate   int
		leave  time.Time
	}
	var visitors []*visitor
	admittedIn := map[time.Time]int{}
	peakActive := 0
	for sec := 0; sec < 25*60; sec++ {
		minute := sec / 60
		// Quiet, then a spike, then a regional surge.
		rate := 0.3
		switch {
		case minute >= 8 && minute < 12:
			rate = 6
		case minute >= 16 && minute < 19:
			rate = 3
		}
		for n := poisson(rng, rate); n > 0; n-- {
			g := rng.IntN(len(gates))
			if minute >= 16 {
				g = rng.IntN(3) // all in one data center
			}
			visitors = append(visitors, &visitor{gate: g, leave: w.now.Add(time.Duration(30+rng.IntN(240)) * time.Second)})
		}
		for _, v := range visitors {
			due := v.ticket == nil || (!v.ticket.Admitted() && !w.now.Before(v.ticket.LastCheckIn().Add(time.Duration(v.ticket.RefreshIntervalSeconds)*time.Second))) ||
				(v.ticket.Admitted() && w.now.Before(v.leave) && rng.IntN(10) == 0)
			if !due || (v.ticket != nil && v.ticket.Admitted() && !w.now.Before(v.leave)) {
				continue
			}
			d := w.request(gates[v.gate].ID, &v.ticket)
			if d.Outcome == Admit {
				admittedIn[MinuteOf(w.now, time.Minute)]++
			}
		}
		active := 0
		for _, v := range visitors {
			if v.ticket.SessionValid(w.now, s.SessionDuration, time.Minute, false) {
				active++
			}
		}
		peakActive = max(peakActive, active)
		if active > s.TotalActiveUsers {
			sn := w.room.Snapshot
			sum := 0
			for _, p := range sn.Pools {
				sum += p.Slots
			}
			t.Logf("snapshot %s active %d slots %d pools %d %+v", sn.Minute.Format("15:04:05"), sn.ActiveUsers, sn.SlotsAvailable, sum, sn.Pools)
			for m := t0; !m.After(w.now); m = m.Add(time.Minute) {
				t.Logf("%s admitted %d ledger %d", m.Format("15:04"), admittedIn[m], w.room.Ledger.Totals(m).Admitted)
			}
			t.Fatalf("second %d: %d active sessions, limit %d", sec, active, s.TotalActiveUsers)
		}
		w.step(time.Second)
	}
	for m, n := range admittedIn {
		if n > s.NewUsersPerMinute {
			t.Fatalf("minute %s admitted %d, limit %d", m.Format("15:04"), n, s.NewUsersPerMinute)
		}
	}
	if peakActive < s.TotalActiveUsers*8/10 {
		t.Errorf("peak active %d: the traffic never came near the limit, so the test proves little", peakActive)
	}
}

func poisson(rng *rand.Rand, mean float64) int {
	n, p := 0, rng.Float64()
	for l := math.Exp(-mean); p > l; p *= rng.Float64() {
		n++
	}
	return n
}

// Uneven arrivals across the gates of a data center never queue anyone
// before the limits with shared counters; the even split does.
func TestNoEarlyQueueingAcrossGates(t *testing.T) {
	for _, c := range []struct {
		strategy  string
		wantQueue bool
	}{{"counters", false}, {"even", true}} {
		t.Run(c.strategy, func(t *testing.T) {
			gates := []Gate{{"ams", "ams-1"}, {"ams", "ams-2"}, {"ams", "ams-3"}, {"ams", "ams-4"}}
			w := newWorld(t, Settings{Name: "shop", TotalActiveUsers: 10000, NewUsersPerMinute: 100, SessionDuration: 1}, t0, 2*time.Second, gates...)
			if c.strategy == "even" {
				mc := NewMemoryCounter(func() time.Time { return w.now })
				for _, g := range w.gates {
					g.strategy = EvenSplit{Store: mc}
				}
			}
			queued, admitted := 0, 0
			for sec := range 10 * 60 {
				// 95 new visitors a minute, 90% of them at one gate; every
				// gate reports each minute.
				if n := arrivalsAt(sec); n > 0 {
					for i := range n {
						var tk *Ticket
						g := "ams-1"
						if (sec+i)%10 == 0 {
							g = gates[1+(sec/10)%3].ID
						}
						d := w.request(g, &tk)
						switch d.Outcome {
						case Admit:
							admitted++
						case Queue:
							if queued == 0 {
								t.Logf("first queued at %s (gate %s, %s, snapshot of %s)", w.now.Format("15:04:05"), g, d.Reason, w.gate(g).snap.Minute.Format("15:04"))
							}
							queued++
						}
					}
				}
				if sec%60 == 30 {
					for _, g := range w.gates {
						g.tally.Heartbeat(MinuteOf(w.now, time.Minute))
					}
				}
				w.step(time.Second)
			}
			if (queued > 0) != c.wantQueue {
				t.Errorf("%s: %d admitted, %d queued", c.strategy, admitted, queued)
			}
			if c.strategy == "counters" && admitted != 10*95 {
				t.Errorf("admitted %d of %d", admitted, 10*95)
			}
		})
	}
}

// arrivalsAt spreads 95 arrivals over each minute.
func arrivalsAt(sec int) int {
	s := sec % 60
	return (s+1)*95/60 - s*95/60
}

// Pools kept alive only by what stale gates might still spend die out: a
// room whose queued buckets are abandoned minute after minute does not pile
// up pools.
func TestCarriedPoolsDieOut(t *testing.T) {
	r, err := NewRoom(Settings{Name: "shop", TotalActiveUsers: 1000, NewUsersPerMinute: 100}, 60, t0)
	if err != nil {
		t.Fatal(err)
	}
	now := t0
	for range 40 {
		m := MinuteOf(now, time.Minute)
		if err := r.AddReport(Report{Room: "shop", DataCenter: "ams", Gate: "ams-1", Minute: m, Seq: 1, Queued: []MinuteCount{{Minute: m, Count: 30}}}, now); err != nil {
			t.Fatal(err)
		}
		now = now.Add(time.Minute)
		r.Advance(now.Add(5 * time.Second))
	}
	if n := len(r.Snapshot.Pools); n > 6 {
		t.Fatalf("%d pools after 40 minutes of abandoned buckets: %+v", n, r.Snapshot.Pools)
	}
}
