package admit

import (
	"context"
	"testing"
	"time"
)

// world drives a Room and its gates through virtual time, the way the room
// workflow and the gates do: gates decide on the snapshot they last fetched
// (after a propagation delay), add their decisions to a Tally, and report to
// the room, which advances at its wake-ups.
type world struct {
	gateSet[*worldGate]
	room  *Room
	now   time.Time
	delay time.Duration // snapshot propagation
}

// worldGate is a gate of a test world: it decides on the snapshot it last
// saw, with its strategy, and adds its decisions to its own tally.
type worldGate struct {
	Gate
	tally    *Tally
	snap     *Snapshot
	strategy Strategy
}

func (g *worldGate) base() *worldGate { return g }

func newWorld(t *testing.T, s Settings, start time.Time, delay time.Duration, gates ...Gate) *world {
	t.Helper()
	r, err := NewRoom(s, 60, start)
	if err != nil {
		t.Fatal(err)
	}
	w := &world{room: r, now: start, delay: delay}
	w.gateSet = newGateSet(t, s, r.Snapshot, func() time.Time { return w.now }, gates,
		func(g worldGate) *worldGate { return &g })
	return w
}

// request decides one request of a visitor at a gate and keeps its ticket.
func (w *world) request(gateID string, ticket **Ticket) Decision {
	w.t.Helper()
	_, d := w.decide(gateID, w.now, ticket)
	return d
}

// gateSet is a test world's gates and what they share: one in-memory
// counter store read on the world's clock, and the generator of the
// entropy each decision draws. G is the world's own gate: a worldGate, or
// one with more state around it.
type gateSet[G interface{ base() *worldGate }] struct {
	t        *testing.T
	gates    []G
	counters Counter
	entropy  uint64
	lots     map[**Ticket]uint64 // a visitor's Input.Lot (0 unless set)
	// recordSessions applies each decision's session move to the shared
	// counters' ledger, as a gate's SessionRecorder does.
	recordSessions bool
}

// newGateSet makes the gates, all on snap with shared counters, each
// wrapped in the world's own gate type by wrap.
func newGateSet[G interface{ base() *worldGate }](t *testing.T, s Settings, snap *Snapshot, clock func() time.Time, gates []Gate, wrap func(worldGate) G) gateSet[G] {
	mc := NewMemoryCounter(clock)
	set := gateSet[G]{t: t, counters: mc}
	for _, g := range gates {
		set.gates = append(set.gates, wrap(worldGate{Gate: g, tally: NewTally(s.Name, g, 0), snap: snap, strategy: SharedCounters{mc}}))
	}
	return set
}

func (s *gateSet[G]) gate(id string) G {
	for _, g := range s.gates {
		if g.base().ID == id {
			return g
		}
	}
	s.t.Fatalf("no gate %s", id)
	var none G
	return none
}

// decide decides one request of a visitor at a gate at now, adds it to the
// gate's tally and keeps the visitor's ticket.
func (s *gateSet[G]) decide(gateID string, now time.Time, ticket **Ticket) (G, Decision) {
	s.t.Helper()
	g := s.gate(gateID)
	b := g.base()
	s.entropy = s.entropy*6364136223846793005 + 1442695040888963407
	d, err := Decide(context.Background(), Input{Now: now, Snapshot: b.snap, Ticket: *ticket, Gate: b.Gate, Strategy: b.strategy, Entropy: s.entropy >> 11, Lot: s.lots[ticket]})
	if err != nil {
		s.t.Fatal(err)
	}
	b.tally.Add(d.Effect)
	if l, ok := s.counters.(SessionLedger); ok && s.recordSessions {
		if err := RecordSession(context.Background(), l, b.snap.Room, d.Effect); err != nil {
			s.t.Fatal(err)
		}
	}
	if d.SetTicket {
		*ticket = d.Ticket
	}
	return g, d
}

// flush sends every gate's pending reports to the room, those of the
// minutes before now final, as gates send them.
func (w *world) flush() {
	for _, g := range w.gates {
		g.tally.Finish(MinuteOf(w.now, w.room.MinuteLength()))
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
		if err := MarkSnapshotRead(context.Background(), w.counters, s); err != nil {
			w.t.Fatal(err)
		}
	}
}
