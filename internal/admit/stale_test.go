package admit

import (
	"fmt"
	"testing"
	"time"
)

// A long FIFO queue whose visitors all check in on time uses every slot of
// every minute: reservations are spent by the visitors they are for, and
// no slot is held back for buckets that were served already. Before bucket
// pools stopped being spent on stale snapshots, each served bucket kept a
// quarter of its slots as a floor in the next minute (and floors of one
// slot carried themselves forward for ever), so a queueing room admitted
// well under its limit.
func TestLongFIFOQueueUsesEverySlot(t *testing.T) {
	for _, delay := range []time.Duration{0, 5 * time.Second, 20 * time.Second} {
		t.Run(fmt.Sprintf("delay %s", delay), func(t *testing.T) {
			s := Settings{Name: "shop", TotalActiveUsers: 100000, NewUsersPerMinute: 60, SessionDuration: 1, RefreshIntervalSeconds: 10}
			var gates []Gate
			for _, dc := range []string{"ams", "fra", "sjc"} {
				for i := range 2 {
					gates = append(gates, Gate{dc, fmt.Sprintf("%s-%d", dc, i)})
				}
			}
			w := newWorld(t, s, t0, delay, gates...)
			type visitor struct {
				ticket *Ticket
				gate   int
				next   time.Time
			}
			var queue []*visitor
			admittedIn := map[time.Time]int{} // looked up only
			n := 0
			for sec := range 20 * 60 {
				// 120 new visitors a minute, twice the limit, one every
				// half second, spread over the gates.
				for range 2 {
					queue = append(queue, &visitor{gate: n % len(gates), next: w.now})
					n++
				}
				for _, v := range queue {
					if v.next.After(w.now) || (v.ticket != nil && v.ticket.Admitted()) {
						continue
					}
					d := w.request(gates[v.gate].ID, &v.ticket)
					switch d.Outcome {
					case Admit:
						admittedIn[MinuteOf(w.now, time.Minute)]++
					case Queue:
						v.next = w.now.Add(d.RefreshIn)
					}
				}
				if sec%60 == 59 {
					// Every pool of the room's snapshot is a bucket it
					// reserves for, or new visitors, and none holds more
					// than the reservation.
					snap := w.room.Snapshot
					for _, p := range snap.Pools {
						if p.Bucket.IsZero() {
							continue
						}
						reserved := -1
						for _, b := range snap.Buckets {
							if b.Key.Equal(p.Bucket) {
								reserved = b.ReservedSlots
							}
						}
						if p.Slots > reserved {
							t.Fatalf("%s: pool of bucket %s holds %d slots, the bucket %d reserved", snap.Minute.Format("15:04"),
								p.Bucket.Format("15:04"), p.Slots, reserved)
						}
					}
				}
				w.step(time.Second)
			}
			// From the third minute on the queue is long: every minute
			// admits exactly its 60 slots.
			for m := t0.Add(3 * time.Minute); m.Before(t0.Add(19 * time.Minute)); m = m.Add(time.Minute) {
				if got := admittedIn[m]; got != s.NewUsersPerMinute {
					t.Errorf("minute %s admitted %d, want the limit %d", m.Format("15:04"), got, s.NewUsersPerMinute)
				}
			}
		})
	}
}

// A gate still deciding on the previous minute's snapshot spends a quarter
// of the new visitors' pool, but nothing of a bucket's reservation: the
// bucket's visitors are queued already and the next snapshot reserves for
// them again; and a pool held only as a floor is not spent again later.
func TestStaleSnapshotSpendsNewVisitorsPoolOnly(t *testing.T) {
	bucket := t0.Add(-time.Minute)
	snap := &Snapshot{Room: "shop", Minute: t0, MinuteSeconds: 60, PublishedAt: t0,
		Settings:       Settings{Name: "shop", TotalActiveUsers: 1000, NewUsersPerMinute: 100, QueueingMethod: FIFO}.WithDefaults(),
		SlotsAvailable: 100, NewUserSlots: 60, Buckets: []Bucket{{Key: bucket, Waiting: 40, ReservedSlots: 40}},
		Pools: []Pool{
			{Slots: 60, Scopes: []Scope{{Name: Anywhere, Limit: 60}}},
			{Bucket: bucket, Slots: 40, Scopes: []Scope{{Name: Anywhere, Limit: 40}}},
		}}
	queued := &Ticket{Room: "shop", BucketID: bucket.UnixMilli(), LastCheckInTime: t0.Add(-time.Minute).UnixMilli(), RefreshIntervalSeconds: 10}
	strategy := SharedCounters{NewMemoryCounter(nil)}
	take := func(at time.Time, p *Pool) bool {
		_, ok, err := strategy.TakeSlot(t.Context(), SlotRequest{Snapshot: snap, Now: at, Gate: Gate{"ams", "ams-1"}, Pool: p})
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	stale := t0.Add(61 * time.Second)
	if take(stale, snap.Pool(bucket)) {
		t.Fatal("a stale gate spent a bucket's reservation")
	}
	got := 0
	for take(stale, snap.Pool(time.Time{})) {
		got++
	}
	if got != StaleShare(60) {
		t.Errorf("a stale gate spent %d of the new visitors' 60, want a quarter (%d)", got, StaleShare(60))
	}
	// The queued visitor still gets in on the stale snapshot, from the new
	// visitors' pool.
	d, err := Decide(t.Context(), Input{Now: t0.Add(62 * time.Second), Snapshot: snap, Ticket: queued, Gate: Gate{"ams", "ams-2"},
		Strategy: SharedCounters{NewMemoryCounter(nil)}})
	if err != nil || d.Outcome != Admit || d.Effect.Pool != PoolNew {
		t.Errorf("queued visitor on a stale snapshot: %+v %v", d, err)
	}
	// A scope that is all floor has nothing to spend once stale.
	floor := Scope{Name: Anywhere, Limit: 5, Carried: 5, Headroom: 100}
	if r := StaleRemainder(floor, 0); r != 0 {
		t.Errorf("StaleRemainder of a floor-only scope = %d, want 0", r)
	}
	if r := StaleRemainder(Scope{Name: Anywhere, Limit: 9, Carried: 5, Headroom: 100}, 0); r != 1 {
		t.Errorf("StaleRemainder of 4 own slots and 5 carried = %d, want a quarter of 4 (1)", r)
	}
}

// Allocate marks what floors add beyond the ideal split as Carried.
func TestAllocateMarksCarried(t *testing.T) {
	pools := Allocate(AllocationInput{Method: FIFO, Slots: 100, NewUserSlots: 100, TotalActiveUsers: 200,
		Carry: []Remainder{{Bucket: t0.Add(-2 * time.Minute), Scope: Anywhere, Slots: 5}}})
	if len(pools) != 2 || pools[0].Scopes[0].Carried != 0 || pools[1].Scopes[0] != (Scope{Name: Anywhere, Limit: 5, Carried: 5}) {
		t.Fatalf("pools %+v", pools)
	}
}
