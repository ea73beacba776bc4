package admit

import (
	"context"
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"time"
)

// Gate names the process deciding: its data center and its own id. A gate
// id must be unique to one process's lifetime (a restarted gate reports
// under a new id), since the room keeps the newest report per gate.
type Gate struct {
	DataCenter string `json:"dataCenter"`
	ID         string `json:"gate"`
}

// SlotRequest asks a strategy for one slot of a pool.
type SlotRequest struct {
	Snapshot *Snapshot
	Now      time.Time
	Gate     Gate
	Pool     *Pool
}

// Strategy decides whether a gate may hand out one more slot of a pool. The
// three strategies "How Waiting Room makes queueing decisions" describes
// share this interface, so the gate can fall back from one to another and the
// simulator can compare them on the same traffic:
//
//   - SharedCounters (the design Cloudflare uses now): one counter per data
//     center scope, shared by the data center's gates, and one Anywhere
//     counter shared by all. Never queues early because of uneven arrivals
//     across a data center's gates, never overshoots.
//   - EvenSplit: each gate gets its data center's share divided by the data
//     center's gates, plus Anywhere divided by all gates. Never overshoots;
//     queues early when arrivals are uneven. The gate's fallback while its
//     counter store is unreachable.
//   - Adaptive: like EvenSplit, but divides by gates × utilization^curveFactor
//     (never less than one gate), so each gate gets more while the room is far
//     from its limits — and a spike after a quiet spell overshoots.
//   - BorrowingCounters: SharedCounters that also lend a data center's
//     unused share to the others as the minute runs out (borrow.go).
//
// A strategy looks in the visitor's data center scope first, then Anywhere,
// and says which scope the slot came from.
type Strategy interface {
	Name() string
	TakeSlot(ctx context.Context, req SlotRequest) (scope string, ok bool, err error)
}

// SharedCounters is the strategy of Cloudflare's data center counters.
type SharedCounters struct{ Store Counter }

// EvenSplit divides each scope evenly between gates, on counters that are
// each gate's own. With DataCenterOnly it takes nothing from Anywhere: for a
// gate that lost its data center's Redis while the other data centers'
// gates still count Anywhere on a Redis of its own, whose counter would not
// see this gate's part of it.
type EvenSplit struct {
	Store          Counter
	DataCenterOnly bool
}

// Adaptive divides each scope between gates scaled by
// utilization^CurveFactor, on counters that are each gate's own.
type Adaptive struct {
	Store       Counter
	CurveFactor float64
}

// Name implements Strategy.
func (SharedCounters) Name() string { return "counters" }

// Name implements Strategy.
func (EvenSplit) Name() string { return "even" }

// Name implements Strategy.
func (a Adaptive) Name() string { return "adaptive-" + strconv.FormatFloat(a.CurveFactor, 'g', -1, 64) }

// TakeSlot implements Strategy.
func (s SharedCounters) TakeSlot(ctx context.Context, req SlotRequest) (string, bool, error) {
	if InOutage(req.Snapshot, req.Now) {
		return takeOutageSlot(ctx, s.Store, req)
	}
	scope, ok, err := takeSlot(ctx, s.Store, req, func(sc Scope) (string, int) { return "", sc.Limit })
	if err != nil || ok {
		return scope, ok, err
	}
	// Late in the minute, other data centers' unspent shares (release.go).
	return takeReleasedShare(ctx, s.Store, req)
}

// TakeSlot implements Strategy.
func (s EvenSplit) TakeSlot(ctx context.Context, req SlotRequest) (string, bool, error) {
	if InOutage(req.Snapshot, req.Now) {
		return takeEvenOutageSlot(ctx, s.Store, req, s.DataCenterOnly)
	}
	inDC, global := req.Snapshot.Gates(req.Gate)
	return takeSlot(ctx, s.Store, req, func(sc Scope) (string, int) {
		if s.DataCenterOnly && sc.Name == Anywhere {
			return "", 0
		}
		return "/gate=" + req.Gate.ID, PerGateLimit(sc, inDC, global, 1)
	})
}

// TakeSlot implements Strategy.
func (a Adaptive) TakeSlot(ctx context.Context, req SlotRequest) (string, bool, error) {
	inDC, global := req.Snapshot.Gates(req.Gate)
	m := WorkerMultiplier(req.Snapshot.Utilization, a.CurveFactor)
	return takeSlot(ctx, a.Store, req, func(sc Scope) (string, int) {
		return "/gate=" + req.Gate.ID, PerGateLimit(sc, inDC, global, m)
	})
}

// WorkerMultiplier is the adaptive strategy's utilization^curveFactor ("How
// Waiting Room makes queueing decisions"), utilization clamped to [0, 1].
func WorkerMultiplier(utilization, curveFactor float64) float64 {
	return math.Pow(min(max(utilization, 0), 1), curveFactor)
}

// PerGateLimit is one gate's part of a scope when the scope is divided
// between gates: a data center scope by the data center's gates, Anywhere by
// all gates, each count scaled by multiplier (1 for the even split) but never
// below one gate, rounded down.
func PerGateLimit(sc Scope, gatesInDataCenter, gatesGlobal int, multiplier float64) int {
	gates := gatesInDataCenter
	if sc.Name == Anywhere {
		gates = gatesGlobal
	}
	adapted := max(float64(gates)*multiplier, 1)
	return int(math.Floor(float64(sc.Limit)/adapted + 1e-9))
}

// Fallback uses Primary, and Secondary for any request Primary fails with an
// error (the gate: shared counters, falling back to the even split while the
// counter store is unreachable). OnError, if set, hears each such error.
type Fallback struct {
	Primary, Secondary Strategy
	OnError            func(error)
}

// Name implements Strategy.
func (f Fallback) Name() string { return f.Primary.Name() + "|" + f.Secondary.Name() }

// TakeSlot implements Strategy.
func (f Fallback) TakeSlot(ctx context.Context, req SlotRequest) (string, bool, error) {
	scope, ok, err := f.Primary.TakeSlot(ctx, req)
	if err == nil {
		return scope, ok, nil
	}
	if f.OnError != nil {
		f.OnError(err)
	}
	return f.Secondary.TakeSlot(ctx, req)
}

// TakeError is a take whose answer the gate did not get (a timeout, a
// dropped connection): the store may or may not have handed the slot out.
// The gate reports it (Report.Unsure), so that the room does not count a
// slot the store counted and nobody was admitted to as an admission no gate
// reported.
type TakeError struct {
	Minute      time.Time
	Pool, Scope string
	Err         error
}

func (e *TakeError) Error() string { return "counter: " + e.Err.Error() }
func (e *TakeError) Unwrap() error { return e.Err }

// CounterKey names the counter of a pool's scope in a minute; strategies
// whose counters belong to one gate append the gate.
func CounterKey(room string, minute time.Time, pool, scope string) string {
	return "admit/" + room + "/" + strconv.FormatInt(minute.UnixMilli(), 10) + "/" + pool + "/" + scope
}

// takeSlot is what the strategies share: scopes in order (the gate's data
// center, then Anywhere), each with the strategy's limit for its counter.
//
// A gate whose snapshot is of the minute before (the new one has not reached
// it yet, or the room is unreachable) spends only StaleShare of each scope
// of the new visitors' pool (StaleSpendable), and only what the counters of
// the snapshot's minute left of it. The room allots the new minute at least
// that much in the same scopes, so nothing overshoots while snapshots
// propagate. A snapshot two or more minutes old spends nothing here (the
// shared counters hand out an outage's slots instead, see InOutage): the room
// allots floors only for its last snapshot of the minute before, so a
// gate still on an older one would take slots beyond the minute's limit
// (seen under load with short minutes, where one slow read can hold a
// snapshot past the next minute's start).
func takeSlot(ctx context.Context, store Counter, req SlotRequest, split func(Scope) (suffix string, limit int)) (string, bool, error) {
	snap, pool := req.Snapshot, req.Pool
	length := snap.MinuteLength()
	current := MinuteOf(req.Now, length)
	if current.Before(snap.Minute) {
		current = snap.Minute
	}
	if current.After(snap.Minute) && (!StaleSpendable(*pool) || current.After(snap.Minute.Add(length))) {
		// Stale: only the new visitors' pool, and only in the minute after
		// the snapshot's (see above).
		return "", false, nil
	}
	expire := current.Add(2*length + snap.MaxAge())
	for _, sc := range scopeOrder(pool, req.Gate.DataCenter) {
		suffix, limit := split(sc)
		paced := limit
		if snap.PacedRelease {
			// A random queue's slots come at the minute's release moments,
			// also those spent on the last minute's snapshot: unpaced, they
			// went to whoever checked in first in the minute, before its
			// snapshot reached the gates.
			paced = PacedLimit(limit, req.Now.Sub(current), length, snap.ReleaseSeed(current, pool.Key(), sc.Name))
		}
		if current.After(snap.Minute) {
			used := 0
			for m := snap.Minute; m.Before(current); m = m.Add(length) {
				n, err := store.Load(ctx, CounterKey(snap.Room, m, pool.Key(), sc.Name)+suffix)
				if err != nil {
					return "", false, fmt.Errorf("counter: %w", err)
				}
				used += int(n)
			}
			_, share := split(Scope{Name: sc.Name, Limit: StaleShare(sc.Limit - sc.Carried)})
			_, headroom := split(Scope{Name: sc.Name, Limit: sc.Headroom})
			limit = min(share, limit-used+headroom)
		}
		limit = min(limit, paced)
		if limit <= 0 {
			continue
		}
		ok, err := store.TakeBelow(ctx, CounterKey(snap.Room, current, pool.Key(), sc.Name)+suffix, int64(limit), expire)
		if err != nil {
			return "", false, &TakeError{Minute: current, Pool: pool.Key(), Scope: sc.Name, Err: err}
		}
		if ok {
			return sc.Name, true, nil
		}
	}
	return "", false, nil
}

// CountTake adds a slot taken on other counters (a gate's even split while
// the shared store answers again) to the shared counter takeSlot would
// have taken it from, whatever its count: gates deciding on the shared
// counters then see it, within the minute and in its stale remainder.
func CountTake(ctx context.Context, store Counter, req SlotRequest, scope string) error {
	snap := req.Snapshot
	length := snap.MinuteLength()
	current := MinuteOf(req.Now, length)
	if current.Before(snap.Minute) {
		current = snap.Minute
	}
	_, err := store.TakeBelow(ctx, CounterKey(snap.Room, current, req.Pool.Key(), scope), 1<<40, current.Add(2*length+snap.MaxAge()))
	return err
}

// StaleShare is how much of a scope's limit gates may spend in the minute
// after the snapshot's own, before a newer snapshot reaches them: a quarter,
// rounded up. The room gives each scope of the next minute at least what
// they may spend (Allocate's Carry), so a quarter keeps the next minute's
// allocation close to its ideal split.
func StaleShare(limit int) int { return (limit + 3) / 4 }

// StaleSpendable reports whether gates deciding on a snapshot after its
// minute may spend from the pool: only the new visitors' pool. A bucket's
// reservation is for one minute; its visitors are queued already and wait
// the few seconds until the next snapshot reaches their gate. (Were bucket
// pools spendable, the room would have to keep slots for them in the next
// minute, under their bucket's key, where nobody else may use them: a
// quarter of every served bucket's slots lost each minute.)
func StaleSpendable(p Pool) bool { return p.Bucket.IsZero() }

// StaleRemainder is what gates deciding on a stale snapshot may spend from
// a scope in a minute after the snapshot's, when the minutes since took used
// from it: StaleShare of the scope's own limit (its Carried floor excluded),
// but no more than what is left of the limit plus the scope's headroom. Summed over scopes that stays within
// total_active_users - activeUsers - (admitted since), so even if every
// stale slot is taken before the room counts them, no limit is overshot:
// the new-users limit because a quarter of this minute's slots is less than
// a minute's, the active-users limit by the headroom.
func StaleRemainder(sc Scope, used int) int {
	return max(0, min(StaleShare(sc.Limit-sc.Carried), sc.Limit-used+sc.Headroom))
}

// scopeOrder lists the scopes a visitor at dataCenter may take from: its
// own data center's, then Anywhere.
func scopeOrder(p *Pool, dataCenter string) []Scope {
	out := make([]Scope, 0, 2)
	for _, s := range p.Scopes {
		if s.Name == dataCenter && s.Name != Anywhere {
			out = append(out, s)
		}
	}
	for _, s := range p.Scopes {
		if s.Name == Anywhere {
			out = append(out, s)
		}
	}
	return out
}

// PacedLimit is how much of a minute's limit is released after elapsed in
// a random queue (Cloudflare's "Waiting Room: Random Queueing" post: every
// waiting visitor who checks in has the same chance). Slot k of limit is
// released at a random moment within the k-th limit-th of the minute, drawn
// from seed: the releases are spread over the whole minute, so a slot goes
// to whoever checks in next after a moment nobody can time a check-in to,
// not to whoever checks in first after the minute starts (were every slot
// free then) or at the same offsets every minute (were they paced evenly).
// One slot per stripe keeps the release rate steady: a chance run of early
// moments would leave the end of the minute without slots. Every gate
// computes the same schedule from the snapshot (Snapshot.ReleaseSeed).
func PacedLimit(limit int, elapsed, minute time.Duration, seed uint64) int {
	switch {
	case limit <= 0 || elapsed < 0:
		return 0
	case elapsed >= minute:
		return limit
	}
	// Exact integers: stripe k of the minute, and how far into it elapsed is.
	hi, lo := bits.Mul64(uint64(elapsed), uint64(limit))
	k, into := bits.Div64(hi, lo, uint64(minute)) // hi < minute, since elapsed < minute
	released := int(k)
	if into >= releaseOffset(seed, k, uint64(minute)) {
		released++
	}
	return min(released, limit)
}

// releaseOffset is where in stripe k its slot is released, in [0, minute)
// units of minute/limit.
func releaseOffset(seed, k, minute uint64) uint64 {
	hi, _ := bits.Mul64(splitMix64(seed+k*0x9e3779b97f4a7c15), minute)
	return hi
}

// splitMix64 is SplitMix64's output function: a well-mixed 64-bit value of x.
func splitMix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}
