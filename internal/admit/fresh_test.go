package admit

import (
	"context"
	"testing"
	"time"
)

// A new visitor queued in the last second of a FIFO room's minute comes
// back a second later to be counted (firstCheckIn). In the same minute that
// check-in only counts it; in the next minute, with new slots, it tries
// them. Before, it was queued there without a slot asked of it: a queueing
// minute below the limits in a room whose next minute had room for all.
func TestFreshCheckInInTheNextMinuteTriesItsSlots(t *testing.T) {
	settings := Settings{Name: "shop", TotalActiveUsers: 1000, NewUsersPerMinute: 2, QueueingMethod: FIFO, RefreshIntervalSeconds: 20}.WithDefaults()
	snapOf := func(minute time.Time) *Snapshot {
		return &Snapshot{Room: "shop", Minute: minute, MinuteSeconds: 60, PublishedAt: minute, Status: StatusQueueing, Settings: settings,
			SlotsAvailable: 2, NewUserSlots: 2, Pools: []Pool{{Slots: 2, Scopes: []Scope{{Name: Anywhere, Limit: 2}}}}}
	}
	store := NewMemoryCounter(func() time.Time { return t0 })
	gate := Gate{DataCenter: "ams", ID: "ams-1"}
	decide := func(snap *Snapshot, tk *Ticket, at time.Time) Decision {
		t.Helper()
		d, err := Decide(context.Background(), Input{Now: at, Snapshot: snap, Ticket: tk, Gate: gate, Strategy: SharedCounters{store}, Entropy: 1})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	snap := snapOf(t0)
	late := t0.Add(59*time.Second + 500*time.Millisecond)
	for range 2 { // the minute's two slots
		if d := decide(snap, nil, late.Add(-time.Second)); d.Outcome != Admit {
			t.Fatalf("a new visitor with slots left: %s", d.Outcome)
		}
	}
	first := decide(snap, nil, late)
	if first.Outcome != Queue || !first.Ticket.Fresh {
		t.Fatalf("a new visitor with no slot left: %s (fresh %v), want queued to be counted", first.Outcome, first.Ticket.Fresh)
	}
	// Back within the same minute: counted, not admitted (it just tried).
	if d := decide(snap, first.Ticket, late.Add(400*time.Millisecond)); d.Outcome != Queue {
		t.Errorf("the counting check-in in its own minute: %s, want queued", d.Outcome)
	}
	// Back in the next minute, which has slots: admitted.
	next := t0.Add(time.Minute)
	if d := decide(snapOf(next), first.Ticket, late.Add(time.Second)); d.Outcome != Admit || !d.Effect.FromQueue {
		t.Errorf("the counting check-in in the next minute: %s (from queue %v), want admitted on its slots", d.Outcome, d.Effect.FromQueue)
	}
}
