package sim

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/edgeflow/edgeflow/internal/admit"
)

// Allocation is one row of the allocation accuracy table.
type Allocation struct {
	Strategy string `json:"strategy"`
	Profile  string `json:"profile"`
	// The room's utilization when the first visitor was queued for lack of
	// a slot, in % (100 if nobody was).
	QueueingStartPct float64 `json:"queueing_start_pct"`
	// Of the minutes in which someone was queued for lack of a slot, the
	// share in which the room admitted less than 98% of what its limits
	// allowed that minute, in %.
	QueueingBelowLimitsPct float64 `json:"queueing_below_limits_minutes_pct"`
	// Peak overshoot of total_active_users and of new_users_per_minute,
	// in % (0 if none), checked after every admission and every second.
	OvershootTotalPct float64 `json:"overshoot_total_pct"`
	OvershootNewPct   float64 `json:"overshoot_new_pct"`

	QueueingMinutes int `json:"queueing_minutes"`
	// Of the slots the limits allowed in queueing minutes, the share
	// admitted, and the shares left unused in reservations of queued
	// buckets and in data centers' shares (both in %).
	SlotsUsedPct      float64 `json:"slots_used_while_queueing_pct"`
	UnusedReservedPct float64 `json:"unused_reservations_pct"`
	UnusedSharesPct   float64 `json:"unused_data_center_shares_pct"`
	FirstQueueMinute  float64 `json:"first_queue_minute"` // -1 if never
	Visitors          int     `json:"visitors"`
	Admitted          int     `json:"admitted"`
	Decisions         int     `json:"decisions"`
}

// AllocationOf summarizes a run as a table row.
func AllocationOf(r *Result) Allocation {
	a := Allocation{Strategy: r.Strategy, Profile: r.Profile, QueueingStartPct: r.QueueingStartPct,
		QueueingBelowLimitsPct: r.BelowLimitsPct, OvershootTotalPct: r.OvershootTotalPct, OvershootNewPct: r.OvershootNewPct,
		QueueingMinutes: r.QueueingMinutes, FirstQueueMinute: -1, Visitors: r.Visitors, Admitted: r.Admitted, Decisions: r.Decisions}
	if r.FirstQueueAt >= 0 {
		a.FirstQueueMinute = round2(r.FirstQueueAt.Minutes())
	}
	allowed, used, reserved, shares := 0, 0, 0, 0
	for _, m := range r.Minutes[:r.CompleteMinutes] {
		if m.QueuedForLimits == 0 {
			continue
		}
		allowed += m.SlotsAllowed
		used += m.Admitted
		reserved += m.UnusedReservedAnywhere + m.UnusedReservedShares
		shares += m.UnusedNewShares + m.UnusedReservedShares
	}
	a.SlotsUsedPct, a.UnusedReservedPct, a.UnusedSharesPct = pct(used, allowed), pct(reserved, allowed), pct(shares, allowed)
	if allowed == 0 {
		a.SlotsUsedPct = 100
	}
	return a
}

// AllocationTable runs strategies against profiles (Strategies and
// Profiles: the whole table) in a room, on up to GOMAXPROCS cores; the rows
// come back in table order whatever the scheduling, each run with its own
// seeded stream. With borrow, the counters run with BorrowReserved.
func AllocationTable(ctx context.Context, seed uint64, room admit.Settings, top Topology, b Behaviour, profiles, strategies []string, borrow bool) ([]*Result, error) {
	var cfgs []Config
	for _, pn := range profiles {
		for _, s := range strategies {
			p, err := NewProfile(pn)
			if err != nil {
				return nil, err
			}
			cfgs = append(cfgs, Config{Seed: seed, Topology: top, Room: room, Strategy: s,
				BorrowReserved: borrow && s == StrategyCounters, Profile: p, Behaviour: b, Duration: p.Length(), Drain: 2 * time.Minute})
		}
	}
	return RunAll(ctx, cfgs)
}

// RunAll runs configs in parallel and returns their results in order.
func RunAll(ctx context.Context, cfgs []Config) ([]*Result, error) {
	out := make([]*Result, len(cfgs))
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(runtime.GOMAXPROCS(0))
	for i, c := range cfgs {
		g.Go(func() error {
			r, err := Run(ctx, c)
			if err != nil {
				name := "run"
				if c.Profile != nil {
					name = c.Profile.Name()
				}
				return fmt.Errorf("%s/%s: %w", name, c.Strategy, err)
			}
			out[i] = r
			return nil
		})
	}
	return out, g.Wait()
}

// SourceRoom is the room of the experiment in Cloudflare's "Waiting Room:
// Random Queueing" post: 200 new users a minute, 1,500 active, sessions of 5
// minutes.
func SourceRoom(method admit.QueueingMethod) admit.Settings {
	s := DefaultRoom()
	s.Name, s.QueueingMethod = "source", method
	return s
}

// SourceResult is that experiment run with FIFO and with random queueing on
// the same arrivals.
type SourceResult struct {
	Visitors       int
	Window         time.Duration
	FIFO, Random   *Result
	FIFOFairness   Fairness
	RandomFairness Fairness
	// The same runs with the default visitor behaviour (some give up, some
	// refresh late, some hammer), for the fairness they then keep.
	FIFOMixed, RandomMixed                 *Result
	FIFOMixedFairness, RandomMixedFairness Fairness
	// FIFO's order among the visitors of the mixed run who do not refresh
	// late (on time or hammering; some of them give up).
	FIFOMixedNotLateFairness Fairness
}

// RunSourceExperiment runs the experiment of Cloudflare's "Waiting Room:
// Random Queueing" post: n visitors arriving uniformly over window, about a
// minute of browsing each, FIFO against random, everyone refreshing on time
// and nobody giving up (as in the post), run until the queue has drained.
func RunSourceExperiment(ctx context.Context, seed uint64, n int, window time.Duration, top Topology) (*SourceResult, error) {
	cfg := func(m admit.QueueingMethod, b Behaviour) Config {
		return Config{Seed: seed, Topology: top, Room: SourceRoom(m),
			Strategy: StrategyCounters, Profile: SourceExperiment(n, window), Behaviour: b, Duration: window, Drain: 4 * time.Hour}
	}
	rs, err := RunAll(ctx, []Config{cfg(admit.FIFO, PatientBehaviour()), cfg(admit.Random, PatientBehaviour()),
		cfg(admit.FIFO, DefaultBehaviour()), cfg(admit.Random, DefaultBehaviour())})
	if err != nil {
		return nil, err
	}
	return &SourceResult{Visitors: n, Window: window, FIFO: rs[0], Random: rs[1], FIFOMixed: rs[2], RandomMixed: rs[3],
		FIFOFairness: MeasureFairness(rs[0].People), RandomFairness: MeasureFairness(rs[1].People),
		FIFOMixedFairness: MeasureFairness(rs[2].People), RandomMixedFairness: MeasureFairness(rs[3].People),
		FIFOMixedNotLateFairness: MeasureFairness(slices.DeleteFunc(slices.Clone(rs[2].People), func(p VisitorRecord) bool { return p.Refresh == Late }))}, nil
}
