package admit

import (
	"context"
	"time"
)

// An outage without shared counters: a gate on the even split (no Redis,
// or its Redis down) knows nothing of the other gates' admissions, so it
// keeps to its own last share of the room: each minute, at most its even
// part of every scope the snapshot's minute allotted it (EvenShare); and of
// the room for sessions the snapshot left (total_active_users minus what
// snapshotSessions counts) the same part, less its own outage admissions
// whose sessions may still run. The gates' parts add up to no more than the
// snapshot's minute and its room for sessions, so neither limit is passed
// however long the outage lasts; renewed sessions may run for ever, so
// there a gate's part of the room, once spent, stays spent.

// EvenShare is a gate's part of the slots snap's minute allotted, as the
// even split divides them (its data center's scopes by the data center's
// gates, Anywhere by all, none of Anywhere with dataCenterOnly), and all
// the minute allotted.
func EvenShare(snap *Snapshot, g Gate, dataCenterOnly bool) (share, allotted int) {
	inDC, global := snap.Gates(g)
	for _, p := range snap.Pools {
		for _, sc := range p.Scopes {
			allotted += sc.Limit
			switch {
			case sc.Name == Anywhere && !dataCenterOnly, sc.Name == g.DataCenter && sc.Name != Anywhere:
				share += PerGateLimit(sc, inDC, global, 1)
			}
		}
	}
	return share, allotted
}

// evenOutageKeep is how long a gate keeps its outage counters: renewed
// sessions count from the outage's start.
const evenOutageKeep = 24 * time.Hour

// takeEvenOutageSlot takes a slot of an outage minute (InOutage) within the
// gate's own last share, on its own counters.
func takeEvenOutageSlot(ctx context.Context, store Counter, req SlotRequest, dataCenterOnly bool) (string, bool, error) {
	snap := req.Snapshot
	length := snap.MinuteLength()
	m := MinuteOf(req.Now, length)
	share, allotted := EvenShare(snap, req.Gate, dataCenterOnly)
	if share <= 0 || allotted <= 0 || req.Now.Sub(snap.PublishedAt) < outageSettled {
		return "", false, nil
	}
	suffix := "/gate=" + req.Gate.ID
	others, first := snapshotSessions(snap, m, true)
	room := int64(snap.Settings.TotalActiveUsers-others) * int64(share) / int64(allotted)
	for k := first; k.Before(m); k = k.Add(length) {
		n, err := store.Load(ctx, OutageKey(snap.Room, k)+suffix)
		if err != nil {
			return "", false, err
		}
		room -= n
	}
	limit := min(int64(share), room)
	if snap.Settings.QueueingMethod == Random {
		limit = int64(PacedLimit(int(max(limit, 0)), req.Now.Sub(m), length, snap.ReleaseSeed(m, PoolNew, Anywhere+suffix)))
	}
	if limit <= 0 {
		return "", false, nil
	}
	took, err := store.TakeBelow(ctx, OutageKey(snap.Room, m)+suffix, limit, m.Add(evenOutageKeep))
	if err != nil || !took {
		return "", false, err
	}
	return Anywhere, true, nil
}
