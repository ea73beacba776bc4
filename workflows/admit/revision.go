package admit

import (
	"go.temporal.io/sdk/workflow"

	engine "github.com/edgeflow/edgeflow/internal/admit"
)

// taken asks for a change's version marker: true when the run takes the
// change's new branch (a run begun before it replays without).
func taken(ctx workflow.Context, changeID string) bool {
	return workflow.GetVersion(ctx, changeID, workflow.DefaultVersion, 1) >= 1
}

// startChanges are the changes a run asks for as it starts, after
// pages-read-no-files and the room's handlers, in the order of the code
// and so of its history (which must not change), each with the revision
// that introduced it.
var startChanges = []struct {
	id  string
	rev engine.Revision
}{
	{"await-final-reports", engine.RevAwaitFinals},
	{"count-unreported-slots", engine.RevCountsStore},
	{"bound-room-state", engine.RevBounded},
	{"drop-undecodable-reports", engine.RevDropUndecodable},
	{"publish-on-final-reports", engine.RevPublishOnFinals},
	{"allot-outage-minute", engine.RevOutageMinute},
	{"hold-stale-freed", engine.RevStaleFreed},
	{"settle-recent-minutes", engine.RevSettleRecent},
}

// runRevision asks for the markers of startChanges and returns the run's
// revision: the longest run of revisions, from the first, whose changes it
// took. Code that knew a change knew every earlier one, so a run takes a
// prefix of them; markers that are not one (none recorded is such) would
// replay at the prefix, the later changes left out, and are logged.
func runRevision(ctx workflow.Context, strictPages bool) engine.Revision {
	took := make([]bool, engine.RevCurrent+1)
	took[engine.RevInitial], took[engine.RevStrictPages] = true, strictPages
	for _, c := range startChanges {
		took[c.rev] = taken(ctx, c.id)
	}
	rev := engine.RevInitial
	for rev < engine.RevCurrent && took[rev+1] {
		rev++
	}
	for later := rev + 1; later <= engine.RevCurrent; later++ {
		if took[later] {
			workflow.GetLogger(ctx).Warn("room took a change without an earlier one; it runs at the earlier revision",
				"revision", rev, "took", later)
			break
		}
	}
	return rev
}
