package publish

import (
	"fmt"
	"sort"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/workflow"

	"github.com/edgeflow/edgeflow/internal/publish/catalog"
	"github.com/edgeflow/edgeflow/workflows/publish/contract"
)

// maxListedProblems bounds the problems and failures a summary lists.
const maxListedProblems = contract.MaxListed

// parallelChecks is how many CheckPackages batches a check runs at once.
const parallelChecks = 4

// PackageUpdates checks every catalog package for versions not yet published
// and has each of them published (all of them, not one per run) as a
// PublishVersion with a deterministic ID. It hands each package's new
// versions to the package's lane (PackageLane) and moves on: a slow or
// failing version holds up only its own package's later versions, never the
// check, the next scheduled check or other packages. With in.Wait it then
// waits for the outcome of every version it handed over.
func PackageUpdates(ctx workflow.Context, in contract.UpdatesInput) (*contract.UpdatesStats, error) {
	// Checks begun before lanes (DefaultVersion) published their versions
	// themselves; none runs any more, so that path is gone and such a
	// history fails here instead of replaying a path that no longer exists.
	workflow.GetVersion(ctx, "version-lanes", 1, 1)
	if in.CheckBatch <= 0 {
		in.CheckBatch = 25
	}
	st := &in.Stats
	if err := workflow.SetQueryHandler(ctx, contract.ProgressQuery, func() (contract.UpdatesStats, error) { return *st, nil }); err != nil {
		return nil, err
	}
	ctx = publishOptions(ctx)
	sent := map[string]*catalog.Package{}
	for i := range in.Packages {
		sent[in.Packages[i].Name] = &in.Packages[i]
	}
	if in.Names == nil {
		switch {
		case len(in.Only) > 0:
			in.Names = append([]string(nil), in.Only...)
		case len(in.Packages) > 0:
			for _, p := range in.Packages {
				in.Names = append(in.Names, p.Name)
			}
		default:
			names, err := listCatalog(ctx)
			if err != nil {
				return nil, fmt.Errorf("list catalog: %w", err)
			}
			in.Names = names
		}
		sort.Strings(in.Names)
		st.Packages = len(in.Names)
	}
	// Several batches are checked at once: a check of the whole catalog is
	// bound by round trips to the registry and the store, not by any one
	// worker. Their results are taken in order.
	parallel := 1
	if workflow.GetVersion(ctx, "parallel-checks", workflow.DefaultVersion, 1) == 1 {
		parallel = parallelChecks
	}
	for in.Cursor < len(in.Names) {
		type pending struct {
			end    int
			future workflow.Future
		}
		var group []pending
		for next := in.Cursor; len(group) < parallel && next < len(in.Names); {
			end := min(next+in.CheckBatch, len(in.Names))
			refs := make([]contract.PackageRef, 0, end-next)
			for _, n := range in.Names[next:end] {
				refs = append(refs, contract.PackageRef{Name: n, Package: sent[n]})
			}
			group = append(group, pending{end, checkPackages(ctx, refs)})
			next = end
		}
		workflow.SetCurrentDetails(ctx, fmt.Sprintf("checking packages %d–%d of %d; %d new versions so far, %d published, %d failed",
			in.Cursor+1, group[len(group)-1].end, len(in.Names), st.NewVersions, st.Published, st.Failed))
		for _, g := range group {
			var checks []contract.PackageCheck
			if err := g.future.Get(ctx, &checks); err != nil {
				return nil, fmt.Errorf("check packages %v: %w", in.Names[in.Cursor:g.end], err)
			}
			handToLanes(ctx, &in, checks, sent)
			in.Cursor = g.end
		}
		info := workflow.GetInfo(ctx)
		if in.Cursor < len(in.Names) && (info.GetCurrentHistoryLength() > historyBudget || info.GetContinueAsNewSuggested()) {
			if in.Wait {
				newOutcomes(ctx, &in).drain() // outcomes delivered to this run count before it ends
			}
			return nil, workflow.NewContinueAsNewError(ctx, PackageUpdates, in)
		}
	}
	if in.Wait {
		if err := awaitOutcomes(ctx, &in); err != nil {
			return nil, err
		}
	}
	if !in.Wait {
		workflow.SetCurrentDetails(ctx, fmt.Sprintf("checked %d packages: %d new versions handed to their packages' lanes (%s…), %d problems",
			st.Checked, st.Queued, contract.PackageLaneWorkflowID(""), len(st.Problems)))
		return st, nil
	}
	workflow.SetCurrentDetails(ctx, fmt.Sprintf("checked %d packages: %d new versions, %d published, %d already published or in progress, %d failed",
		st.Checked, st.NewVersions, st.Published, st.AlreadyPublished+st.InProgress, st.Failed))
	return st, nil
}

// PublishChildOptions are the options of a PublishVersion run, as a child or
// started by a client: a deterministic ID (a failed version may run again,
// a published one never), findable by Package and Version.
func PublishChildOptions(name, version string) workflow.ChildWorkflowOptions {
	return workflow.ChildWorkflowOptions{
		WorkflowID:            contract.PublishVersionWorkflowID(name, version),
		TaskQueue:             contract.TaskQueue,
		WorkflowIDReusePolicy: contract.PublishIDReusePolicy,
		// A version finishes even if the check that found it is terminated.
		ParentClosePolicy:     enums.PARENT_CLOSE_POLICY_ABANDON,
		WorkflowRunTimeout:    0,
		WorkflowTaskTimeout:   10 * time.Second,
		TypedSearchAttributes: contract.VersionAttributes(name, version),
		StaticSummary:         contract.PublishSummary(name, version),
	}
}
