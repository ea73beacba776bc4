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

// A data center's unspent share is released late in the minute: Frankfurt's
// visitors, their own scope and Anywhere spent, get nothing of Amsterdam's
// scope before ReleaseAfter (Cloudflare's counters), then what Amsterdam
// left of it, on Amsterdam's counter, and never beyond the pool's slots. A
// stale gate takes no released share, nor a gate whose data center counts
// on a store of its own. Before the release, Frankfurt got nothing of
// Amsterdam's scope all minute.
func TestUnspentDataCenterSharesReleasedLateInTheMinute(t *testing.T) {
	snap := &Snapshot{Room: "shop", Minute: t0, MinuteSeconds: 60, PublishedAt: t0,
		Settings:       Settings{Name: "shop", TotalActiveUsers: 1000, NewUsersPerMinute: 30, RefreshIntervalSeconds: 20}.WithDefaults(),
		SlotsAvailable: 30, NewUserSlots: 30,
		Pools: []Pool{{Slots: 30, Scopes: []Scope{{Name: "ams", Limit: 12}, {Name: "fra", Limit: 12}, {Name: Anywhere, Limit: 6}}}}}
	release := ReleaseAfter(snap)
	takeAll := func(strategy Strategy, at time.Duration, dc string) map[string]int {
		t.Helper()
		got := map[string]int{}
		for {
			scope, ok, err := strategy.TakeSlot(t.Context(), SlotRequest{Snapshot: snap, Now: t0.Add(at), Gate: Gate{dc, dc + "-1"}, Pool: &snap.Pools[0]})
			if err != nil {
				t.Fatal(err)
			}
			if !ok {
				return got
			}
			got[scope]++
		}
	}
	counter := NewMemoryCounter(nil)
	shared := SharedCounters{Store: counter}
	// Amsterdam's gates take 4 of their 12.
	for range 4 {
		if scope, ok, err := shared.TakeSlot(t.Context(), SlotRequest{Snapshot: snap, Now: t0.Add(10 * time.Second), Gate: Gate{"ams", "ams-1"}, Pool: &snap.Pools[0]}); err != nil || !ok || scope != "ams" {
			t.Fatalf("Amsterdam's visitor: %q %v %v, want its own scope", scope, ok, err)
		}
	}
	if got := takeAll(shared, release-time.Second, "fra"); got["fra"] != 12 || got[Anywhere] != 6 || len(got) != 2 {
		t.Fatalf("before the release Frankfurt took %v, want fra 12 and Anywhere 6, nothing of Amsterdam's", got)
	}
	if got := takeAll(shared, release, "fra"); got["ams"] != 8 || len(got) != 1 {
		t.Fatalf("at the release Frankfurt took %v, want the 8 Amsterdam left", got)
	}
	if n, _ := counter.Load(t.Context(), CounterKey("shop", t0, PoolNew, "ams")); n != 12 {
		t.Errorf("Amsterdam's counter holds %d, want its 12", n)
	}
	if got := takeAll(shared, 59*time.Second, "ams"); len(got) != 0 {
		t.Errorf("at 59 s Amsterdam took %v more, past the pool's 30", got)
	}

	// A stale gate (in the next minute, on this snapshot) gets only the
	// stale share of its own scope and Anywhere.
	stale := takeAll(SharedCounters{Store: NewMemoryCounter(nil)}, 60*time.Second+release, "fra")
	if stale["ams"] != 0 || stale["fra"] != StaleShare(12) || stale[Anywhere] != StaleShare(6) {
		t.Errorf("a stale gate took %v, want fra %d and Anywhere %d, nothing released", stale, StaleShare(12), StaleShare(6))
	}

	// Data centers counting on stores of their own: Frankfurt cannot count
	// on Amsterdam's counter, so it takes nothing of it. On one store (as
	// every gate on one Redis) it takes all 12.
	anywhere, fra := NewMemoryCounter(nil), NewMemoryCounter(nil)
	if got := takeAll(SharedCounters{Store: ScopeStores{DataCenter: fra, Anywhere: anywhere}}, release, "fra"); got["ams"] != 0 {
		t.Errorf("with a store of its own Frankfurt took %v, want nothing of Amsterdam's", got)
	}
	one := NewMemoryCounter(nil)
	if got := takeAll(SharedCounters{Store: ScopeStores{DataCenter: one, Anywhere: one}}, release, "fra"); got["ams"] != 12 {
		t.Errorf("on one store Frankfurt took %v, want Amsterdam's 12", got)
	}

	// A random queue releases no share: its slots come at random moments.
	snap.PacedRelease = true
	if got := takeAll(SharedCounters{Store: NewMemoryCounter(nil)}, 59*time.Second, "fra"); got["ams"] != 0 {
		t.Errorf("in a random queue Frankfurt took %v, want nothing of Amsterdam's", got)
	}
}

// A bucket whose reservation covers part of it leaves slots unclaimed only
// when fewer of its visitors came back than it had slots: by ReleaseAfter
// each who refreshes on time has checked in and none was refused, so the
// bucket after it takes them. Before, only the partly covered bucket could,
// and its visitors had all been served: the slots went unused while the
// queue behind it waited (seen in the simulator with queues of 1000+).
func TestUnclaimedSlotsOfAPartlyCoveredBucketGoToTheOneAfter(t *testing.T) {
	b43, b44, b45 := t0.Add(-2*time.Minute), t0.Add(-time.Minute), t0
	snap := &Snapshot{Room: "shop", Minute: t0, PublishedAt: t0.Add(5 * time.Second), Status: StatusQueueing,
		Settings: Settings{Name: "shop", TotalActiveUsers: 100, NewUsersPerMinute: 2, QueueingMethod: FIFO, RefreshIntervalSeconds: 20},
		Buckets:  []Bucket{{Key: b43, Waiting: 3, ReservedSlots: 2}, {Key: b44, Waiting: 3}}, SlotsAvailable: 2,
		Pools: []Pool{{Bucket: b43, Slots: 2, Scopes: []Scope{{Name: Anywhere, Limit: 2}}}}}
	store := NewMemoryCounter(func() time.Time { return t0 })
	decide := func(bucket, at time.Time) Decision {
		t.Helper()
		tk := &Ticket{Room: "shop", BucketID: bucket.UnixMilli(), LastCheckInTime: at.Add(-20 * time.Second).UnixMilli(), RefreshIntervalSeconds: 20}
		d, err := Decide(context.Background(), Input{Now: at, Snapshot: snap, Ticket: tk, Gate: Gate{DataCenter: "ams", ID: "ams-1"}, Strategy: SharedCounters{store}, Entropy: 1})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	early, late := t0.Add(20*time.Second), t0.Add(ReleaseAfter(snap))
	if d := decide(b43, early); d.Outcome != Admit {
		t.Fatalf("11:43's visitor: %s, want admitted on its reservation", d.Outcome)
	}
	if d := decide(b44, early); d.Outcome != Queue {
		t.Fatalf("11:44 before the release: %s, want queued", d.Outcome)
	}
	if d := decide(b45, late); d.Outcome != Queue {
		t.Errorf("11:45, behind 11:44: %s, want queued", d.Outcome)
	}
	if d := decide(b44, late); d.Outcome != Admit || d.Effect.Pool != poolKey(b43) {
		t.Fatalf("11:44 after the release: %s from %q, want admitted on the slot 11:43 left", d.Outcome, d.Effect.Pool)
	}
	if d := decide(b43, late.Add(time.Second)); d.Outcome != Queue {
		t.Errorf("a late 11:43 visitor: %s, want queued (its 2 slots are taken)", d.Outcome)
	}
}
