package sim

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/edgeflow/edgeflow/internal/admit"
)

// Throughput is how fast the engine decides on one core: admit.Decide with
// shared counters on an in-process counter, the snapshot of a room with
// five data centers, one goroutine.
type Throughput struct {
	Path        string  `json:"path"` // which decision
	NsPerOp     float64 `json:"ns_per_decision"`
	PerSecond   float64 `json:"decisions_per_second"`
	AllocsPerOp int64   `json:"allocs_per_decision"`
}

// MeasureThroughput times the engine's three paths: a new visitor who gets
// a slot, a new visitor queued for lack of one, and an admitted visitor
// whose session passes. It is a measurement (wall clock), not part of any
// Result, and is never asserted on.
func MeasureThroughput() ([]Throughput, error) {
	t0 := time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)
	snapshot := func(perMinute int) (*admit.Snapshot, error) {
		r, err := admit.NewRoom(admit.Settings{Name: "bench", TotalActiveUsers: admit.MaxLimit, NewUsersPerMinute: perMinute}, 60, t0)
		if err != nil {
			return nil, err
		}
		r.PublishAtGrace = true // these reports are not final
		for dc := range 5 {
			for g := range 4 {
				rep := admit.Report{Room: "bench", DataCenter: dataCenterName(dc), Gate: gateID(dc, g), Minute: t0, Seq: 1, Seen: 100 * (dc + 1)}
				if err := r.AddReport(rep, t0); err != nil {
					return nil, err
				}
			}
		}
		r.Advance(t0.Add(time.Minute + r.Grace()))
		return r.Snapshot, nil
	}
	open, err := snapshot(admit.MaxLimit)
	if err != nil {
		return nil, err
	}
	full, err := snapshot(1)
	if err != nil {
		return nil, err
	}
	now := full.Minute.Add(30 * time.Second)
	gate := admit.Gate{DataCenter: dataCenterName(2), ID: gateID(2, 1)}
	session := &admit.Ticket{Room: "bench", BucketID: now.Add(-time.Minute).UnixMilli(), AcceptedAt: now.Add(-time.Minute).UnixMilli(), LastCheckInTime: now.Add(-time.Second).UnixMilli()}
	var failed error
	run := func(path string, snap *admit.Snapshot, ticket *admit.Ticket, want admit.Outcome) Throughput {
		res := testing.Benchmark(func(b *testing.B) {
			counter := admit.NewMemoryCounter(func() time.Time { return now })
			strategy := admit.SharedCounters{Store: counter}
			if want == admit.Queue { // spend the minute's one slot first
				_, _ = admit.Decide(context.Background(), admit.Input{Now: now, Snapshot: snap, Gate: gate, Strategy: strategy})
			}
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				d, err := admit.Decide(context.Background(), admit.Input{Now: now, Snapshot: snap, Ticket: ticket, Gate: gate, Strategy: strategy, Entropy: uint64(i)})
				if err != nil || d.Outcome != want {
					failed = fmt.Errorf("%s: decided %s (%v), want %s", path, d.Outcome, err, want)
					b.FailNow()
				}
			}
		})
		ns := float64(res.T.Nanoseconds()) / float64(max(res.N, 1))
		return Throughput{Path: path, NsPerOp: round2(ns), PerSecond: round2(1e9 / ns), AllocsPerOp: res.AllocsPerOp()}
	}
	out := []Throughput{
		run("new visitor admitted", open, nil, admit.Admit),
		run("new visitor queued", full, nil, admit.Queue),
		run("session passes", open, session, admit.Pass),
	}
	return out, failed
}

// RoomLoad is what the room workflow receives from one topology, from the
// simulator's own gates and room: reports (each one signal to the
// workflow) per minute, and the size of the room's state, which the
// workflow carries across continue-as-new.
type RoomLoad struct {
	DataCenters        int     `json:"data_centers"`
	GatesPerDataCenter int     `json:"gates_per_data_center"`
	Gates              int     `json:"gates"`
	ReportsPerMinute   float64 `json:"reports_per_minute"`
	ReportsPerGate     float64 `json:"reports_per_gate_per_minute"`
	StateBytes         int     `json:"room_state_bytes"` // the largest, at a rollup
	SnapshotBytes      int     `json:"snapshot_bytes"`
}

// MeasureRoomLoad runs a busy room (demand at 80% of the limits, every gate
// busy) on each topology for a few minutes and counts the reports the room
// receives in the minutes after the first two. Each data center's gates
// report as one, as gates sharing a data center's Redis do: one sum
// (admit.Aggregate) per data center and minute.
func MeasureRoomLoad(ctx context.Context, seed uint64, tops []Topology, minutes int) ([]RoomLoad, error) {
	var cfgs []Config
	for _, t := range tops {
		gates := t.DataCenters * t.GatesPerDataCenter
		room := DefaultRoom()
		room.Name = "load"
		room.NewUsersPerMinute = 20 * gates // about a visitor per gate every 3 seconds
		room.TotalActiveUsers = 8 * room.NewUsersPerMinute
		cfgs = append(cfgs, Config{Seed: seed, Topology: t, Room: room, Strategy: StrategyCounters,
			Profile: steady(0.8, time.Duration(minutes)*time.Minute), Behaviour: DefaultBehaviour(),
			Duration: time.Duration(minutes) * time.Minute, Drain: time.Minute, measureState: true, aggregate: true})
	}
	results, err := RunAll(ctx, cfgs)
	if err != nil {
		return nil, err
	}
	out := make([]RoomLoad, len(results))
	for i, r := range results {
		t := tops[i]
		l := RoomLoad{DataCenters: t.DataCenters, GatesPerDataCenter: t.GatesPerDataCenter, Gates: t.DataCenters * t.GatesPerDataCenter}
		sum, n := 0, 0
		for m := 2; m < minutes && m < len(r.ReportsPerMinute); m++ {
			sum += r.ReportsPerMinute[m]
			n++
		}
		if n > 0 {
			l.ReportsPerMinute = round2(float64(sum) / float64(n))
			l.ReportsPerGate = round2(l.ReportsPerMinute / float64(l.Gates))
		}
		snap, err := json.Marshal(r.room.Snapshot)
		if err != nil {
			return nil, err
		}
		l.StateBytes, l.SnapshotBytes = r.maxStateBytes, len(snap)
		r.room = nil
		out[i] = l
	}
	return out, nil
}

// steady is a constant demand, evenly over data centers and gates.
func steady(load float64, length time.Duration) Profile {
	return &rateProfile{name: "steady", length: length,
		description: fmt.Sprintf("a steady %.0f%% of the limits, evenly over data centers and gates", 100*load),
		demand:      func(_ time.Duration, _, dcs int) float64 { return load / float64(dcs) },
		gates:       func(_, n int) []float64 { return even(n) }}
}
