package sim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"
)

// Profile names, as the issue and the report name them.
const (
	ProfileUniform         = "uniform"
	ProfileRegionalSkew    = "regional-skew"
	ProfileSpikeAfterQuiet = "spike-after-quiet"
	ProfileRegionalSpike   = "regional-spike"
	ProfileSourceFIFO      = "source-experiment"
	// ProfileRegionalShift is not in the table: it shows what a data
	// center's reserved share from the last minute costs when traffic
	// moves between data centers.
	ProfileRegionalShift = "regional-shift"
	// ShiftMinute is the minute regional-shift moves traffic in.
	ShiftMinute = 20
)

// Profiles lists the four arrival profiles of the allocation table, in order.
var Profiles = []string{ProfileUniform, ProfileRegionalSkew, ProfileSpikeAfterQuiet, ProfileRegionalSpike}

// Profile says when visitors arrive, where, and at which gates their
// requests land. Demand is in multiples of the room's new_users_per_minute,
// so one profile fits any room.
type Profile interface {
	Name() string
	// Describe says what the profile does, for the report.
	Describe() string
	// Length is how long the profile generates arrivals.
	Length() time.Duration
	// arrivals appends the arrivals of second sec (elapsed since the start)
	// to out, times as offsets from the start.
	arrivals(g *arrivalGen, sec int, out []arrival) []arrival
	// gateWeights is how a data center's requests spread over its gates.
	gateWeights(dc, gates int) []float64
	// route is the data center that serves, at t, the requests of a
	// visitor who arrived at dc (anycast may move them).
	route(t time.Duration, dc int) int
}

type arrival struct {
	at time.Duration // since the start
	dc int
}

// arrivalGen holds the state of the arrival processes of one run.
type arrivalGen struct {
	rng       *rand.Rand
	dcs       int
	perMinute float64
	// residual[dc] is what is left of the current Exp(1) draw of a data
	// center's time-rescaled Poisson process.
	residual []float64
	// fixed profiles draw all their arrival times at once.
	fixed []arrival
	next  int
}

func newArrivalGen(rng *rand.Rand, dcs int, perMinute int) *arrivalGen {
	g := &arrivalGen{rng: rng, dcs: dcs, perMinute: float64(perMinute), residual: make([]float64, dcs)}
	for i := range g.residual {
		g.residual[i] = rng.ExpFloat64()
	}
	return g
}

// poisson appends the arrivals of second sec at data center dc, whose rate
// over that second is perSecond: a non-homogeneous Poisson process with a
// rate constant within each second, by time rescaling.
func (g *arrivalGen) poisson(sec, dc int, perSecond float64, out []arrival) []arrival {
	if perSecond <= 0 {
		return out
	}
	used := 0.0 // of this second's integrated rate
	for g.residual[dc] <= perSecond-used {
		used += g.residual[dc]
		at := time.Duration(sec)*time.Second + time.Duration(used/perSecond*float64(time.Second))
		out = append(out, arrival{at: at, dc: dc})
		g.residual[dc] = g.rng.ExpFloat64()
	}
	g.residual[dc] -= perSecond - used
	return out
}

// rateProfile is a profile given by a demand function.
type rateProfile struct {
	name, description string
	length            time.Duration
	// demand is data center dc's arrival rate at elapsed t, in multiples
	// of the room's new_users_per_minute.
	demand func(t time.Duration, dc, dcs int) float64
	gates  func(dc, gates int) []float64
	moves  func(t time.Duration, dc int) int // nil: requests stay where the visitor arrived
}

func (p *rateProfile) Name() string          { return p.name }
func (p *rateProfile) Describe() string      { return p.description }
func (p *rateProfile) Length() time.Duration { return p.length }

func (p *rateProfile) gateWeights(dc, gates int) []float64 { return p.gates(dc, gates) }

func (p *rateProfile) route(t time.Duration, dc int) int {
	if p.moves == nil {
		return dc
	}
	return p.moves(t, dc)
}

func (p *rateProfile) arrivals(g *arrivalGen, sec int, out []arrival) []arrival {
	mid := time.Duration(sec)*time.Second + time.Second/2
	start := len(out)
	for dc := 0; dc < g.dcs; dc++ {
		out = g.poisson(sec, dc, p.demand(mid, dc, g.dcs)*g.perMinute/60, out)
	}
	sortArrivals(out[start:])
	return out
}

func sortArrivals(a []arrival) {
	slices.SortStableFunc(a, func(x, y arrival) int {
		if x.at != y.at {
			return int(x.at - y.at)
		}
		return x.dc - y.dc
	})
}

// fixedProfile is a fixed number of visitors arriving uniformly at random
// over a window, spread evenly over data centers and gates: the experiment of
// Cloudflare's "Waiting Room: Random Queueing" post (10,000 visitors over 30
// minutes).
type fixedProfile struct {
	visitors int
	window   time.Duration
}

// SourceExperiment is the experiment of Cloudflare's "Waiting Room: Random
// Queueing" post: n visitors arriving uniformly over window (10,000 over 30
// minutes there).
func SourceExperiment(n int, window time.Duration) Profile {
	return &fixedProfile{visitors: n, window: window}
}

func (p *fixedProfile) Name() string { return ProfileSourceFIFO }
func (p *fixedProfile) Describe() string {
	return fmt.Sprintf("%d visitors arriving uniformly at random over %s, evenly over data centers and gates", p.visitors, p.window)
}
func (p *fixedProfile) Length() time.Duration { return p.window }

func (p *fixedProfile) gateWeights(_, gates int) []float64 { return even(gates) }
func (p *fixedProfile) route(_ time.Duration, dc int) int  { return dc }

func (p *fixedProfile) arrivals(g *arrivalGen, sec int, out []arrival) []arrival {
	if g.fixed == nil {
		g.fixed = make([]arrival, p.visitors)
		for i := range g.fixed {
			g.fixed[i] = arrival{at: time.Duration(g.rng.Int64N(int64(p.window/time.Millisecond))) * time.Millisecond, dc: g.rng.IntN(g.dcs)}
		}
		sortArrivals(g.fixed)
	}
	end := time.Duration(sec+1) * time.Second
	for g.next < len(g.fixed) && g.fixed[g.next].at < end {
		out = append(out, g.fixed[g.next])
		g.next++
	}
	return out
}

// NewProfile returns a named profile of the allocation table.
func NewProfile(name string) (Profile, error) {
	const ramp = 60 * time.Minute
	const quiet = 30 * time.Minute
	switch name {
	case ProfileUniform:
		return &rateProfile{name: name, length: ramp,
			description: "demand ramps from 0 to twice the limits over 60 minutes, evenly over data centers and gates",
			demand: func(t time.Duration, dc, dcs int) float64 {
				return 2 * frac(t, ramp) / float64(dcs)
			},
			gates: func(_, n int) []float64 { return even(n) }}, nil
	case ProfileRegionalSkew:
		return &rateProfile{name: name, length: ramp,
			description: "the same ramp, split 60/20/10/5/5 over the data centers and 40/30/20/10 over the gates of each",
			demand: func(t time.Duration, dc, dcs int) float64 {
				return 2 * frac(t, ramp) * skew(dcs)[dc]
			},
			gates: func(_, n int) []float64 { return descending(n) }}, nil
	case ProfileSpikeAfterQuiet:
		return &rateProfile{name: name, length: quiet + 11*time.Minute,
			description: "30 minutes at 5% of the limits, then three times the limits within one minute (a linear rise over minute 30), held 10 minutes; evenly over data centers and gates",
			demand: func(t time.Duration, dc, dcs int) float64 {
				return (0.05 + (3-0.05)*frac(t-quiet, time.Minute)) / float64(dcs)
			},
			gates: func(_, n int) []float64 { return even(n) }}, nil
	case ProfileRegionalSpike:
		return &rateProfile{name: name, length: quiet + 11*time.Minute,
			description: "a steady 50% of the limits over all data centers for 30 minutes, then the last data center alone rises to twice the limits within one minute, held 10 minutes",
			demand: func(t time.Duration, dc, dcs int) float64 {
				base := 0.5 / float64(dcs)
				if dc == dcs-1 {
					return base + (2-base)*frac(t-quiet, time.Minute)
				}
				return base
			},
			gates: func(_, n int) []float64 { return even(n) }}, nil
	case ProfileRegionalShift:
		const at = ShiftMinute * time.Minute
		return &rateProfile{name: name, length: 30 * time.Minute,
			description: "a steady 90% of the limits split 60/20/10/5/5 over the data centers, until at minute 20 anycast moves all of the first data center's traffic (new visitors, queued and admitted ones) to the second",
			demand: func(t time.Duration, dc, dcs int) float64 {
				w := skew(dcs)
				switch {
				case t < at || dcs < 2:
					return 0.9 * w[dc]
				case dc == 0:
					return 0
				case dc == 1:
					return 0.9 * (w[0] + w[1])
				}
				return 0.9 * w[dc]
			},
			gates: func(_, n int) []float64 { return even(n) },
			moves: func(t time.Duration, dc int) int {
				if t >= at && dc == 0 {
					return 1
				}
				return dc
			}}, nil
	}
	return nil, fmt.Errorf("profile: must be one of %v or %s, got %q", Profiles, ProfileRegionalShift, name)
}

// frac is t/over clamped to [0, 1].
func frac(t, over time.Duration) float64 {
	return math.Min(1, math.Max(0, float64(t)/float64(over)))
}

func even(n int) []float64 {
	w := make([]float64, n)
	for i := range w {
		w[i] = 1 / float64(n)
	}
	return w
}

// descending weighs n parts n, n-1, …, 1 (4 gates: 40/30/20/10).
func descending(n int) []float64 {
	w := make([]float64, n)
	sum := float64(n * (n + 1) / 2)
	for i := range w {
		w[i] = float64(n-i) / sum
	}
	return w
}

// skew is the 60/20/10/5/5 split over five data centers; with more, the
// extra ones share equally with the last two, with fewer the first ones keep
// their weights, normalized.
func skew(n int) []float64 {
	base := []float64{60, 20, 10, 5, 5}
	w := make([]float64, n)
	sum := 0.0
	for i := range w {
		if i < len(base) {
			w[i] = base[i]
		} else {
			w[i] = 5
		}
		sum += w[i]
	}
	for i := range w {
		w[i] /= sum
	}
	return w
}
