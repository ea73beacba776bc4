package admit

import (
	"context"
	"time"
)

// Freed places on a stale snapshot. For the first seconds of a minute (the
// room's grace plus propagation) gates still decide on the snapshot of the
// minute before. When total_active_users binds, that minute spent its slots
// (total_active_users minus the sessions alive at its start), so the stale
// share of its pools (StaleRemainder) is nothing, and those gates queued
// visitors while the sessions counted at its start that ended since had left
// their places free: queueing at 87% of the limit.
//
// So a snapshot whose minute is bound by total_active_users says how many
// visitors gates may admit on it in the next minute in the place of such
// sessions (Snapshot.StaleFreed, StaleShare of new_users_per_minute), and
// the room holds as many of the next minute's slots (never more than it
// has) as a floor of the new visitors' pool, Anywhere (HoldStaleFreed). A
// stale gate counts those places on that scope's counter of the new minute,
// which the new snapshot's gates count on too.
//
// Why nothing overshoots. Let s be the next minute's slots, A its new
// visitors' Anywhere limit (at least F = min(StaleFreed, s) plus the stale
// share r), O its other scopes (A + O <= s when F <= s). A stale gate's
// limit on that counter is r + min(StaleFreed, ended - spent), where ended
// counts the sessions of the ledger that ended since the snapshot's minute
// began, and spent what that minute handed out beyond its slots (freed
// places, floors past its slots). The minute before admitted at most its
// slots plus spent, so when the new minute begins at least ended-so-far
// minus spent places are truly free; as the new minute's sessions end,
// every one that ends frees one more. Everything on the counter stays
// within max(A + ended in the new minute, r + min(StaleFreed, ...)), and
// with O that is within s plus the sessions ended in it, and within
// new_users_per_minute.

// StaleFreedCap is Snapshot.StaleFreed for a minute of settings eff with
// active users (expiring of them counted for the last minute they may be,
// so they end during it unless renewed) and slots, allotted by method:
// while total_active_users binds, or may bind in the next minute (its
// headroom beyond the slots, which stale gates spend otherwise, is less
// than the cap), the sessions expiring, at most half of
// new_users_per_minute; for a FIFO or unpaced random queue of sessions of
// two minutes or more (see FreedSessionsUsable); otherwise 0. Half: the
// seconds before the next snapshot reaches the gates may bring a third of
// a queue's check-ins (a refresh interval of 20 s), and what is held is
// taken from the next minute's other scopes and newest reservations.
func StaleFreedCap(eff Settings, method QueueingMethod, active, expiring, slots int, paced bool) int {
	limit := (eff.NewUsersPerMinute + 1) / 2
	if (method != FIFO && method != Random) || paced || eff.SessionDuration < 2 || eff.TotalActiveUsers-active-slots >= limit {
		return 0
	}
	return max(0, min(limit, expiring))
}

// HoldStaleFreed adds held slots to the floor of the new visitors' pool,
// Anywhere, among the stale remainders of the minute before: the stale
// gates' share of that scope and the freed places they may take are spent
// on one counter, so the floor is their sum.
func HoldStaleFreed(stale []Remainder, held int) []Remainder {
	if held <= 0 {
		return stale
	}
	for i, r := range stale {
		if r.Bucket.IsZero() && r.Scope == Anywhere {
			stale[i].Slots += held
			return stale
		}
	}
	return append(stale, Remainder{Scope: Anywhere, Slots: held})
}

// staleFreedUsable reports whether a gate deciding on snap at now is in
// the minute after the snapshot's, where StaleFreed applies.
func staleFreedUsable(snap *Snapshot, now time.Time) bool {
	length := snap.MinuteLength()
	return snap.StaleFreed > 0 && MinuteOf(now, length).Equal(snap.Minute.Add(length)) && !InOutage(snap, now)
}

// takeStaleFreed takes one freed place on a stale snapshot (see above).
func takeStaleFreed(ctx context.Context, store Counter, ledger SessionLedger, req SlotRequest) (string, bool, error) {
	snap := req.Snapshot
	current := snap.Minute.Add(snap.MinuteLength())
	fail := func(err error) (string, bool, error) {
		return "", false, &TakeError{Minute: current, Pool: PoolNew, Scope: Anywhere, Err: err}
	}
	ended, err := endedSince(ctx, ledger, snap, req.Now)
	if err != nil {
		return fail(err)
	}
	var sc Scope // the new visitors' Anywhere scope of the snapshot, if any
	allotted := 0
	for _, p := range snap.Pools {
		allotted += p.Slots
		if p.Bucket.IsZero() {
			for _, s := range p.Scopes {
				if s.Name == Anywhere {
					sc = s
				}
			}
		}
	}
	// Read even when the snapshot has no such scope: freed places of its
	// minute are counted there beyond its limit (takeFreed).
	used, err := store.Load(ctx, CounterKey(snap.Room, snap.Minute, PoolNew, Anywhere))
	if err != nil {
		return fail(err)
	}
	spent := max(0, int(used)-sc.Limit) + max(0, allotted-snap.SlotsAvailable)
	freed := min(int64(snap.StaleFreed), ended-int64(spent))
	if freed <= 0 {
		return "", false, nil
	}
	limit := int64(StaleRemainder(sc, int(used))) + freed
	expire := current.Add(2*snap.MinuteLength() + snap.MaxAge())
	took, err := store.TakeBelow(ctx, CounterKey(snap.Room, current, PoolNew, Anywhere), limit, expire)
	if err != nil {
		return fail(err)
	}
	if !took {
		return "", false, nil
	}
	return Anywhere, true, nil
}
