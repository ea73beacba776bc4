package admit

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// BenchmarkDecide measures decisions per second on one core: an admitted
// visitor (no counter touched), a new visitor taking a slot from shared
// counters, and a queued visitor checking in — against the in-process
// counter alone, the least a new visitor's decision must do.
func BenchmarkDecide(b *testing.B) {
	r, err := NewRoom(Settings{Name: "shop", TotalActiveUsers: 1 << 30, NewUsersPerMinute: 1 << 30}, 60, t0)
	if err != nil {
		b.Fatal(err)
	}
	snap := r.Snapshot
	now := t0.Add(20 * time.Second)
	gate := Gate{"ams", "ams-1"}
	ctx := context.Background()
	perSecond := func(b *testing.B) { b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "decisions/s") }

	var counter time.Duration
	b.Run("counter-baseline", func(b *testing.B) {
		c := NewMemoryCounter(func() time.Time { return now })
		for i := 0; b.Loop(); i++ {
			if _, err := c.TakeBelow(ctx, "admit/shop/0/new/*", 1<<40, now.Add(time.Hour)); err != nil {
				b.Fatal(err)
			}
		}
		counter = b.Elapsed() / time.Duration(b.N)
	})
	b.Run("admitted", func(b *testing.B) {
		t := &Ticket{Room: "shop", BucketID: t0.UnixMilli(), AcceptedAt: now.UnixMilli() - 1000, LastCheckInTime: now.UnixMilli() - 1000}
		for b.Loop() {
			if d, _ := Decide(ctx, Input{Now: now, Snapshot: snap, Ticket: t, Gate: gate}); d.Outcome != Pass {
				b.Fatal(d.Outcome)
			}
		}
		perSecond(b)
	})
	b.Run("new", func(b *testing.B) {
		s := SharedCounters{NewMemoryCounter(func() time.Time { return now })}
		for i := 0; b.Loop(); i++ {
			if d, _ := Decide(ctx, Input{Now: now, Snapshot: snap, Gate: gate, Strategy: s, Entropy: uint64(i)}); d.Outcome != Admit {
				b.Fatal(d.Outcome)
			}
		}
		perSecond(b)
		if counter > 0 {
			b.ReportMetric(float64(b.Elapsed()/time.Duration(b.N))/float64(counter), "x-counter")
		}
	})
	b.Run("queued", func(b *testing.B) {
		full := *snap
		full.Pools = nil
		t := &Ticket{Room: "shop", BucketID: t0.UnixMilli(), LastCheckInTime: now.UnixMilli() - 30000, RefreshIntervalSeconds: 20}
		s := SharedCounters{NewMemoryCounter(nil)}
		for i := 0; b.Loop(); i++ {
			if d, _ := Decide(ctx, Input{Now: now, Snapshot: &full, Ticket: t, Gate: gate, Strategy: s, Entropy: uint64(i)}); d.Outcome != Queue {
				b.Fatal(d.Outcome)
			}
		}
		perSecond(b)
	})
}

// BenchmarkRollup measures a minute's rollup for a room with many gates.
func BenchmarkRollup(b *testing.B) {
	for _, gates := range []int{10, 100} {
		b.Run(fmt.Sprintf("%d-gates", gates), func(b *testing.B) {
			r, err := NewRoom(Settings{Name: "shop", TotalActiveUsers: 100000, NewUsersPerMinute: 5000}, 60, t0)
			if err != nil {
				b.Fatal(err)
			}
			now := t0
			for b.Loop() {
				m := MinuteOf(now, time.Minute)
				for g := range gates {
					dc := fmt.Sprintf("dc%d", g%5)
					_ = r.AddReport(Report{Room: "shop", DataCenter: dc, Gate: fmt.Sprintf("%s-%d", dc, g), Minute: m, Seq: 1,
						Admitted: 20, Seen: 40, Renewed: []MinuteCount{{Minute: m.Add(-time.Minute), Count: 20}},
						Queued: []MinuteCount{{Minute: m, Count: 3}}, Taken: []PoolCount{{Pool: PoolNew, Scope: dc, Count: 20}}}, now)
				}
				now = now.Add(time.Minute)
				r.Advance(now.Add(5 * time.Second))
			}
		})
	}
}
