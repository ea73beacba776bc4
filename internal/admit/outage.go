package admit

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// An outage is a gate deciding on a snapshot whose minute ended two
// minutes ago or more (in minute M+3 on M's): the room has published
// nothing this gate could read for two minutes (the admit workers or
// Temporal are down, or the room's workflow vanished). In the minute after
// the snapshot's the stale rule spends a quarter of its new visitors'
// pool; in the one after that nothing, as a slow room (a late timer, late
// reads) may still be publishing it. From then on the gates of a room with
// shared counters keep admitting new visitors within both limits from what
// the counters know, on one counter per minute in the Anywhere store
// (OutageKey), shared by every gate of every data center:
//
//   - new_users_per_minute: nobody else takes in an outage minute, so the
//     counter of the minute is held to the limit;
//   - total_active_users: the active users are at most the snapshot's
//     (while its sessions may still run: always when sessions are renewed,
//     session_duration minutes otherwise), plus every slot handed out
//     since — in the snapshot's minute all it allotted, in the minute after
//     what stale gates could spend, from then on the outage counters — of
//     the sessions that may still run.
//
// Gates that read a snapshot mark its minute as read (SnapshotReadKey); a
// gate still on an older one that finds any later minute marked is behind,
// not in an outage (the room publishes, and allots those minutes without
// knowing of this gate's takes), and admits nobody new as before.

// outageAfter is how many minutes after its own a snapshot starts an
// outage. Two overshot new_users_per_minute in the loaded test world
// (TestLoadedRoomNeverOvershootsAMinute): a room whose timer fired 8 s
// late published a minute that no gate had read two minutes on.
const outageAfter = 3

// InOutage reports whether a decision at now on snap is an outage's.
func InOutage(snap *Snapshot, now time.Time) bool {
	length := snap.MinuteLength()
	return !MinuteOf(now, length).Before(snap.Minute.Add(outageAfter * length))
}

// OutageKey is the counter of a minute's outage admissions: the Anywhere
// scope of the new visitors' pool, which stale gates of the minute before
// spend from too.
func OutageKey(room string, minute time.Time) string {
	return CounterKey(room, minute, PoolNew, Anywhere)
}

// SnapshotReadKey marks a minute whose snapshot a gate of the room read
// (its count is 0 or 1), in the Anywhere store.
func SnapshotReadKey(room string, minute time.Time) string {
	return CounterKey(room, minute, "snapshot", Anywhere)
}

// MarkSnapshotRead records in the shared store that a gate holds snap, for
// gates still on an older snapshot (see InOutage).
func MarkSnapshotRead(ctx context.Context, store Counter, snap *Snapshot) error {
	_, err := store.TakeBelow(ctx, SnapshotReadKey(snap.Room, snap.Minute), 1, snap.Minute.Add(2*snap.MinuteLength()+snap.MaxAge()))
	return err
}

// LiveSessionCounter counts a room's sessions in the sub-minute ledger
// (SessionLedger) that may still run at a time: those whose expiry second is
// LiveFromSecond(at) or later (one that ends within that second counts too:
// an upper bound). within is how far past at a session may run (its
// duration), so that a store reads no further. A store that keeps no ledger
// answers an error wrapping ErrNoLedger.
type LiveSessionCounter interface {
	SessionsLive(ctx context.Context, room string, at time.Time, within time.Duration) (int64, error)
}

// LiveFromSecond is the first expiry second (SessionExpirySecond) of the
// sessions that may still run at t.
func LiveFromSecond(t time.Time) int64 { return t.Unix() }

// recordLag is how long after its decision a gate's session may still be
// missing from the ledger (gates record them in the background, in
// milliseconds unless Redis is slow): the outage admissions of the minute
// before count on top of the ledger for that long into a minute.
const recordLag = 5 * time.Second

// markWindow is how many minutes back a gate in an outage looks for a later
// snapshot's read mark (SnapshotReadKey): the marks of a room that publishes
// again, however slowly, are that recent; and on the ledger an outage's
// limit does not depend on which snapshot a gate holds but for its settings.
const markWindow = 3

// outageSettled is how old a snapshot must be before an outage's limit
// trusts the session ledger over what the snapshot counted: in a room with
// short minutes (tests), three minutes after a snapshot's may be seconds,
// and a room whose reads are that late is slow, not down (the loaded test
// world reads up to 30 s late; TestLoadedRoomNeverOvershootsAMinute). With
// 60-second minutes an outage's minute is always older than this.
const outageSettled = time.Minute

// OutageLimitAt is how far the outage counter of now's minute may go on
// snap, for gates whose shared counters keep the room's session ledger
// (LiveSessionCounter): min(new_users_per_minute, total_active_users − the
// sessions the ledger shows running now − the outage admissions of the
// minute before while they may not be recorded yet). The counter's own
// admissions, held below the limit, count on top of the ledger, which
// holds most of them already: never past the limit, at the cost of some
// places while total_active_users binds. ok is false when a later
// snapshot was read by some gate (this gate is behind). err wraps
// ErrNoLedger when the store keeps no ledger (then OutageLimit).
func OutageLimitAt(ctx context.Context, store Counter, snap *Snapshot, now time.Time) (limit int, ok bool, err error) {
	live, isLive := store.(LiveSessionCounter)
	if !isLive || now.Sub(snap.PublishedAt) < outageSettled {
		return 0, false, ErrNoLedger
	}
	length := snap.MinuteLength()
	m := MinuteOf(now, length)
	if behind, err := laterSnapshotRead(ctx, store, snap, m); err != nil || behind {
		return 0, false, err
	}
	s := snap.Settings
	running, err := live.SessionsLive(ctx, snap.Room, now, time.Duration(s.SessionDuration)*length+time.Second)
	if errors.Is(err, ErrNoLedger) {
		return 0, false, err
	}
	if err != nil {
		return 0, false, fmt.Errorf("session ledger: %w", err)
	}
	others := running
	if now.Sub(m) < recordLag {
		n, err := store.Load(ctx, OutageKey(snap.Room, m.Add(-length)))
		if err != nil {
			return 0, false, fmt.Errorf("counter: %w", err)
		}
		others += n
	}
	return int(max(0, min(int64(s.NewUsersPerMinute), int64(s.TotalActiveUsers)-others))), true, nil
}

// laterSnapshotRead reports whether some gate marked a snapshot after
// snap's read, up to minute m (the last markWindow minutes).
func laterSnapshotRead(ctx context.Context, store Counter, snap *Snapshot, m time.Time) (bool, error) {
	length := snap.MinuteLength()
	from := snap.Minute.Add(length)
	if w := m.Add(-(markWindow - 1) * length); w.After(from) {
		from = w
	}
	for k := from; !k.After(m); k = k.Add(length) {
		n, err := store.Load(ctx, SnapshotReadKey(snap.Room, k))
		if err != nil {
			return false, fmt.Errorf("counter: %w", err)
		}
		if n > 0 {
			return true, nil
		}
	}
	return false, nil
}

// OutageLimit is how far the outage counter of minute m may go on snap:
// min(new_users_per_minute, total_active_users − the most users who may be
// active in m besides m's own admissions), never below 0. ok is false when
// a later snapshot was read by some gate (this gate is behind).
func OutageLimit(ctx context.Context, store Counter, snap *Snapshot, m time.Time) (limit int, ok bool, err error) {
	length := snap.MinuteLength()
	s := snap.Settings
	if behind, err := laterSnapshotRead(ctx, store, snap, m); err != nil || behind {
		return 0, false, err
	}
	others, first := snapshotSessions(snap, m, false)
	for k := first; k.Before(m); k = k.Add(length) {
		n, err := store.Load(ctx, OutageKey(snap.Room, k))
		if err != nil {
			return 0, false, fmt.Errorf("counter: %w", err)
		}
		others += int(n)
	}
	return max(0, min(s.NewUsersPerMinute, s.TotalActiveUsers-others)), true, nil
}

// snapshotSessions counts the sessions that may still run in outage minute
// m by what snap knows: its active users while they may run, all its
// minute allotted, what stale gates could spend in the minute after (its
// Anywhere scope too with staleAnywhere; OutageLimit reads that minute's
// outage counter instead). first is the first outage minute whose
// admissions may still run in m.
func snapshotSessions(snap *Snapshot, m time.Time, staleAnywhere bool) (others int, first time.Time) {
	length := snap.MinuteLength()
	s := snap.Settings
	// Sessions that may still run in m began at or after from: a session
	// admitted in minute k runs into minute k+session_duration. Renewed
	// sessions may run on for ever, so all since the snapshot count.
	from := m.Add(-time.Duration(s.SessionDuration) * length)
	renewed := !s.DisableSessionRenewal
	if renewed || from.Before(snap.Minute) {
		others += snap.ActiveUsers // sessions alive when the snapshot's minute began
	}
	if renewed || !from.After(snap.Minute) {
		for _, p := range snap.Pools {
			others += p.Slots // everything the snapshot's minute allotted
		}
	}
	stale := snap.Minute.Add(length)
	if renewed || !from.After(stale) {
		// Stale gates spend the data centers' scopes of the new visitors'
		// pool in the minute after the snapshot's; its Anywhere scope is
		// that minute's outage counter.
		if p := snap.Pool(time.Time{}); p != nil {
			for _, sc := range p.Scopes {
				if sc.Name != Anywhere || staleAnywhere {
					others += StaleRemainder(sc, 0)
				}
			}
		}
	}
	first = stale
	if !renewed && from.After(first) {
		first = from
	}
	return others, first
}

// takeOutageSlot takes one slot of an outage minute on the shared counters
// (see InOutage): none if a later snapshot was read, in a random queue
// released at random moments through the minute like any minute's slots.
func takeOutageSlot(ctx context.Context, store Counter, req SlotRequest) (string, bool, error) {
	snap := req.Snapshot
	length := snap.MinuteLength()
	m := MinuteOf(req.Now, length)
	limit, ok, err := OutageLimitAt(ctx, store, snap, req.Now)
	if errors.Is(err, ErrNoLedger) {
		// Without the ledger the snapshot's own counts bound the active
		// users, and only up to its maximum age.
		if snap.Stale(req.Now) {
			return "", false, nil
		}
		limit, ok, err = OutageLimit(ctx, store, snap, m)
	}
	if err != nil || !ok {
		return "", false, err
	}
	if snap.Settings.QueueingMethod == Random {
		limit = PacedLimit(limit, req.Now.Sub(m), length, snap.ReleaseSeed(m, PoolNew, Anywhere))
	}
	if limit <= 0 {
		return "", false, nil
	}
	took, err := store.TakeBelow(ctx, OutageKey(snap.Room, m), int64(limit), m.Add(2*length+snap.MaxAge()))
	if err != nil {
		return "", false, &TakeError{Minute: m, Pool: PoolNew, Scope: Anywhere, Err: err}
	}
	if !took {
		return "", false, nil
	}
	return Anywhere, true, nil
}

// outagePool is the pool an outage's visitors take from: the new visitors',
// all Anywhere (the room allots nothing for the minute).
var outagePool = Pool{Scopes: []Scope{{Name: Anywhere}}}
