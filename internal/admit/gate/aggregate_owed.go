package gate

import (
	"context"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"
)

// The minutes a data center owes its room: ended minutes whose aggregate
// the room has not taken because Temporal did not answer (stopped, or
// frozen with its connections open). The lease holder keeps them for
// AggregateRoom.Keep after their end (keptFor: as long as the room's
// ledger keeps a minute) and sends them, oldest first, before its last minute once
// Temporal answers again: a room back from such an outage takes them late
// (admit.RevOutageReports) and counts what the gates did meanwhile.
// Before, only the last minute was sent, and the outage's first minutes
// never reached the room.

// owe marks an ended minute as owed, and keeps its counts in Redis as long
// as it is (the gates' writes keep a minute aggKeep minutes).
func (a *Aggregator) owe(ctx context.Context, r AggregateRoom, m time.Time) {
	k := aggKey{r.Name, m.UnixMilli()}
	if r.Keep <= 0 || a.owed[k] {
		return
	}
	a.owed[k] = true
	if err := a.Client.PExpire(ctx, countsKey(r.Name, a.DataCenter, m), r.Keep+aggKeep*r.Length).Err(); err != nil {
		a.Logger.Debug("cannot keep an unsent minute's counts longer in Redis", "room", r.Name, "err", err)
	}
}

// sendOwed sends the room's owed minutes before last, oldest first, and
// returns the oldest still owed (last when none is): it stops at the first
// that fails, so a Temporal that does not answer costs one attempt a poll.
// A new holder owes the room every minute it keeps, once: what the holder
// before it sent is marked in Redis (sentField) and goes no second time.
func (a *Aggregator) sendOwed(ctx context.Context, now time.Time, r AggregateRoom, last time.Time, sink ReportSink) time.Time {
	if r.Keep <= 0 {
		return last
	}
	from := last.Add(-r.Keep)
	if !a.scanned[r.Name] {
		a.scanned[r.Name] = true
		// Kept as long as the minutes it owes itself: one that ended
		// while no gate held the lease has only the gates' aggKeep left.
		for m := from; m.Before(last); m = m.Add(r.Length) {
			a.owe(ctx, r, m)
		}
	}
	var owed []int64
	for k := range a.owed {
		if k.room == r.Name && k.minute < last.UnixMilli() {
			owed = append(owed, k.minute)
		}
	}
	slices.Sort(owed)
	for _, ms := range owed {
		k, m := aggKey{r.Name, ms}, time.UnixMilli(ms).UTC()
		if m.Before(from) {
			delete(a.owed, k) // kept long enough: the room has no use for it
			continue
		}
		if a.send(ctx, now, r, m, true, true, sink) != nil {
			return m
		}
		delete(a.owed, k)
	}
	return last
}

// keepAtLeast sets a key's expiry to ARGV[1] ms from now unless it already
// lives longer: a gate's write of a minute (Write, MarkDirect) must not cut
// short the time the lease holder keeps it for while it owes it (owe).
// Before, a gate's final write that came after the holder began to owe the
// minute (the later minutes of an outage are owed at once, behind the
// earlier ones) set it back to aggKeep minutes.
var keepAtLeast = redis.NewScript(`
local t = redis.call('PTTL', KEYS[1])
if t < tonumber(ARGV[1]) then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return t
`)

// keepMinute is keepAtLeast of a minute's counts for aggKeep minutes, in a
// gate's write.
func keepMinute(ctx context.Context, p redis.Pipeliner, key string, length time.Duration) {
	keepAtLeast.Eval(ctx, p, []string{key}, (aggKeep * length).Milliseconds())
}
