package admit

import (
	"context"
	"testing"
	"time"
)

// Unclaimed reservations go to the next bucket late in the minute: two
// visitors of 11:43 were counted and reserved for, one left; the 11:44
// bucket (three waiting, none reserved) may take the slot it left, on
// 11:43's counter, from ReleaseAfter on (the minute's last refresh interval), and never more than it left. A
// bucket behind the next one, and new visitors while a bucket still has
// visitors the reservations do not cover, get nothing. Before the release
// existed the 11:44 visitor was queued all minute with the slot unused.
func TestUnclaimedReservationsGoToTheNextBucket(t *testing.T) {
	b43, b44, b45 := t0.Add(-2*time.Minute), t0.Add(-time.Minute), t0
	snap := &Snapshot{Room: "shop", Minute: t0, PublishedAt: t0.Add(5 * time.Second), Status: StatusQueueing,
		Settings: Settings{Name: "shop", TotalActiveUsers: 100, NewUsersPerMinute: 2, QueueingMethod: FIFO, RefreshIntervalSeconds: 20},
		Buckets:  []Bucket{{Key: b43, Waiting: 2, ReservedSlots: 2}, {Key: b44, Waiting: 3}}, SlotsAvailable: 2,
		Pools: []Pool{{Bucket: b43, Slots: 2, Scopes: []Scope{{Name: Anywhere, Limit: 2}}}}}
	store := NewMemoryCounter(func() time.Time { return t0 })
	gate := Gate{DataCenter: "ams", ID: "ams-1"}
	queued := func(bucket time.Time, at time.Time) *Ticket {
		return &Ticket{Room: "shop", BucketID: bucket.UnixMilli(), LastCheckInTime: at.Add(-20 * time.Second).UnixMilli(), RefreshIntervalSeconds: 20}
	}
	decide := func(tk *Ticket, at time.Time) Decision {
		t.Helper()
		d, err := Decide(context.Background(), Input{Now: at, Snapshot: snap, Ticket: tk, Gate: gate, Strategy: SharedCounters{store}, Entropy: 1})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	early, late := t0.Add(20*time.Second), t0.Add(ReleaseAfter(snap))
	if d := decide(queued(b43, early), early); d.Outcome != Admit || d.Effect.Pool != poolKey(b43) {
		t.Fatalf("11:43's visitor: %s from %q, want admitted on its reservation", d.Outcome, d.Effect.Pool)
	}
	if d := decide(queued(b44, early), early); d.Outcome != Queue {
		t.Fatalf("11:44 before the release: %s, want queued", d.Outcome)
	}
	if d := decide(queued(b45, late), late); d.Outcome != Queue {
		t.Errorf("11:45, behind the next bucket: %s, want queued", d.Outcome)
	}
	if d := decide(nil, late); d.Outcome != Queue {
		t.Errorf("a new visitor while 11:44 waits: %s, want queued", d.Outcome)
	}
	d := decide(queued(b44, late), late)
	if d.Outcome != Admit || d.Effect.Pool != poolKey(b43) || !d.Effect.FromQueue {
		t.Fatalf("11:44 after the release: %s from %q, want admitted on 11:43's slot", d.Outcome, d.Effect.Pool)
	}
	if d := decide(queued(b44, late), late.Add(time.Second)); d.Outcome != Queue {
		t.Errorf("a second 11:44 visitor: %s, want queued (11:43 left one slot)", d.Outcome)
	}
	if n, _ := store.Load(context.Background(), CounterKey("shop", t0, poolKey(b43), Anywhere)); n != 2 {
		t.Errorf("11:43's counter holds %d, want its 2 slots", n)
	}

	// Once every counted visitor is covered, the next bucket is whoever the
	// room has not counted yet, new visitors included: the release comes in
	// the minute's last refresh interval, so a queued one the room has not
	// counted yet checks in during it too.
	snap.Buckets = snap.Buckets[:1]
	store = NewMemoryCounter(func() time.Time { return t0 })
	if d := decide(nil, late); d.Outcome != Admit || d.Effect.Pool != poolKey(b43) {
		t.Errorf("a new visitor with every counted one covered: %s from %q, want 11:43's slot", d.Outcome, d.Effect.Pool)
	}
	if got := ReleaseAfter(snap); got != 36*time.Second {
		t.Errorf("release after %s of a minute with 20-s refreshes, want 36s (the longest interval before its end)", got)
	}
}
