package admit

import (
	"context"
	"testing"
	"time"
)

func TestCounterScope(t *testing.T) {
	for _, c := range []struct{ key, want string }{
		{CounterKey("shop", t0, PoolNew, "sjc"), "sjc"},
		{CounterKey("shop", t0, PoolNew, Anywhere), Anywhere},
		{CounterKey("shop", t0, poolKey(t0.Add(-time.Minute)), Anywhere) + "/gate=sjc-1", Anywhere},
		{CounterKey("shop", t0, PoolNew, "lhr") + "/gate=lhr-2", "lhr"},
		{"admit/shop/123", ""},
		{"other/shop/1/new/*", ""},
		{"", ""},
	} {
		if got := CounterScope(c.key); got != c.want {
			t.Errorf("CounterScope(%q) = %q, want %q", c.key, got, c.want)
		}
	}
}

// The "How Waiting Room makes queueing decisions" post's San Jose case with
// the counters where a real deployment keeps them: each data center's scope
// on its own data center's store, Anywhere on one store every data center
// shares. San Jose's 15 are counted at San Jose, the 113 Anywhere slots once
// for everyone.
func TestScopeStoresKeepAnywhereInOneStoreForAllDataCenters(t *testing.T) {
	snap := strategySnapshot(150, 0.25,
		DataCenterUsers{DataCenter: "sjc", Users: 20, Gates: gateIDs("sjc", 3)},
		DataCenterUsers{DataCenter: "lhr", Users: 30, Gates: gateIDs("lhr", 7)})
	sjc, lhr, anywhere := NewMemoryCounter(nil), NewMemoryCounter(nil), NewMemoryCounter(nil)
	sjcGates := SharedCounters{ScopeStores{DataCenter: sjc, Anywhere: anywhere}}
	lhrGates := SharedCounters{ScopeStores{DataCenter: lhr, Anywhere: anywhere}}

	if a, q := arrivals(t, snap, sjcGates, "sjc", 100); a != 100 || q != 0 {
		t.Fatalf("San Jose: %d admitted, %d queued; want all 100", a, q)
	}
	// London's 22 and the 28 Anywhere slots San Jose left: 50, then queued.
	if a, q := arrivals(t, snap, lhrGates, "lhr", 60); a != 50 || q != 10 {
		t.Fatalf("London: %d admitted, %d queued; want 50 and 10", a, q)
	}
	ctx := context.Background()
	for _, c := range []struct {
		name  string
		store *MemoryCounter
		scope string
		want  int64
	}{
		{"San Jose's store, San Jose", sjc, "sjc", 15},
		{"London's store, London", lhr, "lhr", 22},
		{"the shared store, Anywhere", anywhere, Anywhere, 113},
		{"San Jose's store holds no Anywhere count", sjc, Anywhere, 0},
		{"the shared store holds no data center's count", anywhere, "sjc", 0},
	} {
		if n, _ := c.store.Load(ctx, CounterKey("shop", t0, PoolNew, c.scope)); n != c.want {
			t.Errorf("%s: %d, want %d", c.name, n, c.want)
		}
	}
	// Loads route the same way (stale gates read past minutes' counts).
	if n, _ := (ScopeStores{DataCenter: lhr, Anywhere: anywhere}).Load(ctx, CounterKey("shop", t0, PoolNew, Anywhere)); n != 113 {
		t.Errorf("Load through ScopeStores: %d, want 113", n)
	}
}
