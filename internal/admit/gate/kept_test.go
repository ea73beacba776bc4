package gate

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/edgeflow/edgeflow/internal/admit"
)

// keptOutages are how many minutes the tests below keep Temporal away: six
// is more than the two a gate used to keep its unsent reports; thirty is
// the outage, far beyond a session (five minutes by default) and
// the three minutes a gate kept beyond it before (the admit-outage chaos
// suite's 30-minute run: the room's record missed the outage's first 19
// minutes, 570 admissions).
var keptOutages = []int{6, 30}

// finalAdmitted is what the final reports that reached the room say of
// each minute (the newest of each).
func finalAdmitted(got []admit.Report) map[time.Time]int {
	out := map[time.Time]int{}
	for _, r := range got {
		if r.Final {
			out[r.Minute] = r.Admitted
		}
	}
	return out
}

// While Temporal does not answer, a data center's lease holder keeps every
// minute the room has not taken, and once Temporal answers again sends
// them all, oldest first, so the room can take over what the gates did in
// the outage. Before, it sent its last ended minute only: the minutes
// before were never sent (the admit-outage chaos suite: 30 admissions of
// the minute Temporal froze missing from the room's record).
func TestDataCenterSendsTheMinutesTemporalMissed(t *testing.T) {
	for _, outage := range keptOutages {
		t.Run(fmt.Sprintf("%d minutes", outage), func(t *testing.T) { dataCenterSendsTheMinutesTemporalMissed(t, outage) })
	}
}

func dataCenterSendsTheMinutesTemporalMissed(t *testing.T, keptOutage int) {
	d := newDCGates(t, 2)
	failing := false
	d.reporters[0].Sink = func(ctx context.Context, r admit.Report) error {
		if failing {
			return errors.New("temporal does not answer")
		}
		return d.sink(ctx, r)
	}
	d.reporters[1].Sink = d.reporters[0].Sink
	d.step(0)
	failing = true
	for m := range keptOutage {
		minute := t0.Add(time.Duration(m) * time.Minute)
		for i, r := range d.rooms {
			for range m + i + 1 {
				r.tally.Add(admit.Effect{Minute: minute, NewVisitor: true, Admitted: true, Seen: true, Pool: admit.PoolNew, Scope: d.dc})
			}
		}
		for d.now.Before(minute.Add(time.Minute)) {
			d.step(500 * time.Millisecond)
		}
	}
	failing = false
	for end := d.now.Add(2 * time.Second); d.now.Before(end); {
		d.step(100 * time.Millisecond)
	}
	got := finalAdmitted(d.got)
	var order []time.Time
	for _, r := range d.got {
		order = append(order, r.Minute)
	}
	for m := range keptOutage {
		minute := t0.Add(time.Duration(m) * time.Minute)
		if want := 2*m + 3; got[minute] != want {
			t.Errorf("minute %s: the room got a final report of %d admissions, want %d (reports of minutes %v)", minute.Format("15:04"), got[minute], want, order)
		}
	}
	for i := 1; i < len(order); i++ {
		if order[i].Before(order[i-1]) {
			t.Errorf("the kept minutes went newest first: %v", order)
			break
		}
	}
}

// A gate reporting to the room itself (no shared Redis) keeps its unsent
// reports as long: the room's sessions and a few minutes. Before, two.
func TestGateKeepsItsUnsentMinutesForASession(t *testing.T) {
	for _, outage := range keptOutages {
		t.Run(fmt.Sprintf("%d minutes", outage), func(t *testing.T) { gateKeepsItsUnsentMinutes(t, outage) })
	}
}

func gateKeepsItsUnsentMinutes(t *testing.T, keptOutage int) {
	reg := registryWith(t, admit.Settings{Name: "shop"})
	room := reg.Room("shop")
	now := t0.Add(time.Second)
	var got []admit.Report
	failing := true
	p := &Reporter{Registry: reg, Every: 2 * time.Second, Logger: quietLogger(), Now: func() time.Time { return now },
		Sink: func(_ context.Context, r admit.Report) error {
			if failing {
				return errors.New("temporal does not answer")
			}
			got = append(got, r)
			return nil
		}}
	ctx := context.Background()
	for m := range keptOutage {
		minute := t0.Add(time.Duration(m) * time.Minute)
		for range m + 1 {
			room.tally.Add(admit.Effect{Minute: minute, NewVisitor: true, Admitted: true, Seen: true})
		}
		for now.Before(minute.Add(time.Minute)) {
			p.Tick(ctx)
			now = now.Add(2 * time.Second)
		}
	}
	failing = false
	p.Tick(ctx)
	admitted := finalAdmitted(got)
	for m := range keptOutage {
		minute := t0.Add(time.Duration(m) * time.Minute)
		if admitted[minute] != m+1 {
			t.Errorf("minute %s: the room got a final report of %d admissions, want %d", minute.Format("15:04"), admitted[minute], m+1)
		}
	}
}

// An ended minute's counts stay in Redis as long as the lease holder owes
// it, even when a gate writes its final counts of the minute after the
// holder began to owe it (the later minutes of an outage are owed at once,
// behind the earlier ones, before every gate's final write is in). Before,
// that write set them back to aggKeep minutes: a longer outage's minutes
// were gone from Redis before Temporal answered again.
func TestOwedMinutesOutliveTheGatesLateWrites(t *testing.T) {
	d := newDCGates(t, 2)
	for _, p := range d.reporters {
		p.Aggregate.Lease = time.Hour // the first gate holds it throughout
		p.Sink = func(context.Context, admit.Report) error { return errors.New("temporal does not answer") }
	}
	const outage = 4
	for m := range outage {
		minute := t0.Add(time.Duration(m) * time.Minute)
		for _, r := range d.rooms {
			r.tally.Add(admit.Effect{Minute: minute, NewVisitor: true, Admitted: true, Seen: true, Pool: admit.PoolNew, Scope: d.dc})
		}
		for d.now.Before(minute.Add(time.Minute + 20*time.Second)) {
			d.step(500 * time.Millisecond)
		}
	}
	if !d.reporters[0].Aggregate.Holds(d.now) {
		t.Fatal("the first gate does not hold the lease: the test shows nothing")
	}
	for m := range outage {
		minute := t0.Add(time.Duration(m) * time.Minute)
		key := countsKey("shop", d.dc, minute)
		ttl, err := d.reporters[0].Aggregate.Client.PTTL(context.Background(), key).Result()
		if err != nil {
			t.Fatal(err)
		}
		if ttl <= aggKeep*time.Minute {
			t.Errorf("minute %s: its counts leave Redis in %s, while the room may still take them for %s", minute.Format("15:04"), ttl, admit.LedgerMinutes*time.Minute)
		}
	}
}

// A minute that ended while no gate held the lease (every gate down across
// the minute's end, in an outage) is owed by the next holder, which keeps
// its counts in Redis as long as the minutes it owes itself. Before, the
// new holder marked it owed without keeping it longer, and its counts left
// Redis after the gates' five minutes, long before the room could take it.
func TestANewHolderKeepsTheMinutesItFindsOwed(t *testing.T) {
	d := newDCGates(t, 2)
	for _, p := range d.reporters {
		p.Sink = func(context.Context, admit.Report) error { return errors.New("temporal does not answer") }
	}
	d.rooms[1].tally.Add(admit.Effect{Minute: t0, NewVisitor: true, Admitted: true, Seen: true, Pool: admit.PoolNew, Scope: d.dc})
	for d.now.Before(t0.Add(50 * time.Second)) {
		d.step(500 * time.Millisecond)
	}
	key := countsKey("shop", d.dc, t0)
	client := d.reporters[0].Aggregate.Client
	if n, err := client.Exists(context.Background(), key).Result(); err != nil || n != 1 {
		t.Fatalf("the minute's counts are not in Redis (%d, %v): the test shows nothing", n, err)
	}
	// Every gate down across the minute's end; then the second comes back.
	d.alive[0], d.alive[1] = false, false
	d.now = t0.Add(2 * time.Minute)
	d.alive[1] = true
	for range 200 {
		if d.reporters[1].Aggregate.Holds(d.now) {
			break
		}
		time.Sleep(10 * time.Millisecond) // the dead holder's lease ends on Redis's clock
		d.step(500 * time.Millisecond)
	}
	if !d.reporters[1].Aggregate.Holds(d.now) {
		t.Fatal("the second gate never took the lease: the test shows nothing")
	}
	d.step(500 * time.Millisecond)
	ttl, err := client.PTTL(context.Background(), key).Result()
	if err != nil {
		t.Fatal(err)
	}
	if ttl <= aggKeep*time.Minute {
		t.Errorf("the minute's counts leave Redis in %s, while the room may still take them for %s", ttl, admit.LedgerMinutes*time.Minute)
	}
}
