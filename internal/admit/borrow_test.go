package admit

import (
	"testing"
	"time"
)

// A gate whose own scope and Anywhere are spent borrows another data
// center's unused slots at the pace of the minute, on that data center's
// counter, so the owner keeps what the rest of the minute brings it and
// the pool never hands out more than its slots.
func TestBorrowingCountersPace(t *testing.T) {
	snap := &Snapshot{Room: "shop", Minute: t0, MinuteSeconds: 60, PublishedAt: t0,
		Settings:       Settings{Name: "shop", TotalActiveUsers: 1000, NewUsersPerMinute: 30}.WithDefaults(),
		SlotsAvailable: 30, NewUserSlots: 30,
		Pools: []Pool{{Slots: 30, Scopes: []Scope{{Name: "ams", Limit: 12}, {Name: "fra", Limit: 12}, {Name: Anywhere, Limit: 6}}}}}
	counter := NewMemoryCounter(nil)
	strategy := BorrowingCounters{Store: counter}
	take := func(at time.Duration, dc string) (string, bool) {
		t.Helper()
		scope, ok, err := strategy.TakeSlot(t.Context(), SlotRequest{Snapshot: snap, Now: t0.Add(at), Gate: Gate{dc, dc + "-1"}, Pool: &snap.Pools[0]})
		if err != nil {
			t.Fatal(err)
		}
		return scope, ok
	}
	takeAll := func(at time.Duration, dc string) map[string]int {
		got := map[string]int{}
		for {
			scope, ok := take(at, dc)
			if !ok {
				return got
			}
			got[scope]++
		}
	}
	// 15 s in, Frankfurt's visitors take their 12 and Anywhere's 6, then a
	// quarter of Amsterdam's 12.
	if got := takeAll(15*time.Second, "fra"); got["fra"] != 12 || got[Anywhere] != 6 || got["ams"] != 3 {
		t.Fatalf("at 15 s Frankfurt took %v, want fra 12, Anywhere 6, ams 3", got)
	}
	// Amsterdam's own visitors still get the 9 left of their scope.
	if got := takeAll(20*time.Second, "ams"); got["ams"] != 9 || len(got) != 1 {
		t.Fatalf("Amsterdam took %v, want its 9 left", got)
	}
	// Nothing is left of any scope: the pool gave out exactly its slots.
	if got := takeAll(59*time.Second, "fra"); len(got) != 0 {
		t.Fatalf("at 59 s Frankfurt took %v more, past the pool's 30", got)
	}
	// A stale gate never borrows: in the next minute, on this snapshot,
	// Frankfurt gets only the stale share of its own pool.
	counter2 := NewMemoryCounter(nil)
	stale := BorrowingCounters{Store: counter2}
	got := map[string]int{}
	for {
		scope, ok, err := stale.TakeSlot(t.Context(), SlotRequest{Snapshot: snap, Now: t0.Add(65 * time.Second), Gate: Gate{"fra", "fra-1"}, Pool: &snap.Pools[0]})
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		got[scope]++
	}
	if got["ams"] != 0 || got["fra"] != StaleShare(12) || got[Anywhere] != StaleShare(6) {
		t.Errorf("a stale gate took %v, want fra %d and Anywhere %d, nothing borrowed", got, StaleShare(12), StaleShare(6))
	}
}

func TestBorrowableLimit(t *testing.T) {
	for _, c := range []struct {
		limit   int
		elapsed time.Duration
		want    int
	}{
		{12, 0, 0}, {12, 5 * time.Second, 1}, {12, 30 * time.Second, 6}, {12, 59 * time.Second, 11},
		{12, time.Minute, 12}, {12, 2 * time.Minute, 12}, {0, 30 * time.Second, 0},
	} {
		if got := BorrowableLimit(c.limit, c.elapsed, time.Minute); got != c.want {
			t.Errorf("BorrowableLimit(%d, %s) = %d, want %d", c.limit, c.elapsed, got, c.want)
		}
	}
}

// Traffic that moves from one data center to another at a minute boundary
// leaves the old one's share unused for that minute: borrowing fills it at
// the pace of the minute, the shared counters from the minute's last
// refresh interval on (release.go; they queued below the limit before),
// and neither goes past it.
func TestBorrowingFillsAShareTrafficLeft(t *testing.T) {
	for _, c := range []struct {
		name     string
		strategy func(Counter) Strategy
	}{
		{"counters", func(c Counter) Strategy { return SharedCounters{Store: c} }},
		{"counters+borrow", func(c Counter) Strategy { return BorrowingCounters{Store: c} }},
	} {
		t.Run(c.name, func(t *testing.T) {
			gates := []Gate{{"ams", "ams-1"}, {"fra", "fra-1"}}
			w := newWorld(t, Settings{Name: "shop", TotalActiveUsers: 150, NewUsersPerMinute: 60, SessionDuration: 1}, t0, 2*time.Second, gates...)
			for _, g := range w.gates {
				g.strategy = c.strategy(w.counters)
			}
			admitted := map[time.Time]int{} // looked up only
			for sec := range 4 * 60 {
				// One new visitor a second (the per-minute limit), at
				// Amsterdam for two minutes, then all at Frankfurt.
				g := "ams-1"
				if sec >= 120 {
					g = "fra-1"
				}
				var tk *Ticket
				if d := w.request(g, &tk); d.Outcome == Admit {
					admitted[MinuteOf(w.now, time.Minute)]++
				}
				for _, gt := range w.gates {
					gt.tally.Heartbeat(MinuteOf(w.now, time.Minute))
				}
				w.step(time.Second)
			}
			shift := t0.Add(2 * time.Minute)
			for m := t0; m.Before(t0.Add(4 * time.Minute)); m = m.Add(time.Minute) {
				if admitted[m] > 60 {
					t.Fatalf("minute %s admitted %d, past the limit of 60", m.Format("15:04"), admitted[m])
				}
			}
			t.Logf("the minute traffic moved admitted %d of 60 arrivals", admitted[shift])
			if got := admitted[shift]; got < 58 {
				t.Errorf("the minute traffic moved admitted %d of 60 arrivals, want at least 58", got)
			}
		})
	}
}
