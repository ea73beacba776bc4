package gate

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/edgeflow/edgeflow/internal/admit"
)

// Counters is how a gate counts: the strategy handing out slots, and the
// store of per-visitor marks (tries at a slot, revoked sessions).
type Counters struct {
	Strategy admit.Strategy
	Marks    *Marks
	// Revocations are the sessions the origin revoked, checked in memory
	// (nil: the gate keeps its own, unshared).
	Revocations *Revocations
	// Failover is set when the counters are on Redis: its Run probes a
	// failed store until it answers again.
	Failover *Failover
	// Shared is where the shared counters are (the Redis stores by scope),
	// nil when the gate counts only in its own memory. The reporter reads
	// it (Reporter.Store).
	Shared admit.Counter
	// Visits is where the room's gates settle which of them counts a
	// visitor's session in a minute (the Anywhere Redis), nil when the
	// gate counts only in its own memory (Reporter.Visits).
	Visits VisitStore
	// Sessions records the gate's sessions in the room's sub-minute
	// ledger (the Anywhere Redis, which every gate of the room shares), nil
	// without one: then no ended session frees a place before the minute
	// ends (admit.SessionLedger reads nothing from this gate's memory).
	Sessions *SessionRecorder
	// DataCenterRedis is the data center's Redis, shared by its gates (nil
	// without one): their reports go through it (Aggregator).
	DataCenterRedis redis.UniversalClient
	// AnywhereRedis is the Redis every gate of the room reaches (nil
	// without one): the data centers' live counts go there (Aggregator.Live).
	AnywhereRedis redis.UniversalClient
	// Drops counts the values read from Redis and dropped as no gate's
	// (edgeflow_gate_redis_dropped_total); the aggregator and the
	// revocations count into it.
	Drops *RedisDrops
}

// VisitStore settles, for sightings of visitors (admit.Sighting), which
// ones this gate is the first of the room to count in their minute: first,
// each moved from the latest minute any gate counted the visitor in. On an
// error, unsettled are the sightings it could not settle (the gate counts
// them alone). keep is how long the store remembers a visitor.
type VisitStore interface {
	FirstVisits(ctx context.Context, room string, seen []admit.Sighting, keep time.Duration) (first, unsettled []admit.Sighting, err error)
}

// MemoryCounters counts in this process, for one gate per data center: the
// engine's even split on in-process counters. With one gate in its data
// center, the data center's whole share is this gate's; the Anywhere pool
// is divided by every gate the room has, so gates in several data centers
// without a shared Anywhere store never overshoot (they may queue a little
// early; give them a Redis for Anywhere to stop that).
func MemoryCounters() Counters {
	mem := admit.NewMemoryCounter(nil)
	return Counters{Strategy: admit.EvenSplit{Store: mem}, Marks: &Marks{Store: mem, Local: mem}, Revocations: &Revocations{}}
}

// The strategies a gate with shared counters hands out slots with
// (--strategy, GATE_STRATEGY); the names are the engine's and the
// simulator's.
const (
	// StrategyCounters is admit.SharedCounters, Cloudflare's design: a
	// data center's visitors take its own scope, then Anywhere.
	StrategyCounters = "counters"
	// StrategyBorrow is admit.BorrowingCounters: SharedCounters that also
	// take other data centers' unused slots at the pace of the minute.
	// It counts on the other data centers' scope counters, so every gate of
	// the room must count every data center on one Redis.
	StrategyBorrow = "counters+borrow"
)

// Strategies lists the shared-counter strategies by name.
var Strategies = []string{StrategyCounters, StrategyBorrow}

// NewCounters counts on Redis where one is given and in this process
// otherwise: the data center's Redis for its scopes (shared by the data
// center's gates; nil: this gate is its data center's only one), the
// Anywhere Redis for the Anywhere pool and the visitors' marks (shared by
// every gate of the room). With neither it is MemoryCounters. strategy is
// one of Strategies ("" is StrategyCounters). While a Redis fails, the gate
// falls back to the even split on in-process counters (see Failover).
func NewCounters(dataCenter, anywhere *RedisCounter, strategy string, logger *slog.Logger) (Counters, error) {
	switch strategy {
	case "", StrategyCounters:
	case StrategyBorrow:
		// Borrowing counts on other data centers' scope counters: they
		// must be where this gate counts its own, on the Redis every gate
		// reaches.
		if dataCenter == nil || dataCenter != anywhere {
			return Counters{}, fmt.Errorf("strategy %s counts on every data center's counters, so it needs one Redis that all gates of every data center share: give --redis-url and no other --anywhere-redis-url", StrategyBorrow)
		}
	default:
		return Counters{}, fmt.Errorf("strategy %q: must be one of %s", strategy, strings.Join(Strategies, ", "))
	}
	if dataCenter == nil && anywhere == nil {
		return MemoryCounters(), nil
	}
	mem := admit.NewMemoryCounter(nil)
	var dcStore, anyStore admit.Counter = mem, mem
	var pings []func(context.Context) error
	if dataCenter != nil {
		dcStore = *dataCenter
		pings = append(pings, dataCenter.Ping)
	}
	if anywhere != nil {
		anyStore = *anywhere
		pings = append(pings, anywhere.Ping)
	}
	stores := admit.ScopeStores{DataCenter: dcStore, Anywhere: anyStore}
	var shared admit.Strategy = admit.SharedCounters{Store: stores}
	if strategy == StrategyBorrow {
		shared = admit.BorrowingCounters{Store: stores}
	}
	f := &Failover{
		Shared: shared,
		// With Anywhere on a Redis other than the data center's, the other
		// data centers' gates keep spending the whole Anywhere pool on it
		// while this gate's falls back: its even part of Anywhere would be
		// spent twice (seen in make cluster-test: 9 admitted in a minute of
		// 8 while dc1's Redis was down). It falls back on its data center's
		// share alone; if it is the Anywhere Redis that failed, every gate
		// loses it and the pool waits for it, queueing early, never over.
		Even: admit.EvenSplit{Store: mem, DataCenterOnly: dataCenter != nil && anywhere != nil && dataCenter != anywhere},
		Probe: func(ctx context.Context) error {
			var errs []error
			for _, p := range pings {
				errs = append(errs, p(ctx))
			}
			return errors.Join(errs...)
		},
		Mirror: stores,
		Logger: logger,
	}
	drops := &RedisDrops{}
	revs := &Revocations{Logger: logger, Drops: drops}
	if anywhere != nil {
		revs.Client = anywhere.Client
	}
	c := Counters{Strategy: f, Marks: &Marks{Store: anyStore, Local: mem, Logger: logger, Failover: f},
		Revocations: revs, Failover: f, Shared: stores, Drops: drops}
	if anywhere != nil {
		c.Visits = *anywhere // every gate of the room reaches it
		c.Sessions = &SessionRecorder{Ledger: *anywhere, Logger: logger}
		c.AnywhereRedis = anywhere.Client
	}
	if dataCenter != nil {
		c.DataCenterRedis = dataCenter.Client
	}
	return c, nil
}

// Marks keeps queued visitors' tries on the store every gate of the room
// shares (the Anywhere store) while the failover counts on it, and in this
// gate's memory otherwise: a try is counted where the slot it tries for is
// taken. A try is allowed only to a cookie recording every earlier try, so
// a visitor replaying an older cookie (or several copies of one) tries no
// more often than one who keeps the newest. (Revoked sessions are kept
// apart, in Revocations.)
type Marks struct {
	Store  admit.Counter
	Local  *admit.MemoryCounter
	Logger *slog.Logger
	// Failover says whether the shared store is in use (nil: always).
	Failover *Failover
}

func triesKey(room, visitor string) string { return "admit/" + room + "/visitor/" + visitor + "/tries" }

// claimTimeout bounds a try's claim on the shared store (its two calls
// together, a wait for a pooled connection included): a store too slow for
// it falls back to this gate's memory for the try.
const claimTimeout = redisIOTimeout

// claimTry records a try by a cookie that recorded n tries, for a slot of
// the minute of req. It is allowed if no other try was made since (the
// store holds at most n); count is the number of tries recorded now, which
// the visitor's next cookie records. While the failover does not count on
// the shared store (down, or recovering), the try is claimed in this
// gate's memory without a call to it, as new visitors take the even split's
// slots there.
func (m *Marks) claimTry(ctx context.Context, req admit.SlotRequest, room, visitor string, n int64, expire time.Time) (allowed bool, count int64) {
	key := triesKey(room, visitor)
	if m.Store == admit.Counter(m.Local) || (m.Failover != nil && !m.Failover.CountsOnShared(req.Now, req.Snapshot.MinuteLength())) {
		return m.claimLocal(ctx, key, n, expire)
	}
	ctx, cancel := context.WithTimeout(ctx, claimTimeout)
	defer cancel()
	ok, err := m.Store.TakeBelow(ctx, key, n+1, expire)
	if err != nil {
		m.warn(err)
		return m.claimLocal(ctx, key, n, expire)
	}
	if ok {
		return true, n + 1
	}
	c, err := m.Store.Load(ctx, key)
	if err != nil {
		m.warn(err)
	}
	return false, max(c, n)
}

func (m *Marks) claimLocal(ctx context.Context, key string, n int64, expire time.Time) (allowed bool, count int64) {
	if ok, _ := m.Local.TakeBelow(ctx, key, n+1, expire); ok {
		return true, n + 1
	}
	c, _ := m.Local.Load(ctx, key)
	return false, max(c, n)
}

func (m *Marks) warn(err error) {
	if m.Logger != nil {
		m.Logger.Debug("visitor marks: shared store failed, using this gate's memory", "err", err)
	}
}

// attemptGuard wraps the strategy for one queued visitor's request: its
// first call for a slot claims the visitor's try (Marks.claimTry); a cookie
// that is not the newest gets no slot.
type attemptGuard struct {
	admit.Strategy
	marks         *Marks
	room, visitor string
	tries         int64
	expire        time.Time

	claimed, allowed bool
	count            int64
}

func (g *attemptGuard) TakeSlot(ctx context.Context, req admit.SlotRequest) (string, bool, error) {
	if !g.claimed {
		g.claimed = true
		g.allowed, g.count = g.marks.claimTry(ctx, req, g.room, g.visitor, g.tries, g.expire)
	}
	if !g.allowed {
		return "", false, nil
	}
	return g.Strategy.TakeSlot(ctx, req)
}

// TakeFreed implements admit.FreedTaker, for the visitor's claimed try as
// TakeSlot.
func (g *attemptGuard) TakeFreed(ctx context.Context, req admit.SlotRequest) (string, bool, error) {
	ft, ok := g.Strategy.(admit.FreedTaker)
	if !ok {
		return "", false, nil
	}
	if !g.claimed {
		g.claimed = true
		g.allowed, g.count = g.marks.claimTry(ctx, req, g.room, g.visitor, g.tries, g.expire)
	}
	if !g.allowed {
		return "", false, nil
	}
	return ft.TakeFreed(ctx, req)
}
