package admit

import (
	"context"
	"testing"
	"time"
)

// world drives a Room and its gates through virtual time, the way the room
// workflow and the gates do: gates decide on the snapshot they last fetched
// (after a propagation delay), add their decisions to a Tally, and report to
// the room, which advances at its wake-up times.
type world struct {
	t        *testing.T
	room     *Room
	now      time.Time
	delay    time.Duration // snapshot propagation
	counters Counter
	gates    []*worldGate
	entropy  uint64
}

type worldGate struct {
	Gate
	tally    *Tally
	snap     *Snapshot
	strategy Strategy
}

func newWorld(t *testing.T, s Settings, start time.Time, delay time.Duration, gates ...Gate) *world {
	t.Helper()
	r, err := NewRoom(s, 60, start)
	if err != nil {
		t.Fatal(err)
	}
	w := &world{t: t, room: r, now: start, delay: delay}
	mc := NewMemoryCounter(func() time.Time { return w.now })
	w.counters = mc
	for _, g := range gates {
		w.gates = append(w.gates, &worldGate{Gate: g, tally: NewTally(s.Name, g, 0), snap: r.Snapshot, strategy: SharedCounters{mc}})
	}
	return w
}

func (w *world) gate(id string) *worldGate {
	for _, g := range w.gates {
		if g.ID == id {
			return g
		}
	}
	w.t.Fatalf("no gate %s", id)
	return nil
}

// request decides one request of a visitor at a gate and keeps its ticket.
func (w *world) request(gateID string, ticket **Ticket) Decision {
	w.t.Helper()
	g := w.gate(gateID)
	w.entropy = w.entropy*6364136223846793005 + 1442695040888963407
	d, err := Decide(context.Background(), Input{Now: w.now, Snapshot: g.snap, Ticket: *ticket, Gate: g.Gate, Strategy: g.strategy, Entropy: w.entropy >> 11})
	if err != nil {
		w.t.Fatal(err)
	}
	g.tally.Add(d.Effect)
	if d.SetTicket {
		*ticket = d.Ticket
	}
	return d
}

// flush sends every gate's pending reports to the room.
func (w *world) flush() {
	for _, g := range w.gates {
		for _, r := range g.tally.Pending() {
			if err := w.room.AddReport(r, w.now); err != nil {
				w.t.Fatal(err)
			}
		}
	}
}

// step moves the clock by d: reports flushed, the room advanced at each of
// its wake-ups on the way, gates fetching snapshots once they propagated.
func (w *world) step(d time.Duration) {
	end := w.now.Add(d)
	for {
		wake := w.room.NextWake(w.now)
		if wake.After(end) {
			break
		}
		w.now = wake
		w.flush()
		w.room.Advance(w.now)
	}
	w.now = end
	w.flush()
	w.sync()
}

// sync gives each gate the room's snapshot once it has propagated.
func (w *world) sync() {
	if s := w.room.Snapshot; !s.PublishedAt.Add(w.delay).After(w.now) {
		for _, g := range w.gates {
			g.snap = s
		}
	}
}
