package admit

import (
	"context"
	"time"
)

// Sessions that end mid-minute. The room counts sessions by minute: a
// minute's slots are total_active_users minus the sessions alive when it
// began, so a session that ends during the minute would free its place only
// at the next one, and a room bound by total_active_users queued visitors
// with places free. The shared counters also keep a sub-minute ledger of
// the room's live sessions by expiry second (SessionLedger): an admission
// adds one at its expiry, a renewal moves it to the new expiry, a
// revocation takes it away. A gate holding the current minute's snapshot
// may then admit, beyond the minute's pools, as many visitors as sessions
// counted at the minute's start have ended since (TakeFreed), never more
// than new_users_per_minute in all.
//
// Why nothing overshoots: a session is counted until the end of the second
// holding its expiry (SessionExpirySecond rounds up), a renewal moves it
// before its old expiry comes, and only sessions whose expiry lies in the
// current minute are counted as freed: with a session of two minutes or
// more (FreedSessionsUsable) their last renewal was at least a minute
// before the snapshot's, so the room counted them among the minute's active
// users. Missing entries (an admission not yet recorded) only free less.

// SessionLedger is the room's count of live sessions by expiry second,
// shared by every gate of the room (the Anywhere store).
type SessionLedger interface {
	// MoveSession moves one session of room from the expiry from to the
	// expiry to: a zero from records an admission, a zero to a revocation.
	MoveSession(ctx context.Context, room string, from, to time.Time) error
	// SessionsEnded counts the sessions of room that ended in (from, to]:
	// those of the expiry seconds EndedSeconds lists.
	SessionsEnded(ctx context.Context, room string, from, to time.Time) (int64, error)
}

// endedSince reads how many of the sessions the snapshot counted ended
// since its minute began: never more than it counted (the ledger is plain
// counters in a shared store, which no one but the gates should write, but
// a count past the snapshot's active users is none the gates made).
func endedSince(ctx context.Context, ledger SessionLedger, snap *Snapshot, now time.Time) (int64, error) {
	ended, err := ledger.SessionsEnded(ctx, snap.Room, snap.Minute, now)
	return min(ended, int64(max(0, snap.ActiveUsers))), err
}

// SessionExpirySecond is the ledger's second of a session expiring at t:
// the end of the second holding it (Unix seconds), so that a session is
// never counted as ended before it has.
func SessionExpirySecond(t time.Time) int64 {
	s := t.Unix()
	if t.After(time.Unix(s, 0)) {
		s++
	}
	return s
}

// EndedSeconds is the range of expiry seconds [lo, hi] whose sessions all
// ended in (from, to]. A second holds the expiries of the second before it
// (SessionExpirySecond), so the one at from holds sessions that ended
// before from: at a minute's start, sessions the room did not count.
func EndedSeconds(from, to time.Time) (lo, hi int64) {
	return SessionExpirySecond(from) + 1, to.Unix()
}

// RecordSession applies a decision's move of a session expiry (Effect's
// SessionFrom, SessionTo) to a ledger; it does nothing when there is none.
func RecordSession(ctx context.Context, l SessionLedger, room string, eff Effect) error {
	if eff.SessionFrom.IsZero() && eff.SessionTo.IsZero() {
		return nil
	}
	if !eff.SessionFrom.IsZero() && !eff.SessionTo.IsZero() &&
		SessionExpirySecond(eff.SessionFrom) == SessionExpirySecond(eff.SessionTo) {
		return nil
	}
	return l.MoveSession(ctx, room, eff.SessionFrom, eff.SessionTo)
}

// sessionExpiry is when an admitted ticket's session stops counting.
func sessionExpiry(t *Ticket, s Settings, length time.Duration) time.Time {
	return t.SessionStart(s.DisableSessionRenewal).Add(time.Duration(s.SessionDuration) * length)
}

// FreedSessionsUsable reports whether sessions ending mid-minute may be
// admitted in their place on this snapshot at now: the current minute's
// snapshot (not a stale one, not an outage), sessions of two minutes or
// more (see above), and only while total_active_users binds first.
func FreedSessionsUsable(snap *Snapshot, now time.Time) bool {
	s := snap.Settings
	return MinuteOf(now, snap.MinuteLength()).Equal(snap.Minute) && !InOutage(snap, now) &&
		s.SessionDuration >= 2 && snap.SlotsAvailable < s.NewUsersPerMinute &&
		(s.QueueingMethod == FIFO || s.QueueingMethod == Random)
}

// FreedLimit is how many visitors the minute may admit in all once ended
// sessions count: min(new_users_per_minute, total_active_users - active
// users + ended), minus the minute's own slots (which its pools hold), and
// never more than ended (a snapshot whose slots are fewer than its limits
// allow, for whatever reason, gets no more from this).
func FreedLimit(snap *Snapshot, ended int64) int {
	s := snap.Settings
	all := min(int64(s.NewUsersPerMinute), int64(s.TotalActiveUsers)-int64(snap.ActiveUsers)+ended)
	return int(max(0, min(ended, all-int64(snap.SlotsAvailable))))
}

// FreedTaker is a strategy that may admit visitors in the place of
// sessions that ended since the minute began.
type FreedTaker interface {
	// TakeFreed takes one such place, counted on the new visitors' pool's
	// Anywhere counter beyond its limit; ok is false when there is none.
	TakeFreed(ctx context.Context, req SlotRequest) (scope string, ok bool, err error)
}

// freedPool is the pool a freed place is counted in: the new visitors'
// (empty when the minute left them no slots).
func freedPool(snap *Snapshot) *Pool {
	if p := snap.Pool(time.Time{}); p != nil {
		return p
	}
	return &Pool{}
}

// mayTakeFreed reports whether a visitor may take a freed place at now
// without overtaking anyone: in a FIFO room that queues, only a queued
// visitor of a bucket the minute reserves slots for. (Not the next
// bucket's: its visitors are the ones the reservations left unclaimed go
// to late in the minute, and those slots would go unused if freed places
// had taken them.) On a snapshot of the minute before, the buckets the new
// minute reserves for are every bucket up to the snapshot's minute: their
// visitors are next in line, and nobody new overtakes them.
func mayTakeFreed(snap *Snapshot, bucket time.Time, queued bool, now time.Time) bool {
	if snap.Settings.QueueingMethod != FIFO || (snap.CurrentlyWaiting == 0 && len(snap.Buckets) == 0) {
		return true
	}
	if staleFreedUsable(snap, now) {
		return queued && !bucket.After(snap.Minute)
	}
	return queued && !bucket.After(lastReserved(snap))
}

// TakeFreed implements FreedTaker.
func (s SharedCounters) TakeFreed(ctx context.Context, req SlotRequest) (string, bool, error) {
	return takeFreed(ctx, s.Store, req)
}

// TakeFreed implements FreedTaker.
func (s BorrowingCounters) TakeFreed(ctx context.Context, req SlotRequest) (string, bool, error) {
	return takeFreed(ctx, s.Store, req)
}

func takeFreed(ctx context.Context, store Counter, req SlotRequest) (string, bool, error) {
	ledger, ok := store.(SessionLedger)
	snap := req.Snapshot
	if ok && staleFreedUsable(snap, req.Now) {
		return takeStaleFreed(ctx, store, ledger, req)
	}
	if !ok || !FreedSessionsUsable(snap, req.Now) {
		return "", false, nil
	}
	ended, err := endedSince(ctx, ledger, snap, req.Now)
	if err != nil {
		return "", false, &TakeError{Minute: snap.Minute, Pool: PoolNew, Scope: Anywhere, Err: err}
	}
	extra := FreedLimit(snap, ended)
	if extra <= 0 {
		return "", false, nil
	}
	// When the room republished the minute, the pools hold floors for
	// what gates took already, freed places included: the pools beyond the
	// minute's slots are those, and are not given twice.
	allotted := 0
	for _, p := range snap.Pools {
		allotted += p.Slots
	}
	limit := req.Pool.Limit(Anywhere) + extra - max(0, allotted-snap.SlotsAvailable)
	expire := snap.Minute.Add(2*snap.MinuteLength() + snap.MaxAge())
	took, err := store.TakeBelow(ctx, CounterKey(snap.Room, snap.Minute, PoolNew, Anywhere), int64(limit), expire)
	if err != nil {
		return "", false, &TakeError{Minute: snap.Minute, Pool: PoolNew, Scope: Anywhere, Err: err}
	}
	if !took {
		return "", false, nil
	}
	return Anywhere, true, nil
}
