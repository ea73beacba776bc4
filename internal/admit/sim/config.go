// Package sim drives the waiting room's admission engine (internal/admit)
// through virtual traffic: data centers of gates deciding every request with
// admit.Decide on the snapshot they last received, counting their decisions
// in an admit.Tally and reporting them to an admit.Room, which rolls them up
// minute by minute exactly as the room workflow does. Nothing here decides
// who gets in: the simulator only plays visitors, gates, the network's
// delays and a virtual clock, and measures what the engine did against the
// room's limits, second by second.
//
// A run is deterministic for its Config (seed included): visitors, gates and
// events are kept in slices and a heap with a total order, random numbers
// come from one seeded source per run, and nothing that is measured or
// printed ranges over a map.
package sim

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/edgeflow/edgeflow/internal/admit"
)

// Strategy names, as the allocation table prints them.
const (
	StrategyEven      = "even"
	StrategyAdaptive1 = "adaptive-1"
	StrategyAdaptive2 = "adaptive-2"
	StrategyAdaptive3 = "adaptive-3"
	StrategyCounters  = "counters"
)

// Strategies lists the strategies the allocation table compares, in order.
var Strategies = []string{StrategyEven, StrategyAdaptive1, StrategyAdaptive2, StrategyAdaptive3, StrategyCounters}

// Config is one simulated run.
type Config struct {
	Seed uint64
	// Topology is the network; the zero Topology is DefaultTopology (any
	// other is taken as given, so a propagation delay of 0 can be asked for).
	Topology

	Room     admit.Settings // the room; its limits drive the profile's demand
	Strategy string         // one of Strategies
	// BorrowReserved enables the proposed fix to reserved data center
	// shares that their data centers leave unused (see BorrowingCounters).
	BorrowReserved bool
	// NoSessionLedger has the gates keep no sub-minute session ledger on
	// the shared counters (admit.SessionLedger), as gates did before: the
	// gate records every session in it (gate.Counters.Sessions), so that
	// sessions ending mid-minute free their places within the second, also
	// to gates still on the last minute's snapshot (admit.StaleFreedCap).
	NoSessionLedger bool

	Profile   Profile
	Behaviour Behaviour
	// Duration is how long arrivals are generated; the run then goes on
	// until every visitor has left or given up, or until Drain has passed.
	Duration time.Duration
	Drain    time.Duration

	// Start is the virtual time the room is created (a minute boundary).
	Start time.Time

	measureState bool // record the size of the room's state at each rollup
	// aggregate sends the room one report per data center and minute, the
	// sum of its gates' (admit.Aggregate), as gates sharing a data center's
	// Redis do, instead of every gate's own.
	aggregate bool
}

// Behaviour is how visitors behave: how long they browse once admitted,
// whether they give up waiting, and how they refresh the waiting room page.
type Behaviour struct {
	// Browsing: admitted visitors request a page every PageGapMin..Max and
	// leave after BrowseMin..Max.
	BrowseMin, BrowseMax   time.Duration
	PageGapMin, PageGapMax time.Duration
	// AbandonShare of visitors give up after an exponentially distributed
	// patience of mean PatienceMean; the others wait as long as it takes.
	AbandonShare float64
	PatienceMean time.Duration
	// Refresh behaviour while queued: on time (the moment the page says),
	// late (LateMin..Max after it: a background tab, a slow phone), or
	// hammering (every HammerGap, regardless of what the page says).
	LateShare, HammerShare float64
	LateMin, LateMax       time.Duration
	HammerGap              time.Duration
}

// DefaultBehaviour browses about a minute, lets 30% give up after about
// eight minutes, and has 15% of visitors refresh late and 5% hammer.
func DefaultBehaviour() Behaviour {
	return Behaviour{
		BrowseMin: 45 * time.Second, BrowseMax: 75 * time.Second,
		PageGapMin: 8 * time.Second, PageGapMax: 20 * time.Second,
		AbandonShare: 0.3, PatienceMean: 8 * time.Minute,
		LateShare: 0.15, HammerShare: 0.05,
		LateMin: 5 * time.Second, LateMax: 45 * time.Second,
		HammerGap: 2 * time.Second,
	}
}

// PatientBehaviour is the visitors of the experiment in Cloudflare's "Waiting
// Room: Random Queueing" post: about a minute of browsing, nobody gives up,
// everyone refreshes on time.
func PatientBehaviour() Behaviour {
	b := DefaultBehaviour()
	b.AbandonShare, b.LateShare, b.HammerShare = 0, 0, 0
	return b
}

// DefaultRoom is the room of the allocation table: 200 new users a minute,
// 2,000 active users at once, sessions of 5 minutes, FIFO. With about a
// minute of browsing a visitor counts as active for about six minutes, so
// at the per-minute limit some 1,200 to 1,300 are active: the per-minute
// limit is reached first, and the active-users limit matters after a spike.
func DefaultRoom() admit.Settings {
	return admit.Settings{Name: "sim", TotalActiveUsers: 1500, NewUsersPerMinute: 200, SessionDuration: 5,
		QueueingMethod: admit.FIFO}.WithDefaults()
}

// Topology is the simulated network: data centers × gates per data center,
// how long a published snapshot takes to reach the gates, and how often
// gates send their pending reports to the room.
type Topology struct {
	DataCenters        int
	GatesPerDataCenter int
	PropagationDelay   time.Duration
	ReportInterval     time.Duration
}

// DefaultTopology is 5 data centers × 4 gates, snapshots 5 s late, reports
// every 5 s.
func DefaultTopology() Topology {
	return Topology{DataCenters: 5, GatesPerDataCenter: 4, PropagationDelay: 5 * time.Second, ReportInterval: 5 * time.Second}
}

// WithDefaults fills unset fields.
func (c Config) WithDefaults() Config {
	if c.Topology == (Topology{}) {
		c.Topology = DefaultTopology()
	}
	if c.Room.Name == "" {
		c.Room = DefaultRoom()
	}
	c.Room = c.Room.WithDefaults()
	if c.Strategy == "" {
		c.Strategy = StrategyCounters
	}
	if c.Behaviour == (Behaviour{}) {
		c.Behaviour = DefaultBehaviour()
	}
	if c.Drain == 0 {
		c.Drain = 2 * time.Hour
	}
	if c.Start.IsZero() {
		c.Start = time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)
	}
	return c
}

// Validate says what is wrong with a config (after WithDefaults).
func (c Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if c.DataCenters < 1 || c.DataCenters > 500 {
		bad("data centers: must be 1-500, got %d", c.DataCenters)
	}
	if c.GatesPerDataCenter < 1 || c.GatesPerDataCenter > 500 {
		bad("gates per data center: must be 1-500, got %d", c.GatesPerDataCenter)
	}
	if c.PropagationDelay < 0 || c.PropagationDelay%time.Second != 0 {
		bad("propagation delay: must be whole seconds, at least 0, got %s", c.PropagationDelay)
	}
	if c.ReportInterval < time.Second || c.ReportInterval%time.Second != 0 || c.ReportInterval > 30*time.Second {
		bad("report interval: must be whole seconds, 1-30, got %s", c.ReportInterval)
	}
	if err := c.Room.Validate(); err != nil {
		bad("room: %w", err)
	}
	if !slices.Contains(Strategies, c.Strategy) {
		bad("strategy: must be one of %s, got %q", strings.Join(Strategies, ", "), c.Strategy)
	}
	if c.Profile == nil {
		bad("profile: none given")
	}
	if c.Duration <= 0 {
		bad("duration: must be positive, got %s", c.Duration)
	}
	if !admit.MinuteOf(c.Start, time.Minute).Equal(c.Start) {
		bad("start: must be a minute boundary, got %s", c.Start)
	}
	b := c.Behaviour
	switch {
	case b.BrowseMin <= 0 || b.BrowseMax < b.BrowseMin:
		bad("behaviour: browsing time must be a positive range, got %s..%s", b.BrowseMin, b.BrowseMax)
	case b.PageGapMin <= 0 || b.PageGapMax < b.PageGapMin:
		bad("behaviour: page gap must be a positive range, got %s..%s", b.PageGapMin, b.PageGapMax)
	case b.AbandonShare < 0 || b.AbandonShare > 1 || (b.AbandonShare > 0 && b.PatienceMean <= 0):
		bad("behaviour: abandon share must be 0-1 with a positive patience")
	case b.LateShare < 0 || b.HammerShare < 0 || b.LateShare+b.HammerShare > 1:
		bad("behaviour: late and hammering shares must be at least 0 and sum to at most 1")
	case b.LateShare > 0 && (b.LateMin < 0 || b.LateMax < b.LateMin):
		bad("behaviour: lateness must be a range, got %s..%s", b.LateMin, b.LateMax)
	case b.HammerShare > 0 && b.HammerGap <= 0:
		bad("behaviour: hammering needs a positive gap")
	}
	return errors.Join(errs...)
}

// dataCenterName and gateID name the topology's parts: dc1..dcN, dc1-g1...
func dataCenterName(i int) string { return fmt.Sprintf("dc%d", i+1) }
func gateID(dc, g int) string     { return fmt.Sprintf("dc%d-g%d", dc+1, g+1) }
