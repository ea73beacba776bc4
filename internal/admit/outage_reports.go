package admit

import "time"

// A room back from an outage of Temporal itself (not only of its
// workers, whose signals Temporal holds) hears of the outage's minutes
// only once the gates send again the reports they kept: after its timer
// fired and it could publish. From RevOutageReports it takes them over
// rather than dropping them, so its record and its active users hold what
// the gates did while it was away:
//
//   - its first snapshot after minutes with none of their own waits, for
//     at most FinalWait from its first try (AwaitingOutage), until every
//     reporter it last heard from has a final report of the minute before
//     (the gates send their kept minutes oldest first, so the earlier ones
//     are in by then); the gates keep to the outage's rules meanwhile;
//   - the ledger closes none of its minutes at that snapshot or the next:
//     a report of any of them that comes later is kept (the newest of
//     each reporter, as for any open minute: nothing is counted twice)
//     and counted in the next snapshot, and in the record of its minute
//     once it closes (settleRecent).

// skipsMinutes says whether publishing minute leaves minutes before it
// with no snapshot of their own.
func (r *Room) skipsMinutes(minute time.Time) bool {
	return r.Rev >= RevOutageReports && r.Snapshot != nil && minute.After(r.Snapshot.Minute.Add(r.MinuteLength()))
}

// awaitsOutageReports says whether the snapshot of due waits for the
// outage's reports at now: due leaves minutes with no snapshot, a
// reporter of the newest minute the room heard of before has no final
// report of the minute before due yet, and the room has waited less than
// FinalWait (from its first try, which it remembers).
func (r *Room) awaitsOutageReports(due, now time.Time) bool {
	if !r.skipsMinutes(due) {
		return false
	}
	before := due.Add(-r.MinuteLength())
	if heard, ok := r.Ledger.lastReportedBefore(before); !ok || r.Ledger.Final(heard, before) {
		return false
	}
	if r.AwaitingOutage.IsZero() {
		r.AwaitingOutage = now
	}
	return now.Before(r.AwaitingOutage.Add(r.FinalWait()))
}

// closeBefore is where the ledger closes as minute is published: before
// previous, but at the first snapshot after minutes with none of their
// own and at the next one, nothing more (see Returned).
func (r *Room) closeBefore(minute, previous time.Time) time.Time {
	if r.Rev < RevOutageReports {
		return previous
	}
	if r.skipsMinutes(minute) {
		r.Returned, r.AwaitingOutage = minute, time.Time{}
	}
	if !r.Returned.IsZero() && minute.Before(r.Returned.Add(2*r.MinuteLength())) && r.Ledger.ClosedBefore.Before(previous) {
		return r.Ledger.ClosedBefore
	}
	return previous
}

// lastReportedBefore is the newest open minute before m with a report.
func (l *Ledger) lastReportedBefore(m time.Time) (time.Time, bool) {
	for i := len(l.Open) - 1; i >= 0; i-- {
		if l.Open[i].Minute.Before(m) {
			return l.Open[i].Minute, true
		}
	}
	return time.Time{}, false
}
