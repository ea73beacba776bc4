package admit

import (
	"cmp"
	"context"
	"time"
)

// Outcome is what the gate does with a request.
type Outcome string

// The outcomes.
const (
	Pass     Outcome = "pass"     // an admitted session still runs: to the origin, no counter touched
	Admit    Outcome = "admit"    // a slot was taken: to the origin, a session starts
	Queue    Outcome = "queue"    // the waiting room page, with the room's queueing status code
	Prequeue Outcome = "prequeue" // an event's pre-queue page
	Closed   Outcome = "closed"   // queueing_method reject: the closed page
	Bypass   Outcome = "bypass"   // the room is suspended or deleted: to the origin, untouched and uncounted
)

// Why a visitor was queued.
const (
	ReasonLimits       = "limits"        // no slot left this minute
	ReasonEarlyRefresh = "early_refresh" // checked in before its refresh interval: nothing changes
	ReasonQueueAll     = "queue_all"
	ReasonPrequeue     = "prequeue"
	ReasonStale        = "stale_snapshot" // the snapshot is older than its maximum age
	ReasonNoSnapshot   = "no_snapshot"    // the gate has no snapshot of the room yet
	ReasonCounterError = "counter_error"  // the strategy failed; nobody is admitted on a guess
	ReasonFirstTry     = "first_try"      // a random queue: a new visitor's first try is at its first check-in
)

// Input is everything Decide needs: the time, the room's snapshot, the
// visitor's ticket (nil: none, or one that did not open), the gate, the
// strategy holding the counters, and random bits for the refresh jitter.
// Decide reads no clock and draws no random numbers of its own.
type Input struct {
	Now      time.Time
	Snapshot *Snapshot
	Ticket   *Ticket
	Gate     Gate
	Strategy Strategy
	Entropy  uint64
	// Lot is random bits fixed for the visitor for as long as it keeps its
	// ticket (the gate's: a hash of its visitor id): its place in an
	// event's shuffled pre-queue (Snapshot.InTurn).
	Lot uint64
}

// Decision is what to do with a request: the outcome, the ticket to write
// back (when SetTicket), what to add to the gate's report (Effect, for a
// Tally), and for queued visitors their wait and when to come back.
type Decision struct {
	Outcome   Outcome
	Ticket    *Ticket
	SetTicket bool
	Effect    Effect
	Wait      Wait
	RefreshIn time.Duration
	Reason    string // why a visitor was queued
}

// Effect is one decision's contribution to the gate's report of a minute.
type Effect struct {
	Minute       time.Time
	NewVisitor   bool      // arrived without a valid ticket
	Admitted     bool      // a session started
	FromQueue    bool      // ... for a visitor who had been queued
	Pool, Scope  string    // where its slot came from (none in passthrough)
	Seen         bool      // an admitted session's first request this minute
	Renewed      time.Time // the session moved into this minute from that one
	Revoked      time.Time // the origin ended the session counted in that minute
	Bucket       time.Time // the visitor's bucket, when Waiting is not 0
	Waiting      int       // +1 first check-in this minute while queued; -1 one counted this minute left the queue
	EarlyRefresh bool
	Closed       bool // turned away by a closed room

	// SessionFrom and SessionTo move a session's expiry in the room's
	// sub-minute ledger (RecordSession): zero From for an admission, zero
	// To for a revocation, both zero when the expiry did not move.
	SessionFrom, SessionTo time.Time
}

// renewEvery is how often a running session's ticket is rewritten within a
// minute; a new minute always rewrites it, which the room's count of active
// sessions relies on.
func renewEvery(minute time.Duration) time.Duration { return minute / 6 }

// RenewalDue reports whether a running session's ticket is rewritten at
// now (Decide sets it): in a minute after its last check-in's, or
// renewEvery after that check-in.
func RenewalDue(t *Ticket, now time.Time, length time.Duration) bool {
	return MinuteOf(t.LastCheckIn(), length).Before(MinuteOf(now, length)) || now.Sub(t.LastCheckIn()) >= renewEvery(length)
}

// Decide decides one request.
//
// A ticket whose session still runs passes without touching a counter (and
// renews the session unless renewal is disabled). Anyone else is a queued or
// new visitor: a queued visitor checking in before its refresh interval is
// sent back unchanged (hammering buys nothing); otherwise the visitor takes
// a slot through the strategy — FIFO: its bucket's reservation, then the
// new visitors' pool; random: the one pool — or is queued. An expired
// session counts as a new arrival.
//
// The error is the strategy's; the decision is then a safe one (queued).
func Decide(ctx context.Context, in Input) (Decision, error) {
	snap, now, t := in.Snapshot, in.Now, in.Ticket
	if snap == nil {
		return noSnapshot(in), nil
	}
	if t != nil && t.Room != snap.Room {
		t = nil
	}
	s := snap.Settings
	length := snap.MinuteLength()
	minute := MinuteOf(now, length)
	if snap.Status == StatusSuspended || snap.Status == StatusDeleted || s.Suspended {
		return Decision{Outcome: Bypass}, nil // the room is off (or gone): the origin as if there were none
	}
	if t.SessionValid(now, s.SessionDuration, length, s.DisableSessionRenewal) {
		if s.QueueingMethod == Reject {
			return Decision{Outcome: Closed, Effect: Effect{Minute: minute, Closed: true}}, nil
		}
		return pass(snap, t, now, minute), nil
	}

	queued := t != nil && !t.Admitted()
	var bucket time.Time
	next := &Ticket{Room: snap.Room}
	if queued {
		bucket = snap.BucketOf(t.Bucket())
		*next = *t
	} else {
		bucket = snap.BucketOf(minute)
		next.BucketID = millis(minute)
	}
	eff := Effect{Minute: minute, NewVisitor: !queued}

	if s.QueueingMethod == Reject {
		eff.Closed = true
		return Decision{Outcome: Closed, Effect: eff}, nil
	}
	if queued {
		if due, wait := t.checkInDue(now); !due {
			eff.EarlyRefresh = true
			return Decision{Outcome: queueOutcome(snap), Effect: eff, RefreshIn: wait, Reason: ReasonEarlyRefresh,
				Wait: WaitFor(snap, bucket, queueAllAt(snap))}, nil
		}
	}
	// counted reports whether this visitor was already counted as waiting
	// in this minute (it came back in it before).
	counted := queued && !t.Fresh && !MinuteOf(t.LastCheckIn(), length).Before(minute)

	var (
		admitted            bool
		pool, scope, reason string
		err                 error
	)
	switch {
	case !queued && s.QueueingMethod == Random && snap.Status == StatusQueueing:
		// Every try of a random queue has the same chance, so a new
		// visitor's first comes a refresh interval after its first request,
		// as anyone's next: otherwise dropping the cookie would buy a try
		// at every request.
		reason = ReasonFirstTry
	case queued && t.Fresh && s.QueueingMethod == FIFO && !MinuteOf(t.LastCheckIn(), length).Before(minute):
		// The check-in that counts a new visitor (see firstCheckIn): it
		// tried at its first request a moment ago. One that comes back in
		// the next minute (queued in the last second of its own) tries the
		// new minute's slots: queueing it there for a minute with no
		// slot asked of it is queueing below the limits.
		reason = cmp.Or(queuesEveryone(in), ReasonLimits)
	default:
		admitted, pool, scope, reason, err = tryAdmit(ctx, in, bucket, queued)
	}
	if admitted {
		next.AcceptedAt, next.LastCheckInTime, next.RefreshIntervalSeconds, next.Fresh = millis(now), millis(now), 0, false
		if !queued {
			next.BucketID = millis(minute)
		}
		eff.Admitted, eff.FromQueue, eff.Pool, eff.Scope, eff.Seen = true, queued, pool, scope, true
		eff.SessionTo = sessionExpiry(next, s, length)
		if counted {
			eff.Bucket, eff.Waiting = bucket, -1
		}
		return Decision{Outcome: Admit, Ticket: next, SetTicket: true, Effect: eff}, nil
	}
	refresh := JitterRefresh(RefreshBase(s.RefreshIntervalSeconds, length), in.Entropy)
	// A visitor is counted as waiting when it comes back, not when it is
	// handed a ticket: requests without one count no one.
	next.Fresh = !queued
	if next.Fresh && s.QueueingMethod == FIFO {
		// Asked back at once, so that it is counted in its arrival minute
		// and the room reserves for it in the next.
		refresh = firstCheckIn
	}
	next.LastCheckInTime, next.RefreshIntervalSeconds = millis(now), refresh
	switch {
	case queued && bucket.After(minute):
		// Back before the minute its place is in (a gate whose clock is
		// behind): counted at its next check-in.
		next.Fresh = t.Fresh
	case queued && !counted:
		eff.Bucket, eff.Waiting = bucket, 1
	}
	return Decision{Outcome: queueOutcome(snap), Ticket: next, SetTicket: true, Effect: eff, Reason: reason,
		RefreshIn: time.Duration(refresh) * time.Second, Wait: WaitFor(snap, bucketIfCounted(snap, bucket), queueAllAt(snap))}, err
}

// firstCheckIn is when a new visitor queued in a FIFO room comes back
// (seconds): it is counted as waiting from then.
const firstCheckIn = 1

// tryAdmit tries the pools open to the visitor, after the room-wide rules
// that queue everyone.
func tryAdmit(ctx context.Context, in Input, bucket time.Time, queued bool) (ok bool, pool, scope, reason string, err error) {
	snap := in.Snapshot
	if r := queuesEveryone(in); r != "" {
		return false, "", "", r, nil
	}
	if snap.Settings.QueueingMethod == Passthrough {
		return true, "", "", "", nil
	}
	if queued && !snap.InTurn(bucket, in.Lot) {
		return false, "", "", ReasonLimits, nil
	}
	pools := candidatePools(snap, bucket, queued, in.Now)
	if InOutage(snap, in.Now) {
		pools = outagePools(snap, queued)
	}
	for _, p := range pools {
		sc, took, err := in.Strategy.TakeSlot(ctx, SlotRequest{Snapshot: snap, Now: in.Now, Gate: in.Gate, Pool: p})
		if err != nil {
			return false, "", "", ReasonCounterError, err
		}
		if took {
			return true, p.Key(), sc, "", nil
		}
	}
	if ft, ok := in.Strategy.(FreedTaker); ok && mayTakeFreed(snap, bucket, queued, in.Now) {
		sc, took, err := ft.TakeFreed(ctx, SlotRequest{Snapshot: snap, Now: in.Now, Gate: in.Gate, Pool: freedPool(snap)})
		if err != nil {
			return false, "", "", ReasonCounterError, err
		}
		if took {
			return true, PoolNew, sc, "", nil
		}
	}
	return false, "", "", ReasonLimits, nil
}

// queuesEveryone is why the room queues everyone now ("" if it does not).
func queuesEveryone(in Input) string {
	switch snap := in.Snapshot; {
	case snap.Status == StatusEventPrequeueing:
		return ReasonPrequeue
	case snap.Settings.QueueAll:
		return ReasonQueueAll
	case snap.Stale(in.Now) && !InOutage(snap, in.Now):
		// In an outage the strategy decides by the outage's rules, for as
		// long as its counters answer (InOutage), whatever the age.
		return ReasonStale
	}
	return ""
}

// candidatePools: random, the one pool. FIFO, a queued visitor's bucket
// reservation, then the new visitors' pool — but while the reservations
// leave new visitors nothing (NewUserSlots is 0), that pool holds only the
// slots stale gates may still spend, and of the visitors here only those
// entitled to a reservation may use it, so nobody overtakes an older bucket.
// Late in the minute the next bucket may also take what older buckets left
// of their reservations (releasedPools).
func candidatePools(snap *Snapshot, bucket time.Time, queued bool, now time.Time) []*Pool {
	var out []*Pool
	fifo := snap.Settings.QueueingMethod == FIFO
	if fifo && queued {
		if p := snap.Pool(bucket); p != nil {
			out = append(out, p)
		}
	}
	if p := snap.Pool(time.Time{}); p != nil {
		if !fifo || snap.NewUserSlots > 0 || (queued && !bucket.After(lastReserved(snap))) {
			out = append(out, p)
		}
	}
	if fifo {
		out = append(out, releasedPools(snap, bucket, now)...)
	}
	return out
}

// outagePools: in an outage (InOutage) the room allots nothing, and the
// gates hand out what the limits still allow (OutageLimit) from one pool
// for everyone. The queue's order is not known beyond the snapshot, so in
// a room that was queueing a new visitor waits behind those who are, and
// tries from its next check-in on, as they do.
func outagePools(snap *Snapshot, queued bool) []*Pool {
	if !queued && snap.Status == StatusQueueing {
		return nil
	}
	p := outagePool
	return []*Pool{&p}
}

// lastReserved is the newest bucket holding reserved slots (zero if none).
func lastReserved(snap *Snapshot) time.Time {
	var last time.Time
	for _, b := range snap.Buckets {
		if b.ReservedSlots > 0 {
			last = b.Key
		}
	}
	return last
}

func pass(snap *Snapshot, t *Ticket, now, minute time.Time) Decision {
	s := snap.Settings
	length := snap.MinuteLength()
	eff := Effect{Minute: minute}
	lastMinute := MinuteOf(t.LastCheckIn(), length)
	next := *t
	d := Decision{Outcome: Pass, Ticket: &next}
	if lastMinute.Before(minute) {
		eff.Seen = true
		if !s.DisableSessionRenewal {
			eff.Renewed = lastMinute
		}
	}
	if RenewalDue(t, now, length) {
		next.LastCheckInTime = millis(now)
		d.SetTicket = true
		if from, to := sessionExpiry(t, s, length), sessionExpiry(&next, s, length); !from.Equal(to) {
			eff.SessionFrom, eff.SessionTo = from, to
		}
	}
	d.Effect = eff
	return d
}

// Revoke ends an admitted visitor's session at the origin's request (when
// the room enables the revoke command). The gate drops the ticket; the next
// request is a new arrival. ok is false when there is nothing to revoke.
func Revoke(snap *Snapshot, t *Ticket, now time.Time) (eff Effect, ok bool) {
	if snap == nil || t == nil || t.Room != snap.Room || !snap.Settings.RevokeEnabled() {
		return Effect{}, false
	}
	length := snap.MinuteLength()
	s := snap.Settings
	if !t.SessionValid(now, s.SessionDuration, length, s.DisableSessionRenewal) {
		return Effect{}, false
	}
	return Effect{Minute: MinuteOf(now, length), Revoked: MinuteOf(t.SessionStart(s.DisableSessionRenewal), length),
		SessionFrom: sessionExpiry(t, s, length)}, true
}

func queueOutcome(snap *Snapshot) Outcome {
	if snap.Status == StatusEventPrequeueing {
		return Prequeue
	}
	return Queue
}

func queueAllAt(snap *Snapshot) bool {
	return snap.Settings.QueueAll || snap.Status == StatusEventPrequeueing
}

// bucketIfCounted: a visitor the snapshot has not counted yet stands behind
// everyone it has.
func bucketIfCounted(snap *Snapshot, bucket time.Time) time.Time {
	for _, b := range snap.Buckets {
		if b.Key.Equal(bucket) {
			return bucket
		}
	}
	return time.Time{}
}

// noSnapshot: before a gate has any snapshot of the room it admits nobody
// new, but running sessions pass (it cannot know the session duration, so
// it trusts the ticket's for the default).
func noSnapshot(in Input) Decision {
	t := in.Ticket
	if t.SessionValid(in.Now, DefaultSessionDuration, time.Minute, false) {
		return Decision{Outcome: Pass}
	}
	return Decision{Outcome: Queue, Reason: ReasonNoSnapshot, RefreshIn: 5 * time.Second,
		Wait: Wait{QueueingMethod: DefaultQueueingMethod}}
}
