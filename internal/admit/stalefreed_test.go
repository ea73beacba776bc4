package admit

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// boundRoom is a room bound by total_active_users: 40 admitted at 11:43,
// the 20 slots left at 11:44, so 11:45 begins with 60 of 60 active and no
// slot, though the 40 sessions of 11:43 end during it (2-minute sessions).
// queued visitors check in at 11:45 (bucket 11:45).
func boundRoom(t *testing.T, legacy bool, queued int) *Room {
	t.Helper()
	r, err := NewRoom(Settings{Name: "shop", TotalActiveUsers: 60, NewUsersPerMinute: 40, SessionDuration: 2}, 60, t0.Add(-2*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if legacy {
		r.Rev = RevStaleFreed - 1
	}
	add := func(minute time.Time, rep Report) {
		t.Helper()
		// Sent once the minute ended: final.
		rep.Room, rep.Minute, rep.DataCenter, rep.Gate, rep.Seq, rep.Final = "shop", minute, "sjc", "sjc-1", 1, true
		if err := r.AddReport(rep, minute.Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
	}
	add(t0.Add(-2*time.Minute), Report{NewVisitors: 40, Admitted: 40, Taken: []PoolCount{{Pool: PoolNew, Scope: Anywhere, Count: 40}}})
	if s, _ := r.Advance(t0.Add(-time.Minute + 5*time.Second)); s.SlotsAvailable != 20 {
		t.Fatalf("11:44: %d slots, want 20", s.SlotsAvailable)
	}
	add(t0.Add(-time.Minute), Report{NewVisitors: 20, Admitted: 20, Taken: []PoolCount{{Pool: PoolNew, Scope: Anywhere, Count: 20}}})
	if s, _ := r.Advance(t0.Add(5 * time.Second)); s.ActiveUsers != 60 || s.SlotsAvailable != 0 {
		t.Fatalf("11:45: %d active, %d slots, want 60 and none", s.ActiveUsers, s.SlotsAvailable)
	}
	if queued > 0 {
		add(t0, Report{NewVisitors: queued, Queued: []MinuteCount{{Minute: t0, Count: queued}}})
	}
	return r
}

// A minute bound by total_active_users says how many places of sessions
// ending in it gates still on its snapshot may fill in the next minute:
// the sessions expiring in it (40 of 11:43), at most half of
// new_users_per_minute (20). The next minute holds them in the new
// visitors' pool, Anywhere, taken from the newest reservation, never past
// its slots. A run begun before (legacy) publishes and holds none.
func TestRoomHoldsStaleFreedPlaces(t *testing.T) {
	for _, legacy := range []bool{false, true} {
		t.Run(fmt.Sprintf("legacy %v", legacy), func(t *testing.T) {
			r := boundRoom(t, legacy, 30)
			want := 20
			if legacy {
				want = 0
			}
			if got := r.Snapshot.StaleFreed; got != want {
				t.Fatalf("11:45's StaleFreed %d, want %d", got, want)
			}
			s, _ := r.Advance(t0.Add(time.Minute + 5*time.Second))
			// 20 active (11:44's), 40 slots: 30 reserved for 11:45's bucket,
			// 10 left for new visitors, all Anywhere (nobody was seen).
			if s.SlotsAvailable != 40 || s.NewUserSlots != 10 {
				t.Fatalf("11:46: %d slots, %d for new visitors, want 40 and 10", s.SlotsAvailable, s.NewUserSlots)
			}
			newAnywhere, reserved, sum := s.Pool(time.Time{}).Limit(Anywhere), s.Pool(t0).Limit(Anywhere), 0
			for _, p := range s.Pools {
				sum += p.Slots
			}
			wantNew, wantReserved := 20, 20
			if legacy {
				wantNew, wantReserved = 10, 30
			}
			if newAnywhere != wantNew || reserved != wantReserved || sum != 40 {
				t.Errorf("11:46: new visitors Anywhere %d, bucket 11:45 %d, pools %d; want %d, %d, 40",
					newAnywhere, reserved, sum, wantNew, wantReserved)
			}
		})
	}
}

// A gate still on 11:45's snapshot in the first seconds of 11:46 admits new
// visitors in the place of the sessions counted at 11:45's start that have
// ended since, one per ended session (also those ending as it decides), at
// most StaleFreed, less what 11:45 handed out beyond its slots, on the new
// visitors' Anywhere counter of 11:46 that the room's hold covers. (Before,
// it queued them all: 11:45's snapshot had no slot and no headroom.)
func TestStaleGateAdmitsInPlaceOfEndedSessions(t *testing.T) {
	ctx := context.Background()
	snap := boundRoom(t, false, 0).Snapshot
	for _, tc := range []struct {
		name             string
		endedIn, endedAt int // sessions ending in 11:45, at 11:46:01
		spentBeyond      int // taken beyond 11:45's slots (freed places)
		want, wantLater  int // admitted at 11:46:02, at 11:46:03 after the later ones ended
	}{
		{"fewer ended than the cap", 5, 3, 0, 5, 8},
		{"the cap", 25, 3, 0, 20, 20},
		{"spent in the minute", 5, 3, 4, 1, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now := t0.Add(time.Minute + 500*time.Millisecond)
			c := NewMemoryCounter(func() time.Time { return now })
			for i := 0; i < tc.endedIn; i++ {
				_ = c.MoveSession(ctx, "shop", time.Time{}, t0.Add(30*time.Second))
			}
			for i := 0; i < tc.endedAt; i++ {
				_ = c.MoveSession(ctx, "shop", time.Time{}, t0.Add(time.Minute+1500*time.Millisecond))
			}
			for i := 0; i < 10; i++ { // alive past the minute: never freed
				_ = c.MoveSession(ctx, "shop", time.Time{}, t0.Add(2*time.Minute))
			}
			key := CounterKey("shop", t0, PoolNew, Anywhere)
			for i := 0; i < tc.spentBeyond; i++ {
				_, _ = c.TakeBelow(ctx, key, int64(tc.spentBeyond), t0.Add(5*time.Minute))
			}
			admit := func(at time.Time, n int) int {
				now = at
				got := 0
				for i := 0; i < n; i++ {
					d, err := Decide(ctx, Input{Now: at, Snapshot: snap, Gate: Gate{DataCenter: "sjc", ID: "g1"}, Strategy: SharedCounters{Store: c}})
					if err != nil {
						t.Fatal(err)
					}
					if d.Outcome == Admit {
						got++
					} else if d.Reason != ReasonLimits {
						t.Fatalf("queued for %s, want limits", d.Reason)
					}
				}
				return got
			}
			got := admit(t0.Add(time.Minute+time.Second), 40)
			later := got + admit(t0.Add(time.Minute+2*time.Second), 40)
			if got != tc.want || later != tc.wantLater {
				t.Errorf("admitted %d, then %d in all; want %d, %d", got, later, tc.want, tc.wantLater)
			}
			if n, _ := c.Load(ctx, CounterKey("shop", t0.Add(time.Minute), PoolNew, Anywhere)); int(n) != later {
				t.Errorf("11:46's new visitors' Anywhere counter %d, want %d", n, later)
			}
			// In 11:47 the snapshot of 11:45 is no longer the minute before's:
			// nothing more.
			if n := admit(t0.Add(2*time.Minute+time.Second), 5); n != 0 {
				t.Errorf("two minutes after its own, the snapshot admitted %d", n)
			}
		})
	}
}
