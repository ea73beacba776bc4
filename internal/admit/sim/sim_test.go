package sim

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/edgeflow/edgeflow/internal/admit"
)

func profile(t *testing.T, name string) Profile {
	t.Helper()
	p, err := NewProfile(name)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func run(t *testing.T, cfg Config) *Result {
	t.Helper()
	r, err := Run(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// A run is a function of its config: the same seed gives the same result,
// visitor by visitor and minute by minute, however often it runs and
// whether runs go in parallel (Go randomizes map iteration on every range,
// so an output that depended on it would differ between these runs). A
// different seed gives a different run.
func TestDeterministicForASeed(t *testing.T) {
	cfgs := func(seed uint64) []Config {
		var out []Config
		for _, s := range []string{StrategyEven, StrategyCounters} {
			out = append(out, Config{Seed: seed, Profile: profile(t, ProfileRegionalSkew), Strategy: s, Duration: 40 * time.Minute, Drain: time.Minute},
				Config{Seed: seed, Profile: SourceExperiment(600, 5*time.Minute), Room: SourceRoom(admit.Random), Strategy: s, Duration: 5 * time.Minute})
		}
		return out
	}
	first, err := RunAll(t.Context(), cfgs(7))
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		again, err := RunAll(t.Context(), cfgs(7))
		if err != nil {
			t.Fatal(err)
		}
		for i := range first {
			if !reflect.DeepEqual(first[i], again[i]) {
				t.Fatalf("run %d (%s/%s) differs between two runs of the same seed", i, first[i].Profile, first[i].Strategy)
			}
		}
	}
	other := run(t, cfgs(8)[0])
	if reflect.DeepEqual(first[0].People, other.People) {
		t.Error("seeds 7 and 8 gave the same visitors")
	}
}

// Every visitor ends in exactly one state, every arrival and admission is
// counted in its minute, and the room's own counts (from the gates'
// reports) agree with the ground truth minute by minute.
func TestCountsConserved(t *testing.T) {
	for _, c := range []struct {
		profile, strategy string
	}{
		{ProfileUniform, StrategyCounters}, {ProfileRegionalSkew, StrategyEven}, {ProfileSpikeAfterQuiet, StrategyAdaptive3},
		{ProfileRegionalSpike, StrategyCounters}, {ProfileRegionalShift, StrategyCounters},
	} {
		t.Run(c.profile+"/"+c.strategy, func(t *testing.T) {
			p := profile(t, c.profile)
			r := run(t, Config{Seed: 3, Profile: p, Strategy: c.strategy, Duration: p.Length(), Drain: 3 * time.Minute})
			if r.Visitors == 0 || r.Admitted+r.Abandoned+r.StillWaiting != r.Visitors {
				t.Errorf("%d visitors, %d admitted + %d gave up + %d waiting", r.Visitors, r.Admitted, r.Abandoned, r.StillWaiting)
			}
			arrivals, admitted, people := 0, 0, 0
			for _, m := range r.Minutes {
				arrivals += m.Arrivals
				admitted += m.Admitted
			}
			for _, v := range r.People {
				if v.AdmittedAt >= 0 {
					people++
				}
			}
			if arrivals != r.Visitors || admitted != r.Admitted || people != r.Admitted {
				t.Errorf("minutes count %d arrivals and %d admissions, visitors %d, %d admitted (%d by their records)", arrivals, admitted, r.Visitors, r.Admitted, people)
			}
			if r.RoomAdmittedDiffs != 0 || r.RoomActiveError != 0 {
				t.Errorf("the room's counts differ from the ground truth: %d minutes of admissions, active users by up to %d", r.RoomAdmittedDiffs, r.RoomActiveError)
			}
			closed := 0
			for _, m := range r.Minutes {
				if m.RoomAdmitted >= 0 {
					closed++
				}
			}
			if closed < r.CompleteMinutes-1 {
				t.Errorf("the room closed %d of %d minutes", closed, r.CompleteMinutes)
			}
		})
	}
}

// The limits are checked at every simulated second (and after every
// admission); the check finds the adaptive split's overshoot after a quiet
// spell, and nothing with the counters or the even split.
func TestLimitsCheckedEverySecond(t *testing.T) {
	p := profile(t, ProfileSpikeAfterQuiet)
	for _, c := range []struct {
		strategy  string
		overshoot bool
	}{{StrategyCounters, false}, {StrategyEven, false}, {StrategyAdaptive3, true}} {
		r := run(t, Config{Seed: 1, Profile: p, Strategy: c.strategy, Duration: p.Length(), Drain: time.Minute})
		seconds := int(r.Duration / time.Second)
		if r.LimitChecks < seconds+r.Admitted {
			t.Errorf("%s: %d limit checks for %d seconds and %d admissions", c.strategy, r.LimitChecks, seconds, r.Admitted)
		}
		if got := r.OvershootNewPct > 0 || r.OvershootTotalPct > 0; got != c.overshoot {
			t.Errorf("%s: overshoot %.2f%% / %.2f%% (peak %d active, %d in a minute)", c.strategy, r.OvershootTotalPct, r.OvershootNewPct, r.PeakActive, r.PeakMinute)
		}
		if c.strategy == StrategyCounters && r.PeakMinute != r.NewUsersPerMinute {
			t.Errorf("%s: the spike never filled a minute (peak %d of %d), so the check proves little", c.strategy, r.PeakMinute, r.NewUsersPerMinute)
		}
	}
}

// The headline properties on a small configuration, so `make test`
// guards them: the counters never overshoot and queue only at the limits
// where the traffic ramps, and in the spikes later than the even split,
// which queues early; FIFO never lets a later minute bucket overtake an
// earlier one within a data center; in a random queue the arrival minute
// says nothing about who goes first; borrowing fills a share traffic left.
func TestHeadline(t *testing.T) {
	var cfgs []Config
	for _, pn := range Profiles {
		p := profile(t, pn)
		for _, s := range []string{StrategyEven, StrategyCounters} {
			cfgs = append(cfgs, Config{Seed: 1, Profile: p, Strategy: s, Duration: p.Length(), Drain: time.Minute})
		}
	}
	shift := profile(t, ProfileRegionalShift)
	cfgs = append(cfgs, Config{Seed: 1, Profile: shift, Strategy: StrategyCounters, Duration: shift.Length(), Drain: time.Minute},
		Config{Seed: 1, Profile: shift, Strategy: StrategyCounters, BorrowReserved: true, Duration: shift.Length(), Drain: time.Minute})
	rs, err := RunAll(t.Context(), cfgs)
	if err != nil {
		t.Fatal(err)
	}
	start := map[string]float64{} // by strategy/profile; looked up only
	evenEarly := false
	for _, r := range rs {
		a := AllocationOf(r)
		key := r.Strategy + "/" + r.Profile
		if r.Strategy == StrategyCounters && (a.OvershootNewPct > 0 || a.OvershootTotalPct > 0) {
			t.Errorf("%s overshoots: %.2f%% total, %.2f%% new", key, a.OvershootTotalPct, a.OvershootNewPct)
		}
		if r.Strategy == StrategyEven && a.QueueingStartPct <= 85 {
			evenEarly = true
		}
		if _, seen := start[key]; !seen {
			start[key] = a.QueueingStartPct
		}
	}
	for _, pn := range []string{ProfileUniform, ProfileRegionalSkew} {
		if s := start[StrategyCounters+"/"+pn]; s < 98 {
			t.Errorf("counters start queueing at %.2f%% in %s, want at least 98%%", s, pn)
		}
	}
	for _, pn := range []string{ProfileSpikeAfterQuiet, ProfileRegionalSpike} {
		if c, e := start[StrategyCounters+"/"+pn], start[StrategyEven+"/"+pn]; c <= e {
			t.Errorf("%s: counters start queueing at %.2f%%, not later than the even split's %.2f%%", pn, c, e)
		}
	}
	if !evenEarly {
		t.Error("the even split never started queueing at or below 85% of the limits (the early queueing Cloudflare found with it)")
	}
	plain, borrow := AllocationOf(rs[len(rs)-2]), AllocationOf(rs[len(rs)-1])
	// Both fill the share traffic left: the counters release it late in
	// the minute (release.go), borrowing lends it at the minute's pace.
	if borrow.OvershootNewPct > 0 || borrow.OvershootTotalPct > 0 || plain.OvershootNewPct > 0 || plain.OvershootTotalPct > 0 ||
		borrow.SlotsUsedPct < 98 || plain.SlotsUsedPct < 98 {
		t.Errorf("regional shift: counters use %.1f%% of the slots while queueing (overshoot %.2f%%, %.2f%%), with borrowing %.1f%% (overshoot %.2f%%, %.2f%%)",
			plain.SlotsUsedPct, plain.OvershootTotalPct, plain.OvershootNewPct, borrow.SlotsUsedPct, borrow.OvershootTotalPct, borrow.OvershootNewPct)
	}

	for seed := uint64(1); seed <= 2; seed++ {
		res, err := RunSourceExperiment(t.Context(), seed, 2500, 8*time.Minute, Topology{DataCenters: 5, GatesPerDataCenter: 4, PropagationDelay: 5 * time.Second, ReportInterval: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		f, r := res.FIFOFairness, res.RandomFairness
		// τ counts pairs by admission instant: a visitor queued in its
		// minute's last second and admitted at its counting check-in a
		// second later, in the next minute's new visitors' pool (as that
		// minute's new arrivals are), goes before older buckets' visitors
		// whose check-ins come later in that minute (0.899 at seed 1).
		if f.Admitted < 1000 || f.OvertakersInDC != 0 || f.Overtakers != 0 || f.KendallTau < 0.89 {
			t.Errorf("seed %d FIFO: %d admitted from the queue, %d overtakers (%d within a data center), τ %.3f", seed, f.Admitted, f.Overtakers, f.OvertakersInDC, f.KendallTau)
		}
		// With visitors who give up, hammer or refresh late, FIFO still
		// keeps the order among those who do not refresh late.
		if m := res.FIFOMixedNotLateFairness; m.Admitted < 500 || m.Overtakers != 0 {
			t.Errorf("seed %d FIFO, mixed behaviour: of %d admitted from the queue who do not refresh late, %d entered before one of them from an earlier bucket", seed, m.Admitted, m.Overtakers)
		}
		if r.Admitted < 1000 || r.KendallTau > 0.1 || r.KendallTau < -0.1 {
			t.Errorf("seed %d random: %d admitted from the queue, τ %.3f over %d pairs, want about 0", seed, r.Admitted, r.KendallTau, r.Pairs)
		}
		// The random queue's slots come at random moments of the minute:
		// about 1/12 of its admissions in a minute's first 5 s (a quarter,
		// when gates on the last minute's snapshot spent theirs at once).
		if r.FirstSecondsPct > 12 || res.RandomMixedFairness.FirstSecondsPct > 12 {
			t.Errorf("seed %d random: %.1f%% (mixed visitors: %.1f%%) admitted in a minute's first 5 s, want about 8.3%%", seed, r.FirstSecondsPct, res.RandomMixedFairness.FirstSecondsPct)
		}
		if res.FIFO.OvershootNewPct > 0 || res.Random.OvershootNewPct > 0 || res.FIFO.StillWaiting+res.Random.StillWaiting != 0 {
			t.Errorf("seed %d: overshoot %.2f%% / %.2f%%, %d still waiting", seed, res.FIFO.OvershootNewPct, res.Random.OvershootNewPct, res.FIFO.StillWaiting+res.Random.StillWaiting)
		}
	}
}

func TestConfigErrorsSayWhat(t *testing.T) {
	for _, c := range []struct {
		mut  func(*Config)
		want string
	}{
		{func(c *Config) { c.DataCenters = -1 }, "data centers"},
		{func(c *Config) { c.PropagationDelay = 1500 * time.Millisecond }, "propagation delay"},
		{func(c *Config) { c.Strategy = "fastest" }, "strategy"},
		{func(c *Config) { c.Profile = nil }, "profile"},
		{func(c *Config) { c.Duration = 0 }, "duration"},
		{func(c *Config) { c.Room.NewUsersPerMinute = 0 }, "new_users_per_minute"},
		{func(c *Config) { c.Behaviour.LateShare = 0.99 }, "late and hammering"},
		{func(c *Config) { c.Start = c.Start.Add(time.Second) }, "minute boundary"},
	} {
		cfg := Config{Profile: SourceExperiment(1, time.Minute), Duration: time.Minute}.WithDefaults()
		c.mut(&cfg)
		_, err := Run(context.Background(), cfg)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("want an error about %q, got %v", c.want, err)
		}
	}
	if _, err := NewProfile("zigzag"); err == nil || !strings.Contains(err.Error(), "uniform") {
		t.Errorf("unknown profile: %v", err)
	}
}
