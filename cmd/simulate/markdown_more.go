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
	w("A visitor who gave up, or refreshes too late to come back within the minute, leaves its reservation unused. ")
	w("In the minute's last refresh interval (from 36 s of 60 with 20-s refreshes, never before half the minute) the slots a bucket has not claimed go to the next bucket, the oldest one with visitors the reservations did not cover (everyone, when they cover every counted visitor), counted on the reserving bucket's own counter (`admit.ReleaseAfter`). When that bucket's own reservation covers part of it, the bucket after it may take what is left of that reservation's Anywhere scope: every visitor of it who was refused a slot tried Anywhere, so none was. ")
	w("Before, those unused reservations made 14–38%% of the counters' queueing minutes below the limits; the rest came in the first seconds of a minute, before its snapshot reaches the gates (item 4). ")
	w("Every visitor who refreshes on time checks in once in that interval, so FIFO's order of minutes holds among them; a visitor who refreshes so late that it misses it loses the slot, as it loses its place already.\n\n")

	if ab := r.ActiveBound; ab != nil {
		w("**2. When the active-users limit binds first.** The same table in a room with %s. ", roomLine(ab.Room))
		w("The room counts sessions by minute: a minute's slots are `total_active_users` minus the sessions alive when it began, so sessions that end during the minute would free their place only at the next one. ")
		w("The gates also keep a sub-minute ledger of the room's sessions by expiry second on the shared counters (`admit.SessionLedger`, on the Anywhere Redis: an admission adds one, a renewal moves it, a revocation removes it), and the counters strategies admit in the place of each session counted at the minute's start within the second it ends, never past either limit, also in the first seconds of the next minute, on the last minute's snapshot (item 4). ")
		w("Without it (the simulator's `Config.NoSessionLedger`) the first visitor was queued here at 86.9%% of the limits in `regional-skew` at seed 1 (83.8–98%% in other profiles and seeds), and 8%% of `regional-shift`'s queueing minutes were below the limits; with it no cell of this table or of item 3's queues before the limits or below them at seeds 1–5 (`go test -run TestCountersQueueOnlyAtTheLimits -v ./internal/admit/sim/`). ")
		w("A ledger entry a gate could not write (its Anywhere Redis failed) is lost: a lost renewal may free its session's place up to a renewal interval early.\n\n")
		w("%s\n", allocationMarkdown(ab.Allocation))
		if c := slices.IndexFunc(ab.Allocation, func(a sim.Allocation) bool {
			return a.Strategy == sim.StrategyCounters && a.Profile == sim.ProfileRegionalSkew
		}); c >= 0 {
			w("The counters still never overshoot here (%s) and use %s%% of the slots the limits allow while queueing in `regional-skew`: a minute's slots are counted from its start, and the ledger admits beyond them in the place of the sessions that end during it.\n\n",
				maxOvershoot(filter(ab.Allocation, sim.StrategyCounters)), num(ab.Allocation[c].SlotsUsedPct))
		}
	}

	if bo := r.Borrow; bo != nil {
		w("**3. A data center's reserved share from the last minute.** Each data center's scope is the sessions it saw in the previous minute as a share of `total_active_users`, applied to this minute's slots, and only its own gates may spend it. ")
		w("In the four profiles that share never goes unused with the counters (unused shares: %s%% of the slots at most): while a data center's traffic holds or grows, its share of the *limit* is less than what its own visitors ask for, and what they ask beyond it comes from Anywhere, which every data center may use. ",
			num(maxUnusedShares(bo.Room)))
		w("It goes unused when traffic *moves*: anycast shifts a region to another data center, a regional surge ends. For up to a minute the old data center's scope waited for visitors who now arrive elsewhere, and the new data center queued them with the room below its limits (in `regional-shift`, 60%% of the counters' queueing minutes with 1500 / 200, 12%% with 1200 / 200).\n\n")
		w("So the shared counters (`admit.SharedCounters`) keep Cloudflare's rule for the first part of the minute, which keeps the data centers from racing for each other's slots, and release what a scope has not spent in the minute's last refresh interval, as the FIFO reservations (`admit.ReleaseAfter`): from then a visitor whose own scope and Anywhere are spent may take it, on that scope's own counter, below its limit, so the pools never hand out more than the minute's slots. Stale gates never take a released share; it needs every data center's counters in one store (one Redis), and a random queue, whose slots come at random moments, releases none. ")
		w("`admit.BorrowingCounters` (a strategy beside it, so a gate opts in) also lends a scope before that, up to its limit pro rata of the minute elapsed. ")
		w("`regional-shift` (%s) shows both, next to the four profiles:\n\n", shiftDescription(r))
		w("| room | profile | strategy | queueing starts at | queueing minutes below the limits | overshoot (total, new) | slots used while queueing |\n| --- | --- | --- | ---: | ---: | ---: | ---: |\n")
		for i, rows := range [][]sim.Allocation{bo.Room, bo.ActiveBound} {
			room := fmt.Sprintf("%d / %d", r.Room.TotalActiveUsers, r.Room.NewUsersPerMinute)
			if i == 1 && r.ActiveBound != nil {
				room = fmt.Sprintf("%d / %d", r.ActiveBound.Room.TotalActiveUsers, r.ActiveBound.Room.NewUsersPerMinute)
			}
			for _, a := range rows {
				w("| %s | `%s` | `%s` | %s | %s%% | %s%%, %s%% | %s%% |\n", room, a.Profile, a.Strategy, startCell(a), num(a.QueueingBelowLimitsPct),
					num(a.OvershootTotalPct), num(a.OvershootNewPct), num(a.SlotsUsedPct))
			}
		}
		w("\n%s\n\n", borrowVerdict(bo))
		if len(bo.ShiftMinute) > 0 {
			w("Whether the shift queues anyone depends on how many visitors that minute brings, so here is the minute traffic moved, averaged over %d seeds (queue decisions count every check-in of a queued visitor):\n\n", len(bo.ShiftMinute[0].Seeds))
			w("| room | strategy | slots admitted of those the limits allowed | queue decisions for lack of a slot | slots left unused while someone was queued | largest overshoot |\n| --- | --- | ---: | ---: | ---: | ---: |\n")
			for _, s := range bo.ShiftMinute {
				w("| %d / %d | `%s` | %s%% | %s | %s | %s%% |\n", s.Room.TotalActiveUsers, s.Room.NewUsersPerMinute, s.Strategy, num(s.MeanUsedPct), num(s.MeanQueued), num(s.MeanUnused), num(s.OvershootPct))
			}
			w("\n")
		}
	}
	w("**4. Snapshots in flight.** For the first seconds of each minute (the room's grace, %d s, plus the propagation delay) gates still decide on the previous minute's snapshot. ", 5)
	w("They spend a quarter of what its new visitors' pool had left, and the room holds that much for them in the new minute, so nothing overshoots; buckets' reservations are not spent on a stale snapshot (their visitors are queued already and wait those seconds). ")
	w("A burst larger than a quarter of a minute's slots in those seconds is queued a few seconds early; the spike profiles rise over a minute and do not show it. ")
	w("When `total_active_users` binds, or may bind in the next minute, a minute after a full one leaves them nothing of its pools, so a snapshot then also says how many places of sessions ending in its minute the gates may fill in the next one (`staleFreed`: the sessions expiring in it, at most half of `new_users_per_minute`). ")
	w("A gate on it admits one visitor per session the ledger counts as ended since the snapshot's minute began, less what that minute admitted beyond its slots, counted on the new minute's new visitors' Anywhere counter, and the room holds that many of the new minute's slots there (never more than it has), so the new minute hands out at most its slots plus the sessions ended in it; in a FIFO room that queues, only visitors of the buckets the new minute reserves for take them (`admit.StaleFreedCap`). ")
	w("Before, those gates queued the visitors of those seconds at 87%% of the limits, in minutes that then admitted everyone who asked. ")
	w("What is held sits in the new visitors' Anywhere scope, so `even` and `adaptive-*`, which divide Anywhere between all gates, measure differently from before in the minutes after a bound one (the tables above; the counters do not).\n\n")
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

// borrowVerdict says what borrowing changed in the table: nothing where no
// share went unused, and never an overshoot.
func borrowVerdict(bo *BorrowInfo) string {
	overshoot, changed := false, []string{}
	for _, rows := range [][]sim.Allocation{bo.Room, bo.ActiveBound} {
		for j, a := range rows {
			if a.OvershootNewPct > 0 || a.OvershootTotalPct > 0 {
				overshoot = true
			}
			if j%2 == 1 && a.Profile != sim.ProfileRegionalShift {
				p := rows[j-1]
				if p.QueueingStartPct != a.QueueingStartPct || p.SlotsUsedPct != a.SlotsUsedPct || p.QueueingBelowLimitsPct != a.QueueingBelowLimitsPct {
					changed = append(changed, "`"+a.Profile+"`")
				}
			}
		}
	}
	verdict := "Borrowing never overshoots, in any profile or room"
	if overshoot {
		verdict = "**Borrowing overshot somewhere: see the table**"
	}
	if len(changed) == 0 {
		return verdict + "; in the four profiles it changes nothing, since no share goes unused there."
	}
	return verdict + "; in the four profiles it changes " + strings.Join(slices.Compact(changed), ", ") + "."
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
	w("**The room workflow.** Every gate writes its report every %d s while it decides, one more after each minute, and at least one a minute when idle, into its data center's store (Redis in `cmd/gate`); once a minute has ended, one report per data center, the sum of its gates' (`admit.Aggregate`, which the gate's aggregator sends too), goes to the room: one signal to the room's workflow. ", r.Topology.ReportIntervalSeconds)
	w("From the same simulator, a busy room (demand at 80%% of its limits, about one visitor per gate every three seconds), counted after its first two minutes. ")
	w("Events per minute: each report is %.1f events when reports queue up and share workflow tasks (measured by `BenchmarkRoomReports` in `integration/admit`) and up to %d when each gets a task of its own; five more a minute for the rollup's timer and task. Runs continue as new at %s events.\n\n",
		eventsPerReportBusy, eventsPerReportIdle, thousands(float64(s.HistoryBudget)))
	w("| data centers × gates | gates | reports / min | signals / s | events / min | minutes per run | room state (largest) | snapshot |\n| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	for _, l := range s.Rooms {
		w("| %d × %d | %d | %s | %.1f | %s–%s | %s–%s | %s | %s |\n", l.DataCenters, l.GatesPerDataCenter, l.Gates, thousands(l.ReportsPerMinute), l.SignalsPerSecond,
			thousands(l.EventsPerMinute[0]), thousands(l.EventsPerMinute[1]), minutes(l.MinutesPerRun[0]), minutes(l.MinutesPerRun[1]), bytesStr(l.StateBytes), bytesStr(l.SnapshotBytes))
	}
	if len(s.Rooms) > 0 {
		last := s.Rooms[len(s.Rooms)-1]
		perGate := last.ReportsPerGate
		perGateState := float64(last.StateBytes) / float64(last.Gates)
		w("\nEvents grow with data centers, not gates (%.2f reports per gate per minute, one per data center); gates only add to the counts in their data center's report. ", perGate)
		perDC := last.ReportsPerMinute / float64(last.DataCenters)
		perDCState := float64(last.StateBytes) / float64(last.DataCenters)
		_ = perGateState
		dcs := 100.0
		w("The state a run carries into the next grows with data centers too (the newest report of every data center for the open minutes: about %s each). ", bytesStr(int(perDCState)))
		w("So **a room of %.0f data centers**, however many gates each, gets %.1f reports a second and writes %s–%s events a minute (a new run every %s–%s) carrying about %s (`BenchmarkRoom5000Gates` in `make bench` runs 100 × 50 gates on the dev server).\n",
			dcs, dcs*perDC/60, thousands(dcs*perDC*eventsPerReportBusy+eventsPerMinute), thousands(dcs*perDC*eventsPerReportIdle+eventsPerMinute),
			minutes(float64(s.HistoryBudget)/(dcs*perDC*eventsPerReportIdle+eventsPerMinute)), minutes(float64(s.HistoryBudget)/(dcs*perDC*eventsPerReportBusy+eventsPerMinute)), bytesStr(int(dcs*perDCState)))
	}
}

func minutes(m float64) string {
	if m < 1 {
		return fmt.Sprintf("%.0f s", m*60)
	}
	return fmt.Sprintf("%.1f min", m)
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
