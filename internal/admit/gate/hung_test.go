package gate

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/edgeflow/edgeflow/internal/admit"
)

// A room whose Temporal hangs (connections open, no answers) holds no
// part of the gate up: the data center's aggregate goes to it with the
// reporter's timeout, as a gate's own report does, so the reporter keeps
// ticking (renewing the lease, writing the counts to Redis, settling the
// visitors) and tries again. Before, the aggregate's signal took the
// reporter's context, which has no deadline: one hung call stopped every
// report of the gate, and the data center's lease lapsed.
func TestHungTemporalHoldsNoReporter(t *testing.T) {
	d := newDCGates(t, 1)
	p := d.reporters[0]
	// The reporter's default timeout (3 s) is the lease's length: a hung
	// call must not let the lease lapse.
	p.Aggregate.Lease = 600 * time.Millisecond
	p.Timeout = 3 * p.Aggregate.Lease
	var tries atomic.Int64
	p.Sink = func(ctx context.Context, _ admit.Report) error {
		tries.Add(1)
		<-ctx.Done() // no answer, ever
		return ctx.Err()
	}
	d.rooms[0].tally.Add(admit.Effect{Minute: t0, NewVisitor: true, Admitted: true, Seen: true})
	ticked := make(chan struct{})
	go func() {
		defer close(ticked)
		for range 3 {
			d.step(time.Minute) // each minute's aggregate is due
		}
	}()
	select {
	case <-ticked:
	case <-time.After(time.Minute):
		t.Fatal("the reporter is stuck in a signal to a hung Temporal")
	}
	if tries.Load() < 2 {
		t.Errorf("the aggregate was tried %d times, want it tried again at the next tick", tries.Load())
	}
	if !p.Aggregate.Holds(d.now) {
		t.Errorf("the gate let the data center's lease lapse while Temporal hung")
	}
}
