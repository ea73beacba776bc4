package publish

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/edgeflow/edgeflow/workflows/publish/contract"
)

// PackageLane runs one package's versions one after another, in the order
// they were handed to it (oldest first), so each can reuse what the previous
// one processed. Its workflow ID is PackageLaneWorkflowID(name): checks add versions to the
// running lane by signal, or start it with them. Its queue is the durable
// record of the package's order once the check that found the versions has
// moved on. A slow or failing version holds up only this lane; a failed one
// does not stop the versions after it. With nothing left to run it drains
// its signals and ends.
func PackageLane(ctx workflow.Context, in contract.LaneInput) (*contract.LaneStats, error) {
	l := &lane{LaneInput: in, signals: workflow.GetSignalChannel(ctx, contract.LaneVersionsSignal)}
	if err := workflow.SetQueryHandler(ctx, contract.ProgressQuery, func() (contract.LaneProgress, error) { return l.progress(), nil }); err != nil {
		return nil, err
	}
	return l.run(ctx)
}

// lane is a lane's state; LaneInput is what continue-as-new carries.
type lane struct {
	contract.LaneInput
	signals workflow.ReceiveChannel
	running bool // Queue[0] is publishing
}

func (l *lane) run(ctx workflow.Context) (*contract.LaneStats, error) {
	budget := l.HistoryBudget
	if budget <= 0 {
		budget = historyBudget
	}
	for {
		// Every signal delivered so far is in the queue before the lane
		// decides to end or to continue as new. A signal that arrives while
		// the lane completes fails that completion, and the workflow task
		// runs again with the signal in its history: this drain then sees it.
		l.drain(ctx)
		if len(l.Queue) == 0 {
			l.setDetails(ctx)
			return &l.Stats, nil
		}
		if info := workflow.GetInfo(ctx); info.GetCurrentHistoryLength() > budget || info.GetContinueAsNewSuggested() {
			l.Stats.ContinuedAsNew++
			return nil, workflow.NewContinueAsNewError(ctx, PackageLane, l.LaneInput)
		}
		next := l.Queue[0]
		l.running = true
		l.setDetails(ctx)
		outcome := l.publish(ctx, next.VersionRef)
		l.running = false
		l.Queue = l.Queue[1:]
		l.Stats.Count(outcome)
		l.reply(ctx, next.ReplyTo, outcome)
	}
}

// publish runs one version to its end, queueing the versions signalled
// meanwhile.
func (l *lane) publish(ctx workflow.Context, ref contract.VersionRef) contract.VersionOutcome {
	child := workflow.ExecuteChildWorkflow(workflow.WithChildOptions(ctx, PublishChildOptions(ref.Name, ref.Version)),
		PublishVersion, contract.PublishInput{VersionRef: ref})
	var out contract.PublishOutput
	var err error
	ended := false
	sel := workflow.NewSelector(ctx)
	sel.AddFuture(child, func(f workflow.Future) { err, ended = f.Get(ctx, &out), true })
	sel.AddReceive(l.signals, func(c workflow.ReceiveChannel, _ bool) {
		var v contract.LaneVersions
		c.Receive(ctx, &v)
		l.enqueue(ctx, v)
		l.setDetails(ctx)
	})
	for !ended {
		sel.Select(ctx)
	}
	o := contract.VersionOutcome{Name: ref.Name, Version: ref.Version}
	switch {
	case err == nil && out.AlreadyPublished:
		o.Outcome = contract.OutcomeAlreadyPublished
	case err == nil && out.SkipReason != "":
		o.Outcome, o.Error = contract.OutcomeSkipped, out.SkipReason
	case err == nil:
		o.Outcome = contract.OutcomePublished
	case isAlreadyStarted(err):
		// Running elsewhere (a starter asked for exactly this version).
		o.Outcome = contract.OutcomeInProgress
	default:
		o.Outcome, o.Error = contract.OutcomeFailed, err.Error()
	}
	return o
}

// drain queues every signal already delivered.
func (l *lane) drain(ctx workflow.Context) {
	var v contract.LaneVersions
	for l.signals.ReceiveAsync(&v) {
		l.enqueue(ctx, v)
		v = contract.LaneVersions{}
	}
}

// enqueue adds versions not yet waiting. A version already waiting (or
// running) is not queued twice: the check asking for it waits for that run,
// or, if it asked for it twice, hears at once that it is in progress.
func (l *lane) enqueue(ctx workflow.Context, v contract.LaneVersions) {
	for _, ref := range v.Versions {
		i := slices.IndexFunc(l.Queue, func(e contract.LaneEntry) bool { return e.Version == ref.Version })
		switch {
		case i < 0:
			e := contract.LaneEntry{VersionRef: ref}
			if v.ReplyTo != "" {
				e.ReplyTo = []string{v.ReplyTo}
			}
			l.Queue = append(l.Queue, e)
		case v.ReplyTo == "":
		case slices.Contains(l.Queue[i].ReplyTo, v.ReplyTo):
			l.reply(ctx, []string{v.ReplyTo}, contract.VersionOutcome{Name: ref.Name, Version: ref.Version, Outcome: contract.OutcomeInProgress})
		default:
			l.Queue[i].ReplyTo = append(l.Queue[i].ReplyTo, v.ReplyTo)
		}
	}
}

// reply tells the waiting checks how a version ended. A check that is gone
// (terminated, or timed out) is not an error of the lane.
func (l *lane) reply(ctx workflow.Context, to []string, o contract.VersionOutcome) {
	var sent []workflow.Future
	for _, id := range to {
		sent = append(sent, workflow.SignalExternalWorkflow(ctx, id, "", contract.VersionDoneSignal, o))
	}
	for i, f := range sent {
		if err := f.Get(ctx, nil); err != nil {
			workflow.GetLogger(ctx).Warn("a waiting check did not get its outcome", "check", to[i], "version", o.Version, "error", err)
		}
	}
}

func (l *lane) progress() contract.LaneProgress {
	p := contract.LaneProgress{Stats: l.Stats}
	waiting := l.Queue
	if l.running && len(waiting) > 0 {
		p.Running, waiting = waiting[0].Version, waiting[1:]
	}
	for _, e := range waiting {
		p.Waiting = append(p.Waiting, e.Version)
	}
	return p
}

func (l *lane) setDetails(ctx workflow.Context) {
	p := l.progress()
	now := "idle"
	if p.Running != "" {
		now = "publishing " + p.Running
	}
	waiting := p.Waiting
	if len(waiting) > 5 {
		waiting = append(slices.Clone(waiting[:5]), "…")
	}
	workflow.SetCurrentDetails(ctx, fmt.Sprintf("**%s** — %s; %d waiting %s; %d published, %d already published, %d failed",
		l.Name, now, len(p.Waiting), strings.Join(waiting, ", "), p.Stats.Published, p.Stats.AlreadyPublished, p.Stats.Failed))
}

// laneOptions start a package's lane as a child of the check that found its
// versions; it outlives the check.
func laneOptions(name string) workflow.ChildWorkflowOptions {
	return workflow.ChildWorkflowOptions{
		WorkflowID:            contract.PackageLaneWorkflowID(name),
		TaskQueue:             contract.TaskQueue,
		WorkflowIDReusePolicy: enums.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		ParentClosePolicy:     enums.PARENT_CLOSE_POLICY_ABANDON,
		WorkflowTaskTimeout:   10 * time.Second,
		TypedSearchAttributes: temporal.NewSearchAttributes(contract.PackageKey.ValueSet(name)),
		StaticSummary:         "Versions of " + name + ", one after another",
	}
}
