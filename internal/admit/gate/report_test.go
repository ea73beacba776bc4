package gate

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/edgeflow/edgeflow/internal/admit"
)

// The reporter sends a room what changed every few seconds, a heartbeat
// once a minute when idle, and keeps a report the room did not get until a
// newer one of its minute replaces it.
func TestReporter(t *testing.T) {
	reg := registryWith(t, admit.Settings{Name: "shop"})
	room := reg.Room("shop")
	now := t0.Add(10 * time.Second)
	var got []admit.Report
	failing := false
	p := &Reporter{Registry: reg, Every: 2 * time.Second, Logger: quietLogger(), Now: func() time.Time { return now },
		Sink: func(_ context.Context, r admit.Report) error {
			if failing {
				return errors.New("temporal unreachable")
			}
			got = append(got, r)
			return nil
		}}
	ctx := context.Background()

	p.Tick(ctx) // the first tick of a minute: a heartbeat
	if len(got) != 1 || got[0].Minute != t0 || got[0].Gate != "ams-1" || got[0].NewVisitors != 0 {
		t.Fatalf("first tick: %+v", got)
	}
	for range 10 { // idle: nothing more within the minute
		now = now.Add(2 * time.Second)
		p.Tick(ctx)
	}
	if len(got) != 1 {
		t.Fatalf("an idle gate reported %d times in a minute, want once", len(got))
	}

	room.tally.Add(admit.Effect{Minute: t0, NewVisitor: true, Admitted: true, Seen: true})
	p.Tick(ctx) // within Every of the last look: not yet
	if len(got) != 1 {
		t.Fatalf("reported before Every passed: %+v", got)
	}
	now = now.Add(2 * time.Second)
	p.Tick(ctx)
	if len(got) != 2 || got[1].Admitted != 1 {
		t.Fatalf("after an admission: %+v", got)
	}

	failing = true
	room.tally.Add(admit.Effect{Minute: t0, NewVisitor: true, Admitted: true, Seen: true})
	now = now.Add(2 * time.Second)
	p.Tick(ctx)
	room.tally.Add(admit.Effect{Minute: t0, NewVisitor: true, Admitted: true, Seen: true})
	now = now.Add(2 * time.Second)
	p.Tick(ctx)
	if len(got) != 2 || len(room.unsent) != 1 || room.unsent[0].Admitted != 3 {
		t.Fatalf("while failing: sent %d, kept %+v; want one report kept, the newest", len(got), room.unsent)
	}
	failing = false
	now = now.Add(2 * time.Second)
	p.Tick(ctx)
	if len(got) != 3 || got[2].Admitted != 3 || len(room.unsent) != 0 {
		t.Fatalf("after recovery: %+v, kept %+v", got, room.unsent)
	}

	// The next minute: its heartbeat at once.
	now = t0.Add(time.Minute + 100*time.Millisecond)
	p.Tick(ctx)
	if last := got[len(got)-1]; !last.Minute.Equal(t0.Add(time.Minute)) {
		t.Fatalf("new minute: last report of %s", last.Minute)
	}
}

// Once a minute is over, the final report carries what the shared
// counters handed out in it, read from the counters the room's snapshots
// offered: the room counts what no gate reported.
func TestFinalReportReadsTheSharedCounters(t *testing.T) {
	reg := registryWith(t, admit.Settings{Name: "shop"})
	room := reg.Room("shop")
	snap := room.Snapshot()
	if len(snap.Pools) == 0 || len(snap.Pools[0].Scopes) == 0 {
		t.Fatalf("the room's first snapshot offers no counters: %+v", snap.Pools)
	}
	pool, scope := snap.Pools[0].Key(), snap.Pools[0].Scopes[0].Name
	store := admit.NewMemoryCounter(func() time.Time { return t0 })
	ctx := context.Background()
	for range 5 { // 5 slots taken in the minute, by this gate and one that died
		if ok, err := store.TakeBelow(ctx, admit.CounterKey("shop", t0, pool, scope), 10, t0.Add(time.Hour)); !ok || err != nil {
			t.Fatal(ok, err)
		}
	}
	room.tally.Add(admit.Effect{Minute: t0, NewVisitor: true, Admitted: true, Seen: true, Pool: pool, Scope: scope})

	now := t0.Add(30 * time.Second)
	var got []admit.Report
	p := &Reporter{Registry: reg, Logger: quietLogger(), Now: func() time.Time { return now }, Store: store,
		Sink: func(_ context.Context, r admit.Report) error { got = append(got, r); return nil }}
	p.Tick(ctx)
	if len(got) != 1 || len(got[0].StoreTaken) != 0 {
		t.Fatalf("a report while the minute runs: %+v, want no reading", got)
	}
	now = t0.Add(time.Minute + 100*time.Millisecond)
	p.Tick(ctx)
	var final *admit.Report
	for i := range got {
		if got[i].Minute.Equal(t0) && got[i].Final {
			final = &got[i]
		}
	}
	want := []admit.PoolCount{{Pool: pool, Scope: scope, Count: 5}}
	if final == nil || !slices.Equal(final.StoreTaken, want) || final.Admitted != 1 {
		t.Fatalf("final report of the minute: %+v, want store %+v and 1 admitted", final, want)
	}
	if err := final.Validate("shop", time.Minute); err != nil {
		t.Fatalf("the final report does not validate: %v", err)
	}
}

// A store that does not answer costs the final report its reading, not
// its timeliness: it goes at once, with the gate's own counts.
func TestFinalReportWithoutTheStore(t *testing.T) {
	reg := registryWith(t, admit.Settings{Name: "shop"})
	client, err := NewRedisClient("redis://127.0.0.1:1/0") // nothing listens on port 1
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	reg.Room("shop").tally.Add(admit.Effect{Minute: t0, NewVisitor: true, Admitted: true, Seen: true, Pool: admit.PoolNew, Scope: admit.Anywhere})
	now := t0.Add(time.Minute + 100*time.Millisecond)
	var got []admit.Report
	p := &Reporter{Registry: reg, Logger: quietLogger(), Now: func() time.Time { return now }, Store: RedisCounter{Client: client},
		Sink: func(_ context.Context, r admit.Report) error { got = append(got, r); return nil }}
	p.Tick(context.Background())
	if len(got) == 0 || !got[0].Minute.Equal(t0) || !got[0].Final || got[0].Admitted != 1 || len(got[0].StoreTaken) != 0 {
		t.Fatalf("reports %+v, want t0's final report with 1 admitted and no reading", got)
	}
}

// A take whose answer is lost (here: Redis does not answer at all) is
// reported as unsure, so that a slot the store may have counted for nobody
// is not taken for an admission no gate reported.
func TestLostTakeIsReportedUnsure(t *testing.T) {
	client, err := NewRedisClient("redis://127.0.0.1:1/0") // nothing listens on port 1
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	down := &RedisCounter{Client: client}
	h := newHarness(t, admit.Settings{Name: "shop"}, func(c *Config) {
		counters, err := NewCounters(down, down, StrategyCounters, quietLogger())
		if err != nil {
			t.Fatal(err)
		}
		c.Counters = counters
	})
	mustQueue(t, h.get(newVisitor(), "/"), 200, "a new visitor while the counters do not answer")
	rep, ok := h.reg.Room("shop").tally.Report(admit.MinuteOf(h.now, time.Minute))
	if !ok || rep.Admitted != 0 || len(rep.Unsure) != 1 || rep.Unsure[0].Count != 1 || rep.Unsure[0].Pool != admit.PoolNew {
		t.Fatalf("the minute's report %+v, want one unsure take of the new visitors' pool", rep)
	}
}
