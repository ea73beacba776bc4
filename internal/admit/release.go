package admit

import (
	"context"
	"slices"
	"time"
)

// Unclaimed FIFO reservations. Each minute the room reserves a slot for
// every visitor it counted in a queued bucket; a visitor who gave up, or
// refreshes too late to come back within the minute, leaves that slot
// unused, and FIFO forbids the next bucket to take it — so the room queued
// people below its limits minute after minute. Late in the minute the slots
// a bucket has not claimed are released to the next bucket: the oldest one
// with visitors the reservations did not cover, or the one after it when
// its reservation covers part of it (releaseTaker; when every counted
// visitor is covered, whoever the room has not counted yet). A released
// slot is taken on the reserving bucket's own
// counter, below its limit, so the pools still never hand out more than the
// minute's slots. The price: a visitor who refreshes so late that it misses
// three quarters of the minute its bucket was reserved in loses the slot,
// as it loses its place already.

// ReleaseAfter is how far into its minute a snapshot's bucket reservations
// are released to the next bucket: the minute's last refresh interval (the
// longest a jittered one can be), so that every visitor of the next bucket
// who refreshes on time checks in once after the release, but never before
// half the minute, so that the reserved visitors have checked in since the
// snapshot reached their gate.
func ReleaseAfter(snap *Snapshot) time.Duration {
	length := snap.MinuteLength()
	base := RefreshBase(snap.Settings.RefreshIntervalSeconds, length)
	longest := time.Duration(base+base/5) * time.Second
	return max(length-longest, length/2)
}

// releasedPools lists the older buckets' pools a FIFO visitor of bucket may
// take unclaimed slots from at now ("" when none): only on the snapshot of
// the current minute, after ReleaseAfter, and only for the next bucket.
func releasedPools(snap *Snapshot, bucket, now time.Time) []*Pool {
	length := snap.MinuteLength()
	if !MinuteOf(now, length).Equal(snap.Minute) || now.Sub(snap.Minute) < ReleaseAfter(snap) {
		return nil
	}
	taker, partial, ok := releaseTaker(snap)
	if ok && bucket.After(taker) {
		return nil
	}
	if !partial.IsZero() && bucket.After(partial) {
		// Behind a partly covered bucket: only its Anywhere scope. Every
		// visitor of it who was refused a slot tried Anywhere, so a slot
		// left there means nobody was; a slot left in a data center's
		// scope, or in an older bucket's pool, may be what one of them was
		// refused, and goes to them.
		p := snap.Pool(partial)
		if p == nil {
			return nil
		}
		i := slices.IndexFunc(p.Scopes, func(sc Scope) bool { return sc.Name == Anywhere })
		if i < 0 {
			return nil
		}
		return []*Pool{{Bucket: p.Bucket, Slots: p.Slots, Scopes: p.Scopes[i : i+1]}}
	}
	var out []*Pool
	for i := range snap.Pools {
		if p := &snap.Pools[i]; !p.Bucket.IsZero() && p.Bucket.Before(bucket) {
			out = append(out, p)
		}
	}
	return out
}

// releaseTaker is the newest bucket whose visitors may take released slots
// (ok is false when every counted visitor is covered: then anyone may). It
// is the oldest bucket with visitors its reservation does not cover, or,
// when that bucket (partial) holds a reservation of its own, the bucket
// after it: by ReleaseAfter every visitor of partial who refreshes on time
// has checked in on this minute's snapshot, and a slot of its Anywhere
// scope left then means none of them was refused one (the counters only
// grow), so the bucket after it, taking only that, overtakes nobody. A later bucket could
// overtake visitors by a minute.
func releaseTaker(snap *Snapshot) (taker, partial time.Time, ok bool) {
	for i, b := range snap.Buckets {
		if b.Waiting <= b.ReservedSlots {
			continue
		}
		if b.ReservedSlots == 0 {
			return b.Key, time.Time{}, true
		}
		if i+1 < len(snap.Buckets) {
			return snap.Buckets[i+1].Key, b.Key, true
		}
		return time.Time{}, b.Key, false
	}
	return time.Time{}, time.Time{}, false
}

// Unused data center shares. A data center's scope is its share of the
// last minute's traffic, and only its own gates may spend it, as in
// Cloudflare's counters: that keeps the others from racing for its slots.
// When traffic moves (anycast shifts a region to another data center, a
// regional surge ends), the old data center's scope waits for visitors who
// now arrive elsewhere, and the new one queues them with the room below its
// limits. So from ReleaseAfter on, as FIFO reservations are, what a scope
// has not spent may be taken by any gate, on that scope's own counter,
// below its limit: the pools still never hand out more than the minute's
// slots. Only a gate on the current minute's snapshot takes a released
// share (a stale one never does), and only where every data center's
// counters are in one store (a gate whose data center counts on its own
// Redis cannot count on another's). Not in a random queue: there a slot
// goes to whoever checks in after its release moment, and handing the
// late moments of every scope to every data center's visitors made the
// arrival minute decide who goes first (the simulator's Kendall τ 0.11).

// takeReleasedShare takes a slot of another data center's scope of the
// pool, when the shares are released (see above).
func takeReleasedShare(ctx context.Context, store Counter, req SlotRequest) (string, bool, error) {
	snap := req.Snapshot
	if snap.PacedRelease || req.Now.Sub(snap.Minute) < ReleaseAfter(snap) || !countsEveryDataCenter(store) {
		return "", false, nil
	}
	return takeOtherScopes(ctx, store, req, func(sc Scope) int { return sc.Limit })
}

// takeOtherScopes takes a slot of the pool's other data centers' scopes,
// each on its own counter below limit(scope) (and below its paced limit in
// a random queue), on the current minute's snapshot only.
func takeOtherScopes(ctx context.Context, store Counter, req SlotRequest, limitOf func(Scope) int) (string, bool, error) {
	snap, pool := req.Snapshot, req.Pool
	length := snap.MinuteLength()
	if !MinuteOf(req.Now, length).Equal(snap.Minute) {
		return "", false, nil
	}
	elapsed := req.Now.Sub(snap.Minute)
	expire := snap.Minute.Add(2*length + snap.MaxAge())
	for _, sc := range pool.Scopes {
		if sc.Name == Anywhere || sc.Name == req.Gate.DataCenter {
			continue
		}
		limit := limitOf(sc)
		if snap.PacedRelease {
			limit = min(limit, PacedLimit(sc.Limit, elapsed, length, snap.ReleaseSeed(snap.Minute, pool.Key(), sc.Name)))
		}
		if limit <= 0 {
			continue
		}
		ok, err := store.TakeBelow(ctx, CounterKey(snap.Room, snap.Minute, pool.Key(), sc.Name), int64(limit), expire)
		if err != nil {
			return "", false, &TakeError{Minute: snap.Minute, Pool: pool.Key(), Scope: sc.Name, Err: err}
		}
		if ok {
			return sc.Name, true, nil
		}
	}
	return "", false, nil
}

// countsEveryDataCenter reports whether store counts every data center's
// scopes in one place: not so for ScopeStores whose data center store is
// not the Anywhere store (each data center's gates count on their own).
func countsEveryDataCenter(store Counter) bool {
	s, ok := store.(ScopeStores)
	return !ok || sameCounter(s.DataCenter, s.Anywhere)
}

// sameCounter compares two counters, false for kinds that cannot be
// compared (rather than a panic).
func sameCounter(a, b Counter) (same bool) {
	defer func() {
		if recover() != nil {
			same = false
		}
	}()
	return a == b
}
