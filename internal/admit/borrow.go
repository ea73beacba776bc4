package admit

import (
	"context"
	"time"
)

// BorrowingCounters is SharedCounters with a fix for the one place where
// Cloudflare's counters queue early by construction: each data center's scope
// is its share of the previous minute's traffic, so when traffic moves
// (anycast shifts a region to another data center, a regional surge ends) the
// old data center's scope sits unused for up to a minute while the new one's
// visitors are queued with the room below its limits.
//
// When the visitor's own scope and Anywhere are spent, it borrows from the
// other data centers' scopes of the same pool, but only the part their own
// gates have left behind by now: a scope of limit L may be borrowed up to
// L × (time elapsed in the minute / minute), counted on the scope's own
// counter. The owner keeps what the rest of the minute would bring it at
// an even pace; slots it did not use are released as the minute runs out.
// Every slot is still taken below a scope's limit on that scope's counter,
// so the pools never admit more than the minute's slots: no overshoot. Only
// a gate holding the current minute's snapshot borrows (never a stale one).
//
// The price: a borrowed slot costs a call to another data center's
// counter, like an Anywhere slot, and a data center whose visitors all come
// at the end of the minute may find part of its scope taken.
type BorrowingCounters struct{ Store Counter }

// Name implements Strategy.
func (BorrowingCounters) Name() string { return "counters+borrow" }

// TakeSlot implements Strategy.
func (s BorrowingCounters) TakeSlot(ctx context.Context, req SlotRequest) (string, bool, error) {
	scope, ok, err := SharedCounters(s).TakeSlot(ctx, req)
	if err != nil || ok {
		return scope, ok, err
	}
	snap := req.Snapshot
	length := snap.MinuteLength()
	elapsed := req.Now.Sub(snap.Minute)
	return takeOtherScopes(ctx, s.Store, req, func(sc Scope) int { return BorrowableLimit(sc.Limit, elapsed, length) })
}

// BorrowableLimit is how far other data centers may fill a scope's counter
// after elapsed of the minute: the limit pro rata, rounded down.
func BorrowableLimit(limit int, elapsed, minute time.Duration) int {
	if limit <= 0 || elapsed <= 0 {
		return 0
	}
	return int(int64(limit) * int64(min(elapsed, minute)) / int64(minute))
}
