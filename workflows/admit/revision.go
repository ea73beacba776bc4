package admit

import (
	"go.temporal.io/sdk/workflow"

	engine "github.com/edgeflow/edgeflow/internal/admit"
)

// newBranch says whether a GetVersion answer is the change's new branch
// (a run begun before it replays without). The calls name their change
// IDs as literals: workflows/versions_test.go finds them so.
func newBranch(v workflow.Version) bool { return v >= 1 }

// runRevision asks for the markers a run reads as it starts, after
// pages-read-no-files and the room's handlers, in the order of its history
// (which must not change), and returns the run's revision (prefixRevision).
func runRevision(ctx workflow.Context, strictPages bool) engine.Revision {
	took := make([]bool, engine.RevCurrent+1)
	took[engine.RevInitial], took[engine.RevStrictPages] = true, strictPages
	took[engine.RevAwaitFinals] = newBranch(workflow.GetVersion(ctx, "await-final-reports", workflow.DefaultVersion, 1))
	took[engine.RevCountsStore] = newBranch(workflow.GetVersion(ctx, "count-unreported-slots", workflow.DefaultVersion, 1))
	took[engine.RevBounded] = newBranch(workflow.GetVersion(ctx, "bound-room-state", workflow.DefaultVersion, 1))
	took[engine.RevDropUndecodable] = newBranch(workflow.GetVersion(ctx, "drop-undecodable-reports", workflow.DefaultVersion, 1))
	took[engine.RevPublishOnFinals] = newBranch(workflow.GetVersion(ctx, "publish-on-final-reports", workflow.DefaultVersion, 1))
	took[engine.RevOutageMinute] = newBranch(workflow.GetVersion(ctx, "allot-outage-minute", workflow.DefaultVersion, 1))
	took[engine.RevStaleFreed] = newBranch(workflow.GetVersion(ctx, "hold-stale-freed", workflow.DefaultVersion, 1))
	took[engine.RevSettleRecent] = newBranch(workflow.GetVersion(ctx, "settle-recent-minutes", workflow.DefaultVersion, 1))
	took[engine.RevOutageReports] = newBranch(workflow.GetVersion(ctx, "await-outage-reports", workflow.DefaultVersion, 1))
	rev, stray := prefixRevision(took)
	if stray != 0 {
		workflow.GetLogger(ctx).Warn("room took a change without an earlier one; it runs at the earlier revision", "revision", rev, "took", stray)
	}
	return rev
}

// prefixRevision is the revision of a run that took the changes of the
// revisions took says (took[0], RevInitial, always): the longest run of
// them from the first. Code that knew a change knew every earlier one, so
// a run's markers are such a prefix (every recorded history's are); were
// they not, the run would follow the prefix's rules, the later changes
// left out, and stray is the first such change (0 when none).
func prefixRevision(took []bool) (rev, stray engine.Revision) {
	for int(rev)+1 < len(took) && took[rev+1] {
		rev++
	}
	for later := rev + 1; int(later) < len(took); later++ {
		if took[later] {
			return rev, later
		}
	}
	return rev, 0
}
