package main

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/edgeflow/edgeflow/internal/admit/sim"
)

// allocationMarkdown is the allocation table, profile by profile.
func allocationMarkdown(rows []sim.Allocation) string {
	var b strings.Builder
	b.WriteString("| profile | strategy | queueing starts at (% of limits) | queueing minutes below the limits | overshoot of total_active_users | overshoot of new_users_per_minute | slots used while queueing |\n")
	b.WriteString("| --- | --- | ---: | ---: | ---: | ---: | ---: |\n")
	last := ""
	for _, r := range rows {
		profile := ""
		if r.Profile != last {
			profile, last = "`"+r.Profile+"`", r.Profile
		}
		fmt.Fprintf(&b, "| %s | `%s` | %s | %s%% | %s%% | %s%% | %s%% |\n", profile, r.Strategy, startCell(r), num(r.QueueingBelowLimitsPct),
			num(r.OvershootTotalPct), num(r.OvershootNewPct), num(r.SlotsUsedPct))
	}
	return b.String()
}

// startCell is where queueing started, or that it never did.
func startCell(a sim.Allocation) string {
	if a.FirstQueueMinute < 0 {
		return "never queued"
	}
	return num(a.QueueingStartPct) + "%"
}

func num(x float64) string {
	if x == math.Trunc(x) {
		return fmt.Sprintf("%.0f", x)
	}
	return fmt.Sprintf("%.1f", x)
}

func markdown(r *Report) string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	t := r.Topology
	w("# Waiting room simulation\n\n")
	w("`%s` (seed %d). %d data centers × %d gates; a snapshot reaches the gates %d s after the room publishes it; gates report every %d s. ",
		r.Command, r.Seed, t.DataCenters, t.GatesPerDataCenter, t.PropagationDelaySeconds, t.ReportIntervalSeconds)
	w("Every request is decided by the engine the gate and the room workflow use (`admit.Decide` on the snapshot the gate holds, counters through `admit.Counter`, reports through `admit.Tally`, the minute's rollup by `admit.Room`), on a virtual clock. ")
	w("Everything below but the timings is the same for the same seed and flags.\n\n")

	writeSource(&b, r)
	writeAllocation(&b, r)
	writeEarly(&b, r)
	if r.Scale != nil {
		writeScale(&b, r)
	}
	return b.String()
}

func roomLine(rm RoomInfo) string {
	return fmt.Sprintf("`total_active_users` %d, `new_users_per_minute` %d, `session_duration` %d minutes, `%s`",
		rm.TotalActiveUsers, rm.NewUsersPerMinute, rm.SessionDuration, rm.QueueingMethod)
}

func writeSource(b *strings.Builder, r *Report) {
	w := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	s := r.Source
	w("## The experiment of Cloudflare's \"Waiting Room: Random Queueing\" post: FIFO against random\n\n")
	w("%d visitors arrive uniformly at random over %.0f minutes, spread over every gate, into a room with %s (random for the second run). ",
		s.Visitors, s.WindowMinutes, roomLine(s.Room))
	w("Once admitted they browse for 45–75 s; nobody gives up and everyone refreshes the moment the page says, as in the post. The runs go on until the queue is empty. ")
	w("Each heatmap counts the admitted visitors by arrival minute (x) and wait (y) in 30 × 30 buckets over the data's range, as the post's `numpy.histogram2d(x, y, bins=(30, 30))` did; brighter is more.\n\n")
	w("![FIFO heatmap](%s) ![random heatmap](%s)\n\n", s.FIFO.HeatmapFile, s.Random.HeatmapFile)
	w("| queue | mean wait | median wait | longest wait | queue empty after | overshoot (total, new) |\n| --- | ---: | ---: | ---: | ---: | ---: |\n")
	for _, q := range []struct {
		name string
		q    QueueInfo
	}{{"FIFO", s.FIFO}, {"random", s.Random}} {
		w("| %s | %.1f min | %.1f min | %.1f min | %d min | %s%%, %s%% |\n", q.name, q.q.MeanWait, q.q.MedianWait, q.q.MaxWait, q.q.DrainedMinutes,
			num(q.q.Overshoot[0]), num(q.q.Overshoot[1]))
	}
	ff, rf := s.FIFO.Fairness, s.Random.Fairness
	w("\n**Fairness.** FIFO promises the order of minute buckets: within a minute, a bucket's reserved slots go to whoever of it checks in first. ")
	w("Of the %d visitors FIFO admitted from the queue, %s%% entered in an earlier minute than someone of an earlier bucket; counting only pairs within one data center, %d (%s%%). ",
		ff.Admitted, num(ff.OvertakersPct), ff.OvertakersInDC, num(ff.OvertakersInDCPct))
	w("By the instant of admission instead of the minute, %s%% entered before someone of an earlier bucket: that is the order within a minute, which FIFO leaves to the check-ins. ", num(ff.OvertakersAnyTimePct))
	w("For arrival order against admission order we use Kendall's τ over every pair of admitted visitors from different buckets that were in the queue at the same time (concordant when the earlier bucket got in first): ")
	w("**τ = %.3f for FIFO** (%d pairs) and **τ = %.3f for random** (%d pairs). In a fair random queue two visitors waiting together have the same chance at every check-in, so τ should be 0: the arrival minute does not predict who goes first. ",
		ff.KendallTau, ff.Pairs, rf.KendallTau, rf.Pairs)
	w("In the random run %s%% of the admitted were overtaken by a later bucket's visitor. ", num(rf.OvertakersPct))
	w("Its slots come at random moments through the minute, so no check-in moment pays: %s%% of its admissions from the queue fell in a minute's first 5 s (1/12 of the minute: 8.3%%).\n\n", num(rf.FirstSecondsPct))
	mf, mr := s.FIFOMixed, s.RandomMixed
	w("With the allocation table's visitors instead (30%% may give up, 15%% refresh late, 5%% hammer), FIFO has %s%% overtakers overall and %s%% within a data center: a visitor who refreshes late can miss the minute its bucket was reserved in, and loses its place to later buckets, which counts everyone admitted before it as an overtaker. ",
		num(mf.OvertakersPct), num(mf.OvertakersInDCPct))
	w("Among the %d admitted from the queue who do not refresh late (some of them hammer), %d entered in an earlier minute than one of them from an earlier bucket. ", s.FIFOMixedNotLate.Admitted, s.FIFOMixedNotLate.Overtakers)
	w("Random keeps τ = %.3f. Hammering buys nothing, since a check-in before the refresh interval changes nothing: mean waits by refresh behaviour are %s in the random queue and %s in FIFO.\n\n",
		mr.KendallTau, refreshWaits(mr.MeanWaitByRefresh), refreshWaits(mf.MeanWaitByRefresh))

	w("**Random-queue estimates.** Each minute the room predicts the 25th, 50th and 75th percentile waits from `n = log(1 − p) / log(1 − P)`, `P = letInPerMinute / currentlyWaiting`. ")
	w("Against them, the waits the visitors waiting when that snapshot reached the gates then had (from that moment to admission):\n\n")
	if len(s.Estimates) > 0 {
		w("![predicted and observed waits](estimates-random.svg)\n\n")
	}
	w("| minute | waiting | let in / min | predicted p25 / p50 / p75 (min) | observed p25 / p50 / p75 (min) |\n| ---: | ---: | ---: | ---: | ---: |\n")
	errSum, n := 0.0, 0
	for i, c := range s.Estimates {
		errSum += math.Abs(c.Observed[1] - c.Predicted[1])
		n++
		if i%3 != 0 && i != len(s.Estimates)-1 {
			continue
		}
		w("| %d | %d | %.0f | %.1f / %.1f / %.1f | %.1f / %.1f / %.1f |\n", c.Minute, c.CurrentlyWaiting, c.LetInPerMinute,
			c.Predicted[0], c.Predicted[1], c.Predicted[2], c.Observed[0], c.Observed[1], c.Observed[2])
	}
	if n > 0 {
		w("\nThe median is off by %.1f minutes on average. The formula takes `P` as constant: while arrivals still join (the first %.0f minutes) each newcomer dilutes everyone's chance, so the observed waits run longer than predicted; once arrivals stop the queue shrinks, `P` grows, and they run shorter. The 75th percentile is the most sensitive, the 25th the least.\n\n",
			errSum/float64(n), s.WindowMinutes)
	}
}

func refreshWaits(m map[string]float64) string {
	var parts []string
	for _, k := range []string{"on_time", "late", "hammering"} {
		if v, ok := m[k]; ok {
			parts = append(parts, fmt.Sprintf("%s %.1f min", strings.ReplaceAll(k, "_", " "), v))
		}
	}
	return strings.Join(parts, ", ")
}

func writeAllocation(b *strings.Builder, r *Report) {
	w := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	w("## Allocation accuracy\n\n")
	w("One room, %s: with about a minute of browsing a visitor counts as active for about six minutes, so at the per-minute limit some 1,200 are active and the per-minute limit is reached first. ", roomLine(r.Room))
	bh := r.Behaviour
	w("Visitors browse %.0f–%.0f s (a page every %.0f–%.0f s); %.0f%% may give up (patience %.0f minutes on average); %.0f%% refresh %.0f–%.0f s late, %.0f%% hammer every ~%.0f s; the others refresh on time (every %d s ± 20%%).\n\n",
		bh.BrowseSeconds[0], bh.BrowseSeconds[1], bh.PageGapSeconds[0], bh.PageGapSeconds[1], 100*bh.AbandonShare, bh.PatienceMinutes,
		100*bh.LateShare, bh.LateSeconds[0], bh.LateSeconds[1], 100*bh.HammerShare, bh.HammerGapSeconds, bh.RefreshBaseSecond)
	for _, p := range r.Profiles {
		w("- `%s`: %s.\n", p.Name, p.Description)
	}
	w("\nStrategies: `even` divides each data center's share by its gates and Anywhere by all gates; `adaptive-N` divides by gates × utilization^N; `counters` are the shared counters of \"How Waiting Room makes queueing decisions\". ")
	w("**Queueing starts at** is the room's utilization when the first visitor is queued for lack of a slot, the larger of active users ÷ `total_active_users` and admitted this minute ÷ `new_users_per_minute` (above 100 when the first queueing came after an overshoot; 100 if nobody ever was). ")
	w("**Queueing minutes below the limits** is the share of the minutes with someone queued for lack of a slot in which the room admitted less than 98%% of what its limits allowed that minute. ")
	w("Overshoots are the peaks, checked after every admission and every simulated second. **Slots used while queueing**: admitted ÷ allowed over the queueing minutes.\n\n")
	w("%s\n", allocationMarkdown(r.Allocation))
	for _, line := range findings(r.Allocation) {
		w("- %s\n", line)
	}
	w("\n")
}

// findings reads the table's headline numbers.
func findings(rows []sim.Allocation) []string {
	by := func(strategy string) []sim.Allocation {
		return slices.DeleteFunc(slices.Clone(rows), func(a sim.Allocation) bool { return a.Strategy != strategy })
	}
	var out []string
	if even := by(sim.StrategyEven); len(even) > 0 {
		early := slices.MinFunc(even, func(a, b sim.Allocation) int { return cmpf(a.QueueingStartPct, b.QueueingStartPct) })
		n := 0
		for _, a := range even {
			if a.QueueingStartPct <= 85 {
				n++
			}
		}
		out = append(out, fmt.Sprintf("The even split queues early, as Cloudflare found with it: at %s%% of the limits in `%s`, at or below 85%% in %d of %d profiles; it never overshoots (%s).",
			num(early.QueueingStartPct), early.Profile, n, len(even), maxOvershoot(even)))
	}
	for _, s := range []string{sim.StrategyAdaptive1, sim.StrategyAdaptive2, sim.StrategyAdaptive3} {
		ad := by(s)
		if len(ad) == 0 {
			continue
		}
		worst := slices.MaxFunc(ad, func(a, b sim.Allocation) int { return cmpf(a.OvershootNewPct, b.OvershootNewPct) })
		if worst.OvershootNewPct > 0 {
			out = append(out, fmt.Sprintf("`%s` overshoots `new_users_per_minute` by up to %s%% (`%s`), queueing first at %s.", s, num(worst.OvershootNewPct), worst.Profile, startList(ad)))
		} else {
			out = append(out, fmt.Sprintf("`%s` does not overshoot here, queueing first at %s.", s, startList(ad)))
		}
	}
	if c := by(sim.StrategyCounters); len(c) > 0 {
		out = append(out, fmt.Sprintf("The shared counters %s and start queueing at %s.", overshootWords(c), startList(c)))
		if even := by(sim.StrategyEven); len(even) > 0 {
			var parts []string
			for _, p := range []string{sim.ProfileSpikeAfterQuiet, sim.ProfileRegionalSpike} {
				ci, ei := slices.IndexFunc(c, func(a sim.Allocation) bool { return a.Profile == p }), slices.IndexFunc(even, func(a sim.Allocation) bool { return a.Profile == p })
				if ci >= 0 && ei >= 0 {
					parts = append(parts, fmt.Sprintf("`%s` %s%% against the even split's %s%%", p, num(c[ci].QueueingStartPct), num(even[ei].QueueingStartPct)))
				}
			}
			if len(parts) > 0 {
				out = append(out, "In the spike profiles the counters queue at "+strings.Join(parts, ", ")+": the spike is admitted up to the limit and no further.")
			}
		}
		res, shares := 0.0, 0.0
		for _, a := range c {
			res, shares = math.Max(res, a.UnusedReservedPct), math.Max(shares, a.UnusedSharesPct)
		}
		out = append(out, fmt.Sprintf("Where the counters queue while below the limits, the slots that went unused were FIFO reservations nobody claimed, not even the next bucket (up to %s%% of the allowed slots), and data centers' shares (up to %s%%); see below.", num(res), num(shares)))
	}
	return out
}

func cmpf(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func startList(rows []sim.Allocation) string {
	var parts []string
	for _, a := range rows {
		parts = append(parts, fmt.Sprintf("%s%% (`%s`)", num(a.QueueingStartPct), a.Profile))
	}
	return strings.Join(parts, ", ")
}

func maxOvershoot(rows []sim.Allocation) string {
	t, n := 0.0, 0.0
	for _, a := range rows {
		t, n = math.Max(t, a.OvershootTotalPct), math.Max(n, a.OvershootNewPct)
	}
	return fmt.Sprintf("peak overshoot %s%% of total_active_users, %s%% of new_users_per_minute", num(t), num(n))
}

func overshootWords(rows []sim.Allocation) string {
	for _, a := range rows {
		if a.OvershootTotalPct > 0 || a.OvershootNewPct > 0 {
			return "overshoot (" + maxOvershoot(rows) + ")"
		}
	}
	return "never overshoot in any profile"
}
