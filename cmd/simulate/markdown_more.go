package main

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/edgeflow/edgeflow/internal/admit/sim"
)

// writeEarly explains the early queueing that remains, with the second
// room's table and the borrowing comparison.
func writeEarly(b *strings.Builder, r *Report) {
	w := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	w("## Where queueing still starts early, and why\n\n")
	w("**1. FIFO reservations of visitors who left.** Each minute the room reserves slots for every visitor counted in the queue the minute before. ")
	w("A visitor who gave up, or refreshes too late to come back within the minute, leaves its reservation unused, and the next bucket may not take it (FIFO). ")
	w("That is most of the counters' queueing minutes below the limits above. A fix to consider: release the reservations nobody claimed in the last seconds of a minute to the next bucket, counted on the bucket's own counter (like the borrowing below, within a pool); it trades a little of FIFO's minute order for late refreshers against slots.\n\n")

	if ab := r.ActiveBound; ab != nil {
		w("**2. When the active-users limit binds first.** The same table in a room with %s. ", roomLine(ab.Room))
		w("The room counts sessions by minute: a minute's slots are `total_active_users` minus the sessions alive when it began, so sessions that end during the minute free their place only at the next one. ")
		w("When the active-users limit binds, the first visitor is queued while the sessions that ended since the minute began are still counted, and the utilization at that moment is below 100%%. ")
		w("No strategy can avoid that without counting sessions at a finer grain than the minute (a sub-minute ledger of last check-ins, so the room can release slots as sessions end; a session renewed after its data center's report would then have to be reconciled).\n\n")
		w("%s\n", allocationMarkdown(ab.Allocation))
		if c := slices.IndexFunc(ab.Allocation, func(a sim.Allocation) bool {
			return a.Strategy == sim.StrategyCounters && a.Profile == sim.ProfileRegionalSkew
		}); c >= 0 {
			w("The counters still never overshoot here (%s) and use %s%% of the slots the limits allow while queueing in `regional-skew`.\n\n",
				maxOvershoot(filter(ab.Allocation, sim.StrategyCounters)), num(ab.Allocation[c].SlotsUsedPct))
		}
	}

	if bo := r.Borrow; bo != nil {
		w("**3. A data center's reserved share from the last minute.** Each data center's scope is its share of the previous minute's sessions (as a share of `total_active_users`), and only its own gates may spend it. ")
		w("In the four profiles that share never goes unused with the counters (the table's unused shares: %s%% at most), because a share of the *limit* is never more than what a data center's own traffic brings while that traffic holds or grows. ",
			num(maxUnusedShares(bo.Room)))
		w("It goes unused when traffic *moves*: anycast shifts a region to another data center, a regional surge ends. For up to a minute the old data center's scope waits for visitors who now arrive elsewhere, and the new data center queues them with the room below its limits — the early queueing the source's design cannot avoid, since a data center's scope is what keeps the others from racing for its slots.\n\n")
		w("The fix, `admit.BorrowingCounters` (a strategy beside `SharedCounters`, so a gate opts in): a visitor whose own scope and Anywhere are spent may take another data center's slots, up to that scope's limit pro rata of the minute elapsed, on that scope's own counter. ")
		w("The owner keeps what the rest of the minute would bring it; what it left behind is released as the minute runs out. Every slot is still taken below a scope's limit on that scope's counter, so the pools never hand out more than the minute's slots, and stale gates never borrow. ")
		w("`regional-shift` (%s) shows it, next to the four profiles:\n\n", shiftDescription(r))
		w("| room | profile | strategy | queueing starts at | queueing minutes below the limits | overshoot (total, new) | slots used while queueing |\n| --- | --- | --- | ---: | ---: | ---: | ---: |\n")
		for i, rows := range [][]sim.Allocation{bo.Room, bo.ActiveBound} {
			room := fmt.Sprintf("%d / %d", r.Room.TotalActiveUsers, r.Room.NewUsersPerMinute)
			if i == 1 && r.ActiveBound != nil {
				room = fmt.Sprintf("%d / %d", r.ActiveBound.Room.TotalActiveUsers, r.ActiveBound.Room.NewUsersPerMinute)
			}
			for _, a := range rows {
				w("| %s | `%s` | `%s` | %s%% | %s%% | %s%%, %s%% | %s%% |\n", room, a.Profile, a.Strategy, num(a.QueueingStartPct), num(a.QueueingBelowLimitsPct),
					num(a.OvershootTotalPct), num(a.OvershootNewPct), num(a.SlotsUsedPct))
			}
		}
		w("\n%s\n\n", borrowVerdict(bo))
	}
	w("**4. Snapshots in flight.** For the first seconds of each minute (the room's grace, %d s, plus the propagation delay) gates still decide on the previous minute's snapshot. ", 5)
	w("They spend a quarter of what its new visitors' pool had left, and the room holds that much for them in the new minute, so nothing overshoots; buckets' reservations are not spent on a stale snapshot (their visitors are queued already and wait those seconds). ")
	w("A burst larger than a quarter of a minute's slots in those seconds is queued a few seconds early; the spike profiles rise over a minute and do not show it.\n\n")
}

func filter(rows []sim.Allocation, strategy string) []sim.Allocation {
	return slices.DeleteFunc(slices.Clone(rows), func(a sim.Allocation) bool { return a.Strategy != strategy })
}

func maxUnusedShares(rows []sim.Allocation) float64 {
	m := 0.0
	for _, a := range rows {
		if a.Profile != sim.ProfileRegionalShift && a.Strategy == sim.StrategyCounters {
			m = math.Max(m, a.UnusedSharesPct)
		}
	}
	return m
}

func shiftDescription(r *Report) string {
	p, err := sim.NewProfile(sim.ProfileRegionalShift)
	if err != nil {
		return sim.ProfileRegionalShift
	}
	return p.Describe()
}

// borrowVerdict compares counters with and without borrowing in the
// regional shift, and checks it never overshoots.
func borrowVerdict(bo *BorrowInfo) string {
	var parts []string
	overshoot := false
	for i, rows := range [][]sim.Allocation{bo.Room, bo.ActiveBound} {
		var plain, borrow *sim.Allocation
		for j := range rows {
			a := &rows[j]
			if a.OvershootNewPct > 0 || a.OvershootTotalPct > 0 {
				overshoot = true
			}
			if a.Profile != sim.ProfileRegionalShift {
				continue
			}
			if a.Strategy == sim.StrategyCounters {
				plain = a
			} else {
				borrow = a
			}
		}
		if plain == nil || borrow == nil {
			continue
		}
		room := "the first room"
		if i == 1 {
			room = "the active-users-bound room"
		}
		parts = append(parts, fmt.Sprintf("in %s, the slots used while queueing go from %s%% to %s%% and the queueing minutes below the limits from %s%% to %s%%",
			room, num(plain.SlotsUsedPct), num(borrow.SlotsUsedPct), num(plain.QueueingBelowLimitsPct), num(borrow.QueueingBelowLimitsPct)))
	}
	verdict := "Borrowing never overshoots, in any profile or room."
	if overshoot {
		verdict = "**Borrowing overshot somewhere: see the table.**"
	}
	if len(parts) == 0 {
		return verdict
	}
	return "When traffic moves, " + strings.Join(parts, "; ") + ". " + verdict +
		" In the active-users-bound room the minute-grained session count (2.) dominates what is left."
}

func writeScale(b *strings.Builder, r *Report) {
	w := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	s := r.Scale
	w("## Scale\n\n")
	w("**The engine on one core** (`admit.Decide` with shared counters on the in-process counter, one goroutine; a measurement, different on every machine):\n\n")
	w("| decision | ns each | per second | allocations |\n| --- | ---: | ---: | ---: |\n")
	for _, t := range s.Engine {
		w("| %s | %.0f | %s | %d |\n", t.Path, t.NsPerOp, thousands(t.PerSecond), t.AllocsPerOp)
	}
	w("\nWith Redis counters in the gate a new visitor also costs one or two counter round trips; passing sessions never touch a counter. ")
	w("The whole simulator (visitors, gates, reports, rollups) ran %s decisions per second of wall time over the allocation table.\n\n", thousands(s.SimulatorDecisionsPerSecond))
	w("**The room workflow.** Every gate sends its report every %d s while it decides, and at least once a minute; each report is one signal to the room's workflow. ", r.Topology.ReportIntervalSeconds)
	w("From the same simulator, a busy room (demand at 80%% of its limits, about one visitor per gate every three seconds), measured after its first two minutes. ")
	w("Events per minute are an upper bound: one event per signal, three for a workflow task of its own, and five a minute for the rollup's timer and task; the runs continue as new at %d events.\n\n", s.HistoryBudget)
	w("| data centers × gates | gates | reports / min | signals / s | events / min (at most) | minutes per run | room state | snapshot |\n| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	for _, l := range s.Rooms {
		w("| %d × %d | %d | %s | %.1f | %s | %.1f | %s | %s |\n", l.DataCenters, l.GatesPerDataCenter, l.Gates, thousands(l.ReportsPerMinute), l.SignalsPerSecond,
			thousands(l.EventsPerMinute), l.MinutesPerRun, bytesStr(l.StateBytes), bytesStr(l.SnapshotBytes))
	}
	if len(s.Rooms) > 0 {
		last := s.Rooms[len(s.Rooms)-1]
		perGate := last.ReportsPerGate
		g10 := (float64(s.HistoryBudget)/10 - eventsPerMinute) / (eventsPerReport * perGate)
		g1 := (float64(s.HistoryBudget) - eventsPerMinute) / (eventsPerReport * perGate)
		w("\nEvents grow linearly with gates (%.1f reports per gate per minute, whatever the number of data centers); the room's state grows with data centers and gates too (the ledger keeps each gate's newest report of the open minutes), the snapshot with the gates listed per data center. ", perGate)
		w("**One room takes about %.0f gates while each run lasts at least 10 minutes, and about %.0f before it would continue as new every minute.** ", math.Floor(g10), math.Floor(g1))
		w("Beyond that, aggregate reports per data center (one aggregator merges its gates' tallies and reports as one gate, so events grow with data centers only; the even-split fallback then needs the gate count carried in the report) or shard the room by region.\n")
	}
}

func thousands(x float64) string {
	s := fmt.Sprintf("%.0f", x)
	var out []byte
	for i, c := range []byte(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, c)
	}
	return string(out)
}

func bytesStr(n int) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.0f KB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
