package admit

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"
)

// An event pre-queues, then shuffles (or not) the pre-queued visitors at its
// start, with its own limits, and ends.
func TestEventPrequeueAndShuffle(t *testing.T) {
	for _, shuffle := range []bool{false, true} {
		t.Run(fmt.Sprintf("shuffle %v", shuffle), func(t *testing.T) {
			w := newWorld(t, Settings{Name: "shop", TotalActiveUsers: 100, NewUsersPerMinute: 50}, t0, 0, Gate{"ams", "ams-1"})
			pre, start, end := t0.Add(2*time.Minute), t0.Add(5*time.Minute), t0.Add(9*time.Minute)
			one := 1
			e := Event{Name: "launch", PrequeueStartTime: &pre, EventStartTime: start, EventEndTime: end,
				ShuffleAtEventStart: shuffle, NewUsersPerMinute: &one}
			if _, err := w.room.AddEvent(e, w.now); err != nil {
				t.Fatal(err)
			}
			if wake := w.room.NextWake(w.now); !wake.Equal(t0.Add(65 * time.Second)) {
				t.Errorf("next wake %s", wake)
			}
			users := make([]*Ticket, 3) // A, B, C arrive in minutes 2, 3, 4
			// Their draws put B first, then C, then A (ShufflePosition).
			w.lots = map[**Ticket]uint64{&users[0]: lotAt(pre, 0.7, 1), &users[1]: lotAt(pre, 0, 0.3), &users[2]: lotAt(pre, 0.4, 0.6)}
			w.step(2*time.Minute + 10*time.Second)
			if s := w.room.Snapshot; s.Status != StatusEventPrequeueing || s.Event == nil || s.Event.Phase != EventPrequeueing || s.Estimate.Known {
				t.Fatalf("at 2:10 %s %+v", s.Status, s.Event)
			}
			if got := s2(w.room.Snapshot.StatusAPI()); got != "event_prequeueing launch" {
				t.Errorf("status API %s", got)
			}
			for m := range 3 {
				for u := 0; u <= m; u++ {
					if d := w.request("ams-1", &users[u]); d.Outcome != Prequeue || d.Reason != ReasonPrequeue || !d.Wait.QueueAll {
						t.Fatalf("minute %d user %d: %s %s", m+2, u, d.Outcome, d.Reason)
					}
				}
				// The new user comes back at once, and is counted.
				w.step(time.Second)
				if d := w.request("ams-1", &users[m]); d.Outcome != Prequeue || d.Reason != ReasonPrequeue || d.Effect.Waiting != 1 {
					t.Fatalf("minute %d user %d, back: %s %s %+v", m+2, m, d.Outcome, d.Reason, d.Effect)
				}
				w.step(time.Minute - time.Second)
			}
			// 5:10: the event runs; one new user a minute.
			s := w.room.Snapshot
			if s.Status != StatusQueueing || s.Event.Phase != EventActive || s.Settings.NewUsersPerMinute != 1 || s.SlotsAvailable != 1 {
				t.Fatalf("at 5:10: %s", s)
			}
			if shuffle {
				if len(s.Buckets) != 1 || !s.Buckets[0].Key.Equal(pre) || s.Buckets[0].Waiting != 3 || len(s.Shuffled) != 1 {
					t.Fatalf("shuffled buckets %+v %+v", s.Buckets, s.Shuffled)
				}
			} else if len(s.Buckets) != 3 {
				t.Fatalf("buckets %+v", s.Buckets)
			}
			// C checks in first, then B, then A, every minute. In order the
			// slots go to A, B, C; shuffled, to the order of their draws —
			// B, C, A — however early each checks in.
			want := []string{"A", "B", "C"}
			if shuffle {
				want = []string{"B", "C", "A"}
			}
			for m := range 3 {
				got := ""
				for _, u := range []int{2, 1, 0} {
					if users[u].Admitted() {
						continue
					}
					if d := w.request("ams-1", &users[u]); d.Outcome == Admit {
						got += string(rune('A' + u))
					}
				}
				if got != want[m] {
					t.Errorf("minute %d of the event: admitted %q, want %q", m, got, want[m])
				}
				if shuffle && m == 0 {
					// A change republishing the minute passes no one.
					passed := w.room.Snapshot.Buckets[0].Passed
					ns := w.room.Settings
					ns.RefreshIntervalSeconds = 25
					if _, err := w.room.SetSettings(ns, w.room.SettingsVersion, w.now); err != nil {
						t.Fatal(err)
					}
					if got := w.room.Snapshot.Buckets[0].Passed; got != passed {
						t.Errorf("republished: passed %v, was %v", got, passed)
					}
				}
				w.step(time.Minute)
			}
			// After the end the room's own limits are back.
			w.step(end.Sub(w.now) + 6*time.Second)
			if s := w.room.Snapshot; s.Event != nil || s.Settings.NewUsersPerMinute != 50 {
				t.Errorf("after the event: %s", s)
			}
			if len(w.room.Events) != 0 {
				t.Errorf("ended event kept: %v", w.room.Events)
			}
		})
	}
}

// lotAt finds a lot whose position in the pre-queue shuffled from from is
// in [lo, hi).
func lotAt(from time.Time, lo, hi float64) uint64 {
	for lot := uint64(1); ; lot++ {
		if p := ShufflePosition(lot, from); p >= lo && p < hi {
			return lot
		}
	}
}

// A shuffled bucket's turn: the positions passed before, and as many of
// the rest as the minute reserves for; only FIFO rooms keep to it.
func TestShuffledTurn(t *testing.T) {
	for _, c := range []struct {
		b    Bucket
		want float64
	}{{Bucket{Waiting: 4, ReservedSlots: 1}, 0.25}, {Bucket{Waiting: 4, ReservedSlots: 2, Passed: 0.5}, 0.75},
		{Bucket{Waiting: 3, ReservedSlots: 3, Passed: 0.2}, 1}, {Bucket{}, 1}, {Bucket{Waiting: 5, Passed: 0.4}, 0.4}} {
		if got := c.b.Turn(); got != c.want {
			t.Errorf("%+v: turn %v, want %v", c.b, got, c.want)
		}
	}
	from := t0.Add(-3 * time.Minute)
	first, last := lotAt(from, 0, 0.2), lotAt(from, 0.8, 1)
	snap := &Snapshot{Settings: Settings{QueueingMethod: FIFO}, Shuffled: []TimeRange{{From: from, To: t0}},
		Buckets: []Bucket{{Key: from, Waiting: 10, ReservedSlots: 5}, {Key: t0, Waiting: 10, ReservedSlots: 0}}}
	if !snap.InTurn(from, first) || snap.InTurn(from, last) || !snap.InTurn(t0, last) {
		t.Errorf("FIFO: first in turn %v, last %v, unshuffled bucket %v", snap.InTurn(from, first), snap.InTurn(from, last), snap.InTurn(t0, last))
	}
	snap.Settings.QueueingMethod = Random
	if !snap.InTurn(from, last) {
		t.Error("a random queue kept a shuffled order")
	}
}

func s2(a StatusAPI) string { return string(a.Status) + " " + a.EventID }

// A running event ends at once when cancelled.
func TestCancelEvent(t *testing.T) {
	w := newWorld(t, Settings{Name: "shop", TotalActiveUsers: 100, NewUsersPerMinute: 50}, t0, 0)
	n := 5
	if _, err := w.room.AddEvent(Event{Name: "flash", EventStartTime: t0, EventEndTime: t0.Add(time.Hour), NewUsersPerMinute: &n, TotalActiveUsers: &n}, t0); err != nil {
		t.Fatal(err)
	}
	if s := w.room.Snapshot; s.Settings.NewUsersPerMinute != 5 || s.SlotsAvailable != 5 {
		t.Fatalf("during the event: %s", s)
	}
	if err := w.room.CheckCancel("nope"); err == nil {
		t.Error("cancelled an unknown event")
	}
	v := w.room.SettingsVersion
	s, err := w.room.CancelEvent("flash", t0.Add(time.Second))
	if err != nil || s.Settings.NewUsersPerMinute != 50 || w.room.SettingsVersion != v+1 {
		t.Fatalf("after cancel: %v %s", err, s)
	}
}

func TestSettingsChanges(t *testing.T) {
	r, err := NewRoom(Settings{Name: "shop", TotalActiveUsers: 100, NewUsersPerMinute: 50}, 60, t0)
	if err != nil {
		t.Fatal(err)
	}
	s := r.Settings
	s.Name = "other"
	var inv *InvalidError
	if err := r.CheckSettings(s, 0); !errors.As(err, &inv) || inv.First().Field != "name" {
		t.Errorf("rename: %v", err)
	}
	s = r.Settings
	s.NewUsersPerMinute = 0 // unset is invalid for a limit
	if _, err := r.SetSettings(s, 0, t0); !errors.As(err, &inv) || inv.First().Field != "new_users_per_minute" {
		t.Errorf("invalid limit: %v", err)
	}
	if r.SettingsVersion != 1 || r.Settings.NewUsersPerMinute != 50 {
		t.Fatalf("a refused change changed the room: %+v", r.Settings)
	}
	s.NewUsersPerMinute = 70
	if err := r.CheckSettings(s, 7); !errors.Is(err, ErrVersion) {
		t.Errorf("stale version: %v", err)
	}
	snap, err := r.SetSettings(s, 1, t0.Add(time.Second))
	if err != nil || snap.SlotsAvailable != 70 || snap.SettingsVersion != 2 || snap.Seq != 2 || !snap.Minute.Equal(t0) {
		t.Fatalf("update: %v %+v", err, snap)
	}
}

// The room's state survives its JSON form (continue-as-new) and the same
// inputs give the same snapshots.
func TestRoomStateRoundTripAndDeterminism(t *testing.T) {
	run := func() (*Room, []byte) {
		w := newWorld(t, Settings{Name: "shop", TotalActiveUsers: 30, NewUsersPerMinute: 10, QueueingMethod: Random},
			t0, 3*time.Second, Gate{"ams", "ams-1"}, Gate{"fra", "fra-1"}, Gate{"fra", "fra-2"})
		tickets := make([]*Ticket, 40)
		for sec := range 300 {
			i := sec % len(tickets)
			w.request([]string{"ams-1", "fra-1", "fra-2"}[sec%3], &tickets[i])
			w.step(time.Second)
		}
		data, err := json.Marshal(w.room)
		if err != nil {
			t.Fatal(err)
		}
		return w.room, data
	}
	r1, a := run()
	_, b := run()
	if string(a) != string(b) {
		t.Fatal("the same traffic gave different room states")
	}
	var back Room
	if err := json.Unmarshal(a, &back); err != nil {
		t.Fatal(err)
	}
	again, _ := json.Marshal(&back)
	if string(again) != string(a) {
		t.Fatal("the room's JSON does not round-trip")
	}
	// Both go on to the same next snapshot.
	next := r1.NextWake(r1.Snapshot.PublishedAt)
	s1, _ := r1.Advance(next)
	s2, _ := back.Advance(next)
	if !reflect.DeepEqual(s1, s2) {
		t.Fatalf("after a round trip the next snapshot differs:\n%+v\n%+v", s1, s2)
	}
	if len(r1.Recent) == 0 || len(r1.Ledger.Closed) == 0 {
		t.Errorf("recent %d, closed %d", len(r1.Recent), len(r1.Ledger.Closed))
	}
}

// Reports of minutes already folded are dropped; the ledger stays bounded.
func TestLedgerBounds(t *testing.T) {
	var l Ledger
	for m := range 100 {
		minute := t0.Add(time.Duration(m) * time.Minute)
		l.Add(Report{Room: "shop", DataCenter: "ams", Gate: "ams-1", Minute: minute, Seq: 1, Admitted: 1})
		l.Close(minute.Add(-time.Minute), minute.Add(-ledgerMinutes*time.Minute))
	}
	if len(l.Closed) > ledgerMinutes || len(l.Open) != 2 {
		t.Fatalf("closed %d, open %d", len(l.Closed), len(l.Open))
	}
	if l.Add(Report{Room: "shop", DataCenter: "ams", Gate: "ams-2", Minute: t0, Seq: 1}) || l.Dropped != 1 {
		t.Errorf("a report of a closed minute was kept")
	}
}

// The floors under an allocation (stale spending, slots taken this minute)
// are honoured and cost the new visitors' Anywhere scope first.
func TestAllocateFloors(t *testing.T) {
	shares, _ := Shares([]DataCenterUsers{{DataCenter: "ams", Users: 50}, {DataCenter: "fra", Users: 50}}, 200)
	b := t0.Add(-time.Minute)
	buckets, newSlots := Reserve([]Bucket{{Key: b, Waiting: 20}}, 100)
	pools := Allocate(AllocationInput{Method: FIFO, Slots: 100, Buckets: buckets, NewUserSlots: newSlots, Shares: shares, TotalActiveUsers: 200,
		Carry: []Remainder{{Scope: "ams", Slots: 30}, {Bucket: t0.Add(-2 * time.Minute), Scope: Anywhere, Slots: 5}, {Scope: "ams", Slots: 10}}})
	sum := 0
	for _, p := range pools {
		sum += p.Slots
	}
	np := pools[0]
	// Ideal: new 80 = ams 20, fra 20, Anywhere 40; bucket 20 Anywhere. The
	// floors add 10 to ams and 5 to an old bucket: Anywhere gives up 15.
	if sum != 100 || np.Limit("ams") != 30 || np.Limit("fra") != 20 || np.Limit(Anywhere) != 25 ||
		pools[1].Limit(Anywhere) != 5 || pools[2].Limit(Anywhere) != 20 {
		t.Fatalf("pools %+v (sum %d)", pools, sum)
	}
}
