package admit

import "encoding/json"

// Revision is the compatibility revision of a room's rules: each change to
// how a room rolls its minutes up that would make a recorded room workflow
// replay differently raised it by one. A room keeps the revision its run
// started with (the room workflow derives it from its GetVersion markers:
// a run started on revision k took every change up to k), so one number,
// ordered, says which rules apply: the engine asks rev >= X, never a set of
// independent switches.
type Revision int

// The revisions, in the order the changes were made. Each names the
// room workflow's GetVersion change ID that introduced it (see
// docs/architecture.md, "Versioning").
const (
	// RevInitial: rooms from before any change below.
	RevInitial Revision = iota
	// RevAwaitFinals (await-final-reports): the room waits, past the
	// grace and up to FinalWait into the minute, for every gate's final
	// report of the minute before it publishes the next snapshot.
	RevAwaitFinals
	// RevCountsStore (count-unreported-slots): the room counts the slots
	// the shared counters handed out beyond what the gates reported
	// (Report.StoreTaken).
	RevCountsStore
	// RevBounded (bound-room-state): the room bounds what one minute's
	// reports hold (Ledger.AddBounded), so its state always crosses
	// continue-as-new.
	RevBounded
	// RevDropUndecodable (drop-undecodable-reports): the workflow never
	// blocks on a report that does not decode. The engine has no part in
	// it; the revision keeps the workflow's markers one ordered sequence.
	RevDropUndecodable
	// RevStrictPages (pages-read-no-files): custom pages with partials,
	// sections too deep or names too long are refused when a change is
	// applied, not only by the validators.
	RevStrictPages
	// RevPublishOnFinals (publish-on-final-reports): the room publishes a
	// minute's snapshot as soon as every reporter's final report of the
	// minute before is in, without waiting for the grace.
	RevPublishOnFinals
	// RevOutageMinute (allot-outage-minute): the minute a room comes back
	// in from an outage is allotted whole to the gates' outage counter
	// (see Room.OutageMinute).
	RevOutageMinute
	// RevStaleFreed (hold-stale-freed): a snapshot says how many places of
	// ended sessions stale gates may fill (Snapshot.StaleFreed), held in
	// the minute after it.
	RevStaleFreed
	// RevSettleRecent (settle-recent-minutes): a recent minute's record
	// counts the reports that reach the room after it was recorded.
	RevSettleRecent
	// RevOutageReports (await-outage-reports): after minutes it published
	// no snapshot of (Temporal or its workers down), the room waits for
	// the reports the gates kept through them and keeps those minutes open
	// for the reports that come later (see Room.Returned).
	RevOutageReports

	// RevCurrent is the revision new rooms start at.
	RevCurrent = RevOutageReports
)

// UnmarshalJSON reads a room as every revision of the workflow wrote it.
// Rooms carried across continue-as-new before the revision existed said
// which of the first changes they took in separate fields; they are read
// into the revision they amount to (the workflow sets each run's revision
// from its markers in any case).
func (r *Room) UnmarshalJSON(b []byte) error {
	type plain Room // without this method
	legacy := struct {
		*plain
		AwaitFinals     bool `json:"awaitFinals"`
		CountsStore     bool `json:"countsStore"`
		Bounded         bool `json:"bounded"`
		PublishOnFinals bool `json:"publishOnFinals"`
	}{plain: (*plain)(r)}
	if err := json.Unmarshal(b, &legacy); err != nil {
		return err
	}
	// Each flag was only ever set together with those before it, so the
	// flags read as the longest run of them that is set.
	rev := RevInitial
	for _, took := range []struct {
		set bool
		rev Revision
	}{{legacy.AwaitFinals, RevAwaitFinals}, {legacy.CountsStore, RevCountsStore}, {legacy.Bounded, RevBounded}, {legacy.PublishOnFinals, RevPublishOnFinals}} {
		if !took.set {
			break
		}
		rev = took.rev
	}
	r.Rev = max(r.Rev, rev)
	return nil
}
