package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/edgeflow/edgeflow/internal/admit"
	"github.com/edgeflow/edgeflow/internal/admit/sim"
	"github.com/edgeflow/edgeflow/workflows/admit/contract"
)

// Report is report.json.
type Report struct {
	Command    string           `json:"command"`
	Seed       uint64           `json:"seed"`
	Topology   TopologyInfo     `json:"topology"`
	Behaviour  BehaviourInfo    `json:"behaviour"`
	Room       RoomInfo         `json:"room"`
	Profiles   []ProfileInfo    `json:"profiles"`
	Allocation []sim.Allocation `json:"allocation"`
	// The same table in a room whose active-users limit binds first.
	ActiveBound *TableInfo `json:"active_users_bound,omitempty"`
	// Counters with the proposed fix, in both rooms.
	Borrow *BorrowInfo  `json:"borrow_reserved,omitempty"`
	Source SourceInfo   `json:"source_experiment"`
	Scale  *ScaleInfo   `json:"scale,omitempty"`
	Files  []string     `json:"files"`
	Timing []TimingInfo `json:"timing"`
}

// TopologyInfo is the simulated network.
type TopologyInfo struct {
	DataCenters             int `json:"data_centers"`
	GatesPerDataCenter      int `json:"gates_per_data_center"`
	PropagationDelaySeconds int `json:"propagation_delay_seconds"`
	ReportIntervalSeconds   int `json:"report_interval_seconds"`
}

// BehaviourInfo is how visitors behave in the allocation table.
type BehaviourInfo struct {
	BrowseSeconds     [2]float64 `json:"browse_seconds"`
	PageGapSeconds    [2]float64 `json:"page_gap_seconds"`
	AbandonShare      float64    `json:"abandon_share"`
	PatienceMinutes   float64    `json:"patience_mean_minutes"`
	LateShare         float64    `json:"late_share"`
	LateSeconds       [2]float64 `json:"late_by_seconds"`
	HammerShare       float64    `json:"hammer_share"`
	HammerGapSeconds  float64    `json:"hammer_gap_seconds"`
	RefreshBaseSecond int        `json:"refresh_interval_seconds"`
}

// RoomInfo is a room's limits.
type RoomInfo struct {
	TotalActiveUsers  int                  `json:"total_active_users"`
	NewUsersPerMinute int                  `json:"new_users_per_minute"`
	SessionDuration   int                  `json:"session_duration"`
	QueueingMethod    admit.QueueingMethod `json:"queueing_method"`
}

// ProfileInfo names and describes a profile.
type ProfileInfo struct {
	Name        string  `json:"name"`
	Description string  `json:"description"`
	Minutes     float64 `json:"minutes"`
}

// TableInfo is an allocation table in another room.
type TableInfo struct {
	Room       RoomInfo         `json:"room"`
	Allocation []sim.Allocation `json:"allocation"`
}

// BorrowInfo compares counters with and without the proposed fix
// (BorrowingCounters), on the table's profiles and on regional-shift, and
// over several seeds in the minute regional-shift moves traffic.
type BorrowInfo struct {
	Room        []sim.Allocation `json:"room"`
	ActiveBound []sim.Allocation `json:"active_users_bound"`
	ShiftMinute []ShiftInfo      `json:"shift_minute"`
}

// ShiftInfo is the minute traffic moved, averaged over seeds: the share of
// the slots the limits allowed that were admitted, the queue decisions for
// lack of a slot, and the slots left unused in it when someone was queued.
type ShiftInfo struct {
	Room         RoomInfo `json:"room"`
	Strategy     string   `json:"strategy"`
	Seeds        []uint64 `json:"seeds"`
	MeanUsedPct  float64  `json:"mean_slots_used_pct"`
	MeanQueued   float64  `json:"mean_queued_for_lack_of_slots"`
	MeanUnused   float64  `json:"mean_slots_unused_while_queueing"`
	OvershootPct float64  `json:"largest_overshoot_pct"`
}

// shiftSeeds is how many seeds the shift minute is averaged over.
const shiftSeeds = 6

// SourceInfo is the experiment of Cloudflare's "Waiting Room: Random
// Queueing" post: FIFO against random on the same arrivals.
type SourceInfo struct {
	Visitors      int          `json:"visitors"`
	WindowMinutes float64      `json:"window_minutes"`
	Room          RoomInfo     `json:"room"`
	FIFO          QueueInfo    `json:"fifo"`
	Random        QueueInfo    `json:"random"`
	Estimates     []sim.Cohort `json:"random_estimates"`
	// Both again with the allocation table's visitors (some give up, some
	// refresh late, some hammer).
	FIFOMixed        sim.Fairness `json:"fifo_with_mixed_behaviour"`
	FIFOMixedNotLate sim.Fairness `json:"fifo_with_mixed_behaviour_not_late"`
	RandomMixed      sim.Fairness `json:"random_with_mixed_behaviour"`
}

// QueueInfo is one queueing method's run of that experiment.
type QueueInfo struct {
	Heatmap        Heatmap      `json:"heatmap"`
	HeatmapFile    string       `json:"heatmap_file"`
	Fairness       sim.Fairness `json:"fairness"`
	MeanWait       float64      `json:"mean_wait_minutes"`
	MedianWait     float64      `json:"median_wait_minutes"`
	MaxWait        float64      `json:"max_wait_minutes"`
	DrainedMinutes int          `json:"minutes_until_drained"`
	Overshoot      [2]float64   `json:"overshoot_total_new_pct"`
}

// ScaleInfo is how far one room goes.
type ScaleInfo struct {
	Engine []sim.Throughput `json:"engine_one_core"`
	// The simulator's own pace: decisions of the whole allocation table
	// per second of wall time, gates and rooms and visitors included.
	SimulatorDecisionsPerSecond float64    `json:"simulator_decisions_per_second"`
	Rooms                       []LoadInfo `json:"room_workflow"`
	HistoryBudget               int        `json:"history_budget_events"`
}

// LoadInfo is one topology's load on the room workflow, with the events
// the model gives for it.
type LoadInfo struct {
	sim.RoomLoad
	SignalsPerSecond float64 `json:"signals_per_second"`
	// Between reports sharing workflow tasks and each having its own, plus
	// the minute's timer and task; and the minutes a run then lasts before
	// it continues as new.
	EventsPerMinute [2]float64 `json:"events_per_minute"`
	MinutesPerRun   [2]float64 `json:"minutes_per_run_at_budget"`
}

// TimingInfo is how long a part took (wall clock; differs between runs).
type TimingInfo struct {
	Part    string  `json:"part"`
	Seconds float64 `json:"seconds"`
}

// The events model of the room workflow (workflows/admit): each report is a
// signal (one event). Signals that arrive while a workflow task runs share
// the next one: integration/admit's BenchmarkRoomReports measures about 1.3
// events a report when reports queue up; when each signal gets a workflow
// task of its own (scheduled, started, completed) it is 4. Each minute adds
// a timer (started, fired) and the task that handles it.
const (
	eventsPerReportBusy = 1.3
	eventsPerReportIdle = 4
	eventsPerMinute     = 5
)

// activeBoundTotal is the active-users limit of the second room: about what
// a minute of the per-minute limit keeps active (session plus browsing), so
// that the active-users limit binds first.
const activeBoundTotal = 1200

func simulate(ctx context.Context, o options, log io.Writer) (*Report, error) {
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return nil, err
	}
	top := sim.Topology{DataCenters: o.dataCenters, GatesPerDataCenter: o.gates, PropagationDelay: o.delay, ReportInterval: o.reports}
	room, behaviour := sim.DefaultRoom(), sim.DefaultBehaviour()
	bound := room
	bound.TotalActiveUsers = activeBoundTotal
	rep := &Report{Command: fmt.Sprintf("go run ./cmd/simulate --out %s --seed %d", o.out, o.seed), Seed: o.seed,
		Topology: TopologyInfo{DataCenters: o.dataCenters, GatesPerDataCenter: o.gates,
			PropagationDelaySeconds: int(o.delay / time.Second), ReportIntervalSeconds: int(o.reports / time.Second)},
		Behaviour: behaviourInfo(behaviour, room), Room: roomInfo(room)}
	for _, name := range o.profiles {
		p, err := sim.NewProfile(name)
		if err != nil {
			return nil, err
		}
		rep.Profiles = append(rep.Profiles, ProfileInfo{Name: name, Description: p.Describe(), Minutes: p.Length().Minutes()})
	}
	step := func(part string, f func() error) error {
		fmt.Fprintf(log, ">> %s\n", part)
		start := time.Now()
		err := f()
		rep.Timing = append(rep.Timing, TimingInfo{Part: part, Seconds: time.Since(start).Round(10 * time.Millisecond).Seconds()})
		return err
	}

	var tableDecisions int
	var tableSeconds float64
	if err := step("allocation table", func() error {
		start := time.Now()
		rs, err := sim.AllocationTable(ctx, o.seed, room, top, behaviour, o.profiles, o.strategies, false)
		if err != nil {
			return err
		}
		tableSeconds = time.Since(start).Seconds()
		for _, r := range rs {
			rep.Allocation = append(rep.Allocation, sim.AllocationOf(r))
			tableDecisions += r.Decisions
		}
		return nil
	}); err != nil {
		return nil, err
	}
	if err := step("allocation table, active-users-bound room", func() error {
		rs, err := sim.AllocationTable(ctx, o.seed, bound, top, behaviour, o.profiles, o.strategies, false)
		if err != nil {
			return err
		}
		rep.ActiveBound = &TableInfo{Room: roomInfo(bound)}
		for _, r := range rs {
			rep.ActiveBound.Allocation = append(rep.ActiveBound.Allocation, sim.AllocationOf(r))
		}
		return nil
	}); err != nil {
		return nil, err
	}
	if o.borrow {
		if err := step("counters with and without borrowing", func() error {
			var err error
			rep.Borrow, err = borrowing(ctx, o, top, behaviour, room, bound)
			return err
		}); err != nil {
			return nil, err
		}
	}
	if err := step("source experiment", func() error { return sourceExperiment(ctx, o, top, rep) }); err != nil {
		return nil, err
	}
	if o.scale {
		if err := step("scale", func() error { return scale(ctx, o, rep, tableDecisions, tableSeconds) }); err != nil {
			return nil, err
		}
	}
	rep.Files = append(rep.Files, "report.md", "report.json")
	data, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(o.out, "report.json"), append(data, '\n'), 0o644); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(o.out, "report.md"), []byte(markdown(rep)), 0o644); err != nil {
		return nil, err
	}
	return rep, nil
}

// borrowing runs the shared counters with and without BorrowingCounters on
// the table's profiles and on regional-shift, in both rooms.
func borrowing(ctx context.Context, o options, top sim.Topology, b sim.Behaviour, rooms ...admit.Settings) (*BorrowInfo, error) {
	profiles := append(slices.Clone(o.profiles), sim.ProfileRegionalShift)
	var cfgs []sim.Config
	for _, rm := range rooms {
		for _, pn := range profiles {
			p, err := sim.NewProfile(pn)
			if err != nil {
				return nil, err
			}
			for _, borrow := range []bool{false, true} {
				cfgs = append(cfgs, sim.Config{Seed: o.seed, Topology: top, Room: rm, Strategy: sim.StrategyCounters,
					BorrowReserved: borrow, Profile: p, Behaviour: b, Duration: p.Length(), Drain: 2 * time.Minute})
			}
		}
	}
	tableRuns := len(cfgs)
	shift, err := sim.NewProfile(sim.ProfileRegionalShift)
	if err != nil {
		return nil, err
	}
	for _, rm := range rooms {
		for _, borrow := range []bool{false, true} {
			for s := range uint64(shiftSeeds) {
				cfgs = append(cfgs, sim.Config{Seed: o.seed + s, Topology: top, Room: rm, Strategy: sim.StrategyCounters,
					BorrowReserved: borrow, Profile: shift, Behaviour: b, Duration: shift.Length(), Drain: 2 * time.Minute})
			}
		}
	}
	rs, err := sim.RunAll(ctx, cfgs)
	if err != nil {
		return nil, err
	}
	info := &BorrowInfo{}
	for i, r := range rs[:tableRuns] {
		a := sim.AllocationOf(r)
		if cfgs[i].BorrowReserved {
			a.Strategy = admit.BorrowingCounters{}.Name()
		}
		if i < tableRuns/2 {
			info.Room = append(info.Room, a)
		} else {
			info.ActiveBound = append(info.ActiveBound, a)
		}
	}
	for i := tableRuns; i < len(rs); i += shiftSeeds {
		cfg := cfgs[i]
		s := ShiftInfo{Room: roomInfo(cfg.Room), Strategy: sim.StrategyCounters}
		if cfg.BorrowReserved {
			s.Strategy = admit.BorrowingCounters{}.Name()
		}
		for _, r := range rs[i : i+shiftSeeds] {
			m := r.Minutes[sim.ShiftMinute]
			used := 100 * float64(m.Admitted) / float64(max(m.SlotsAllowed, 1))
			s.Seeds = append(s.Seeds, r.Seed)
			s.MeanUsedPct += used / shiftSeeds
			s.MeanQueued += float64(m.QueuedForLimits) / shiftSeeds
			if m.QueuedForLimits > 0 {
				s.MeanUnused += float64(max(0, m.SlotsAllowed-m.Admitted)) / shiftSeeds
			}
			s.OvershootPct = math.Max(s.OvershootPct, math.Max(r.OvershootNewPct, r.OvershootTotalPct))
		}
		s.MeanUsedPct, s.MeanQueued, s.MeanUnused = round2(s.MeanUsedPct), round2(s.MeanQueued), round2(s.MeanUnused)
		info.ShiftMinute = append(info.ShiftMinute, s)
	}
	return info, nil
}

func sourceExperiment(ctx context.Context, o options, top sim.Topology, rep *Report) error {
	res, err := sim.RunSourceExperiment(ctx, o.seed, o.visitors, o.window, top)
	if err != nil {
		return err
	}
	rep.Source = SourceInfo{Visitors: res.Visitors, WindowMinutes: res.Window.Minutes(), Room: roomInfo(sim.SourceRoom(admit.FIFO)),
		Estimates: res.Random.Cohorts, FIFOMixed: res.FIFOMixedFairness,
		FIFOMixedNotLate: res.FIFOMixedNotLateFairness, RandomMixed: res.RandomMixedFairness}
	for _, q := range []struct {
		r     *sim.Result
		f     sim.Fairness
		into  *QueueInfo
		file  string
		title string
	}{
		{res.FIFO, res.FIFOFairness, &rep.Source.FIFO, "heatmap-fifo.svg", "FIFO"},
		{res.Random, res.RandomFairness, &rep.Source.Random, "heatmap-random.svg", "random"},
	} {
		*q.into = queueInfo(q.r, q.f)
		q.into.HeatmapFile = q.file
		title := fmt.Sprintf("%s: %d visitors over %.0f minutes", q.title, res.Visitors, res.Window.Minutes())
		if err := SaveHeatmap(q.into.Heatmap, title, filepath.Join(o.out, q.file)); err != nil {
			return err
		}
		rep.Files = append(rep.Files, q.file)
	}
	if len(res.Random.Cohorts) > 0 {
		if err := SaveEstimates(res.Random.Cohorts, filepath.Join(o.out, "estimates-random.svg")); err != nil {
			return err
		}
		rep.Files = append(rep.Files, "estimates-random.svg")
	}
	return nil
}

func queueInfo(r *sim.Result, f sim.Fairness) QueueInfo {
	q := QueueInfo{Heatmap: NewHeatmap(r.People), Fairness: f, DrainedMinutes: r.CompleteMinutes,
		Overshoot: [2]float64{r.OvershootTotalPct, r.OvershootNewPct}}
	var waits []float64
	for _, p := range r.People {
		if w := p.Wait(); w >= 0 {
			waits = append(waits, w.Minutes())
		}
	}
	slices.Sort(waits)
	sum := 0.0
	for _, w := range waits {
		sum += w
	}
	if len(waits) > 0 {
		q.MeanWait = round2(sum / float64(len(waits)))
		q.MedianWait = round2(sim.Percentile(waits, 0.5))
		q.MaxWait = round2(waits[len(waits)-1])
	}
	return q
}

func scale(ctx context.Context, o options, rep *Report, tableDecisions int, tableSeconds float64) error {
	engine, err := sim.MeasureThroughput()
	if err != nil {
		return err
	}
	rep.Scale = &ScaleInfo{Engine: engine, HistoryBudget: contract.DefaultHistoryBudget}
	if tableSeconds > 0 {
		rep.Scale.SimulatorDecisionsPerSecond = round2(float64(tableDecisions) / tableSeconds)
	}
	var tops []sim.Topology
	for _, t := range [][2]int{{1, 1}, {5, 4}, {10, 10}, {20, 25}, {50, 40}} {
		tops = append(tops, sim.Topology{DataCenters: t[0], GatesPerDataCenter: t[1], PropagationDelay: o.delay, ReportInterval: o.reports})
	}
	loads, err := sim.MeasureRoomLoad(ctx, o.seed, tops, 6)
	if err != nil {
		return err
	}
	budget := float64(contract.DefaultHistoryBudget)
	for _, l := range loads {
		lo, hi := eventsPerReportBusy*l.ReportsPerMinute+eventsPerMinute, eventsPerReportIdle*l.ReportsPerMinute+eventsPerMinute
		rep.Scale.Rooms = append(rep.Scale.Rooms, LoadInfo{RoomLoad: l, SignalsPerSecond: round2(l.ReportsPerMinute / 60),
			EventsPerMinute: [2]float64{round2(lo), round2(hi)}, MinutesPerRun: [2]float64{round2(budget / hi), round2(budget / lo)}})
	}
	return nil
}

func roomInfo(s admit.Settings) RoomInfo {
	return RoomInfo{TotalActiveUsers: s.TotalActiveUsers, NewUsersPerMinute: s.NewUsersPerMinute, SessionDuration: s.SessionDuration, QueueingMethod: s.QueueingMethod}
}

func behaviourInfo(b sim.Behaviour, s admit.Settings) BehaviourInfo {
	sec := func(d time.Duration) float64 { return d.Seconds() }
	return BehaviourInfo{BrowseSeconds: [2]float64{sec(b.BrowseMin), sec(b.BrowseMax)}, PageGapSeconds: [2]float64{sec(b.PageGapMin), sec(b.PageGapMax)},
		AbandonShare: b.AbandonShare, PatienceMinutes: b.PatienceMean.Minutes(), LateShare: b.LateShare,
		LateSeconds: [2]float64{sec(b.LateMin), sec(b.LateMax)}, HammerShare: b.HammerShare, HammerGapSeconds: sec(b.HammerGap),
		RefreshBaseSecond: s.RefreshIntervalSeconds}
}

func round2(x float64) float64 { return float64(int64(x*100+0.5)) / 100 }
