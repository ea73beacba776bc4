package publish

import (
	"errors"
	"fmt"
	"slices"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/edgeflow/edgeflow/internal/publish/catalog"
	"github.com/edgeflow/edgeflow/workflows/publish/contract"
)

// handToLanes gives each checked package's new versions, oldest first, to
// the package's lane, all packages at once, and returns without waiting for
// any version to publish.
func handToLanes(ctx workflow.Context, in *contract.UpdatesInput, checks []contract.PackageCheck, sent map[string]*catalog.Package) {
	st := &in.Stats
	replyTo := ""
	if in.Wait {
		replyTo = workflow.GetInfo(ctx).WorkflowExecution.ID
	}
	wg := workflow.NewWaitGroup(ctx)
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
		if len(c.NewVersions) == 0 {
			continue
		}
		msg := contract.LaneVersions{ReplyTo: replyTo}
		for _, v := range c.NewVersions {
			msg.Versions = append(msg.Versions, contract.VersionRef{PackageRef: contract.PackageRef{Name: c.Name, Package: sent[c.Name]}, Version: v.Version, Dist: v.Dist})
		}
		st.NewVersions += len(msg.Versions)
		wg.Add(1)
		workflow.Go(ctx, func(ctx workflow.Context) {
			defer wg.Done()
			if err := handToLane(ctx, c.Name, msg); err != nil {
				st.Failed += len(msg.Versions)
				if len(st.Failures) < maxListedProblems {
					st.Failures = append(st.Failures, fmt.Sprintf("%s: hand %d versions to its lane: %v", c.Name, len(msg.Versions), err))
				}
				return
			}
			st.Queued += len(msg.Versions)
			if in.Wait {
				for _, v := range msg.Versions {
					in.Awaiting = append(in.Awaiting, v.Name+"@"+v.Version)
				}
			}
		})
	}
	wg.Wait(ctx)
}

// handToLane signals the package's running lane, or starts it with the
// versions when none runs: signal-with-start, in workflow code. A lane that
// ends between a failed signal and the start, or starts meanwhile from
// another check, is tried again.
func handToLane(ctx workflow.Context, name string, msg contract.LaneVersions) error {
	var err error
	for range 3 {
		err = workflow.SignalExternalWorkflow(ctx, contract.PackageLaneWorkflowID(name), "", contract.LaneVersionsSignal, msg).Get(ctx, nil)
		var gone *temporal.UnknownExternalWorkflowExecutionError
		if !errors.As(err, &gone) {
			return err // delivered, or a failure to report
		}
		in := contract.LaneInput{Name: name}
		for _, v := range msg.Versions {
			e := contract.LaneEntry{VersionRef: v}
			if msg.ReplyTo != "" {
				e.ReplyTo = []string{msg.ReplyTo}
			}
			in.Queue = append(in.Queue, e)
		}
		lane := workflow.ExecuteChildWorkflow(workflow.WithChildOptions(ctx, laneOptions(name)), PackageLane, in)
		if err = lane.GetChildWorkflowExecution().Get(ctx, nil); !isAlreadyStarted(err) {
			return err
		}
	}
	return fmt.Errorf("lane %s: neither signalled nor started after 3 tries: %w", contract.PackageLaneWorkflowID(name), err)
}

// outcomes counts the lanes' reports to a waiting check.
type outcomes struct {
	in      *contract.UpdatesInput
	signals workflow.ReceiveChannel
}

func newOutcomes(ctx workflow.Context, in *contract.UpdatesInput) *outcomes {
	return &outcomes{in: in, signals: workflow.GetSignalChannel(ctx, contract.VersionDoneSignal)}
}

func (o *outcomes) record(v contract.VersionOutcome) {
	in := o.in
	i := slices.Index(in.Awaiting, v.Name+"@"+v.Version)
	if i < 0 {
		return // not ours, or counted already
	}
	in.Awaiting = slices.Delete(in.Awaiting, i, i+1)
	in.Stats.Count(v)
}

// drain counts every report already delivered, so that none is lost when
// the run continues as new.
func (o *outcomes) drain() {
	for {
		var v contract.VersionOutcome
		if !o.signals.ReceiveAsync(&v) {
			return
		}
		o.record(v)
	}
}

// awaitOutcomes waits for the lanes' reports on every version this check
// handed over, counting them, and continues as new if its history grows.
func awaitOutcomes(ctx workflow.Context, in *contract.UpdatesInput) error {
	st := &in.Stats
	o := newOutcomes(ctx, in)
	for len(in.Awaiting) > 0 {
		workflow.SetCurrentDetails(ctx, fmt.Sprintf("waiting for %d of %d versions: %d published, %d already published or in progress, %d failed",
			len(in.Awaiting), st.Queued, st.Published, st.AlreadyPublished+st.InProgress, st.Failed))
		var v contract.VersionOutcome
		o.signals.Receive(ctx, &v)
		o.record(v)
		if info := workflow.GetInfo(ctx); len(in.Awaiting) > 0 && (info.GetCurrentHistoryLength() > historyBudget || info.GetContinueAsNewSuggested()) {
			o.drain()
			return workflow.NewContinueAsNewError(ctx, PackageUpdates, *in)
		}
	}
	return nil
}
