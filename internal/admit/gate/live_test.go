package gate

import (
	"context"
	"testing"
	"time"

	"github.com/edgeflow/edgeflow/internal/admit"
)

// The holder of a data center's lease writes its gates' counts of the
// current minute into the room's live hash within a second or so, stamped
// on Redis's clock; the room gets no report for it.
func TestHolderWritesTheDataCentersLiveCounts(t *testing.T) {
	d := newDCGates(t, 2)
	live := redisCounter(t, env.Redis.URL).Client
	ctx := context.Background()
	live.Del(ctx, admit.LiveKey("shop"))
	for _, p := range d.reporters {
		p.Aggregate.Live = live
	}
	minute := admit.MinuteOf(d.now, time.Minute)
	d.step(0)
	// A spike: 7 visitors queued at one gate, 5 at the other, one admitted.
	for i, n := range []int{7, 5} {
		for range n {
			d.rooms[i].tally.Add(admit.Effect{Minute: minute, NewVisitor: true, Bucket: minute, Waiting: 1})
		}
	}
	d.rooms[0].tally.Add(admit.Effect{Minute: minute, NewVisitor: true, Admitted: true, Seen: true, Pool: admit.PoolNew, Scope: d.dc})
	reports := len(d.got)
	for range 30 { // 3 s of the gates' clock: they write every 2 s
		d.step(100 * time.Millisecond)
	}
	fields, err := live.HGetAll(ctx, admit.LiveKey("shop")).Result()
	if err != nil {
		t.Fatal(err)
	}
	c, err := admit.ParseLiveCounts(d.dc, fields[d.dc])
	if err != nil {
		t.Fatalf("the live hash %v: %v", fields, err)
	}
	if c.Queued != 12 || c.Admitted != 1 || c.Active != 1 || c.Gates != 2 || !c.Minute.Equal(minute) {
		t.Errorf("live counts %+v, want 12 queued, 1 admitted and active, 2 gates, minute %s", c, minute)
	}
	redisNow, err := live.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	if age := redisNow.Sub(c.AsOf); age < 0 || age > admit.LiveMaxAge {
		t.Errorf("stamped %s, Redis's clock says %s: want within %s", c.AsOf, redisNow, admit.LiveMaxAge)
	}
	if ttl := live.PTTL(ctx, admit.LiveKey("shop")).Val(); ttl <= 0 || ttl > admit.LiveForget {
		t.Errorf("the live hash expires in %s, want within %s", ttl, admit.LiveForget)
	}
	if len(d.got) != reports {
		t.Errorf("the room got %d reports for the live counts; want none (the minute is not over)", len(d.got)-reports)
	}
}
