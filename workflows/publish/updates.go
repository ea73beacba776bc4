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

const maxListedProblems = 20

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
	// Runs begun before lanes waited for every version of each batch.
	lanes := workflow.GetVersion(ctx, "version-lanes", workflow.DefaultVersion, 1) == 1
	if in.CheckBatch <= 0 {
		in.CheckBatch = 25
	}
	if in.MaxParallelVersions <= 0 {
		in.MaxParallelVersions = 8
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
	// With lanes, several batches are checked at once: a check of the whole
	// catalog is bound by round trips to the registry and the store, not by
	// any one worker. Their results are taken in order.
	parallel := 1
	if lanes && workflow.GetVersion(ctx, "parallel-checks", workflow.DefaultVersion, 1) == 1 {
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
			group = append(group, pending{end, workflow.ExecuteActivity(ctx, contract.CheckPackagesActivity, refs)})
			next = end
		}
		workflow.SetCurrentDetails(ctx, fmt.Sprintf("checking packages %d–%d of %d; %d new versions so far, %d published, %d failed",
			in.Cursor+1, group[len(group)-1].end, len(in.Names), st.NewVersions, st.Published, st.Failed))
		for _, g := range group {
			var checks []contract.PackageCheck
			if err := g.future.Get(ctx, &checks); err != nil {
				return nil, fmt.Errorf("check packages %v: %w", in.Names[in.Cursor:g.end], err)
			}
			if lanes {
				handToLanes(ctx, &in, checks, sent)
			} else {
				publishNewVersions(ctx, in, checks, sent, st)
			}
			in.Cursor = g.end
		}
		info := workflow.GetInfo(ctx)
		if in.Cursor < len(in.Names) && (info.GetCurrentHistoryLength() > historyBudget || info.GetContinueAsNewSuggested()) {
			if lanes && in.Wait {
				newOutcomes(ctx, &in).drain() // outcomes delivered to this run count before it ends
			}
			return nil, workflow.NewContinueAsNewError(ctx, PackageUpdates, in)
		}
	}
	if lanes && in.Wait {
		if err := awaitOutcomes(ctx, &in); err != nil {
			return nil, err
		}
	}
	if lanes && !in.Wait {
		workflow.SetCurrentDetails(ctx, fmt.Sprintf("checked %d packages: %d new versions handed to their packages' lanes (%s…), %d problems",
			st.Checked, st.Queued, contract.PackageLaneWorkflowID(""), len(st.Problems)))
		return st, nil
	}
	workflow.SetCurrentDetails(ctx, fmt.Sprintf("checked %d packages: %d new versions, %d published, %d already published or in progress, %d failed",
		st.Checked, st.NewVersions, st.Published, st.AlreadyPublished+st.InProgress, st.Failed))
	return st, nil
}

// publishNewVersions is how checks begun before lanes published: it runs a
// batch's new versions as children and waits for all of them. Versions of one package run one after another, oldest first,
// so each can reuse what the previous one processed; packages run in
// parallel, at most MaxParallelVersions at once.
func publishNewVersions(ctx workflow.Context, in contract.UpdatesInput, checks []contract.PackageCheck, sent map[string]*catalog.Package, st *contract.UpdatesStats) {
	var lanes [][]contract.VersionRef
	for _, c := range checks {
		st.Checked++
		if c.NotModified {
			st.NotModified++
		}
		if c.Problem != "" {
			if len(st.Problems) < maxListedProblems {
				st.Problems = append(st.Problems, c.Name+": "+c.Problem)
			}
			continue
		}
		var lane []contract.VersionRef
		for _, v := range c.NewVersions {
			st.NewVersions++
			lane = append(lane, contract.VersionRef{PackageRef: contract.PackageRef{Name: c.Name, Package: sent[c.Name]}, Version: v.Version, Dist: v.Dist})
		}
		if len(lane) > 0 {
			lanes = append(lanes, lane)
		}
	}
	sel := workflow.NewSelector(ctx)
	var startNext func(lane []contract.VersionRef)
	running := 0
	startNext = func(lane []contract.VersionRef) {
		ref := lane[0]
		f := workflow.ExecuteChildWorkflow(workflow.WithChildOptions(ctx, PublishChildOptions(ref.Name, ref.Version)), PublishVersion, contract.PublishInput{VersionRef: ref})
		sel.AddFuture(f, func(f workflow.Future) {
			var out contract.PublishOutput
			err := f.Get(ctx, &out)
			switch {
			case err == nil && out.AlreadyPublished:
				st.AlreadyPublished++
			case err == nil && out.SkipReason != "":
				st.Skipped++
			case err == nil:
				st.Published++
			case isAlreadyStarted(err):
				st.InProgress++
			default:
				st.Failed++
				if len(st.Failures) < maxListedProblems {
					st.Failures = append(st.Failures, err.Error())
				}
			}
			if len(lane) > 1 {
				startNext(lane[1:])
			} else {
				running--
			}
		})
	}
	next := 0
	for next < len(lanes) || running > 0 {
		for next < len(lanes) && running < in.MaxParallelVersions {
			running++
			startNext(lanes[next])
			next++
		}
		sel.Select(ctx)
	}
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
