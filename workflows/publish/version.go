package publish

import (
	"errors"
	"fmt"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/edgeflow/edgeflow/internal/publish/plan"
	"github.com/edgeflow/edgeflow/workflows/publish/contract"
)

// maxWarnings bounds the minify warnings a version keeps for its summary.
const maxWarnings = 10

// historyBudget is the event count after which a version continues as new;
// far below the 51,200-event limit, so a 100,000-file version never nears it.
const historyBudget = 10000

// PublishVersion downloads one version, fans its files out to batch children
// on the compress pool, waits for their completion signals, and publishes.
// Its workflow ID is PublishVersionWorkflowID(name, version).
func PublishVersion(ctx workflow.Context, in contract.PublishInput) (_ *contract.PublishOutput, err error) {
	v := &version{in: in, st: in.Resume, stage: "downloading"}
	if v.st != nil {
		v.stage = "processing"
	}
	defer func() {
		// The Web UI shows why a version failed without opening its history.
		if err != nil && !workflow.IsContinueAsNewError(err) {
			workflow.SetCurrentDetails(ctx, fmt.Sprintf("**%s@%s failed**: %s", in.Name, in.Version, err))
		}
	}()
	if err := workflow.SetQueryHandler(ctx, contract.ProgressQuery, func() (contract.PublishProgress, error) { return v.progress(), nil }); err != nil {
		return nil, err
	}
	return v.run(publishOptions(ctx))
}

// version is a PublishVersion run's state; PublishInput (with its Resume
// state) is what continue-as-new carries.
type version struct {
	in    contract.PublishInput
	st    *contract.PublishState // nil until the version is staged
	stage string

	// Set while awaiting batches.
	sel           workflow.Selector
	signals       workflow.ReceiveChannel
	execution     string // the first run's ID, which batch reports must carry
	failure       error  // the first failure seen; ends the wait
	pendingStarts int    // children initiated but not yet started

	// The stall watchdog's state.
	lastDone, idleChecks int
}

func (v *version) run(ctx workflow.Context) (*contract.PublishOutput, error) {
	name, ver := v.in.Name, v.in.Version
	if v.st == nil {
		v.setDetails(ctx)
		plan, err := stageVersion(ctx, v.in.VersionRef)
		if err != nil {
			return nil, fmt.Errorf("%s@%s: download: %w", name, ver, err)
		}
		if plan.Repair && workflow.GetVersion(ctx, "repair-incomplete-commits", workflow.DefaultVersion, 1) == 1 {
			return v.repairCommit(ctx)
		}
		if plan.AlreadyPublished {
			v.setStage(ctx, "already published")
			return &contract.PublishOutput{AlreadyPublished: true}, nil
		}
		if plan.SkipReason != "" && workflow.GetVersion(ctx, "skip-unselected-versions", workflow.DefaultVersion, 1) == 1 {
			v.setStage(ctx, "skipped: "+plan.SkipReason)
			return &contract.PublishOutput{SkipReason: plan.SkipReason}, nil
		}
		v.st = contract.NewPublishState(plan)
		v.stage = "processing"
	}

	if err := v.awaitBatches(ctx); err != nil {
		// Every run without this (and without the stall watchdog) ran on the
		// retired pipeline queue: version 1 is the only one left.
		workflow.GetVersion(ctx, "cancel-batches-on-failure", 1, 1)
		cancelOutstanding(ctx, v.in, v.st)
		return nil, err
	}
	if v.st.DoneCount() < v.st.Plan.Batches {
		// awaitBatches stopped for continue-as-new.
		v.st.Runs++
		next := v.in
		next.Resume = v.st
		return nil, workflow.NewContinueAsNewError(ctx, PublishVersion, next)
	}

	v.setStage(ctx, "publishing")
	res, err := v.commit(ctx, false)
	if err != nil {
		return nil, err
	}
	v.setStage(ctx, "published")
	workflow.GetLogger(ctx).Info("published", "package", name, "version", ver, "files", res.Files,
		"reuseRate", res.ReuseRate, "latest", res.Latest)
	return &contract.PublishOutput{Plan: v.st.Plan, Processing: v.st.Totals, Result: &res}, nil
}

// repairCommit finishes a version listed in its package document whose
// commit stopped part way: Commit, finding its plan gone, redoes the steps
// after the commit point (each idempotent), then Materialize copies what is
// left to copy.
func (v *version) repairCommit(ctx workflow.Context) (*contract.PublishOutput, error) {
	v.setStage(ctx, "repairing")
	res, err := v.commit(ctx, true)
	if err != nil {
		return nil, err
	}
	v.setStage(ctx, "repaired")
	return &contract.PublishOutput{Result: &res}, nil
}

// commit runs Commit, then Materialize when reused files need their own
// keys: the end of a publish, or all of a repair. Its errors say which.
func (v *version) commit(ctx workflow.Context, repair bool) (contract.CommitResult, error) {
	commitPrefix, materializePrefix := "publish: ", ""
	if repair {
		commitPrefix, materializePrefix = "repair: ", "repair: "
	}
	ref := contract.PackageVersion{Name: v.in.Name, Version: v.in.Version}
	res, err := commit(ctx, ref)
	if err != nil {
		return res, fmt.Errorf("%s@%s: %s%w", ref.Name, ref.Version, commitPrefix, err)
	}
	if !repair {
		v.setStage(ctx, "materializing")
	}
	if res.Copies > 0 {
		// Gives reused files their own keys. The version is served already and
		// the copies are idempotent, so this waits out a store outage (no
		// attempt limit) instead of failing a published version.
		mctx := workflow.WithRetryPolicy(ctx, temporal.RetryPolicy{
			InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: 10 * time.Minute})
		if err := materialize(mctx, ref); err != nil {
			return res, fmt.Errorf("%s@%s: %smaterialize reused files: %w", ref.Name, ref.Version, materializePrefix, err)
		}
	}
	return res, nil
}

func (v *version) progress() contract.PublishProgress {
	p := contract.PublishProgress{Stage: v.stage}
	if st := v.st; st != nil {
		p.Batches, p.BatchesDone, p.Files, p.FilesDone, p.Reused, p.ContinuedAsNew =
			st.Plan.Batches, st.DoneCount(), st.Plan.ToProcess, st.Totals.Files, st.Plan.Reused, st.Runs
	}
	return p
}

func (v *version) setStage(ctx workflow.Context, stage string) {
	v.stage = stage
	v.setDetails(ctx)
}

func (v *version) setDetails(ctx workflow.Context) {
	p := v.progress()
	workflow.SetCurrentDetails(ctx, fmt.Sprintf("**%s@%s** — %s: %d/%d batches, %d/%d files processed, %d reused",
		v.in.Name, v.in.Version, p.Stage, p.BatchesDone, p.Batches, p.FilesDone, p.Files, p.Reused))
}

// awaitBatches keeps a sliding window of children running (MaxPendingBatches,
// else plan.DefaultBatchesInFlight) and counts their completion signals. It
// returns early, with the state consistent, when the history is due for
// continue-as-new.
func (v *version) awaitBatches(ctx workflow.Context) error {
	in, st := v.in, v.st
	window := plan.BatchWindow(in.MaxPendingBatches)
	if workflow.GetVersion(ctx, "batch-window", workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		// Runs from before started every batch at once unless asked not to.
		window = plan.MaxBatchesInFlight
		if in.MaxPendingBatches > 0 {
			window = in.MaxPendingBatches
		}
	}
	budget := in.HistoryBudget
	if budget <= 0 {
		budget = historyBudget
	}
	v.signals = workflow.GetSignalChannel(ctx, contract.BatchDoneSignal)
	v.execution = workflow.GetInfo(ctx).FirstRunID
	v.sel = workflow.NewSelector(ctx)
	v.sel.AddReceive(v.signals, func(c workflow.ReceiveChannel, _ bool) {
		var d contract.BatchDone
		c.Receive(ctx, &d)
		v.record(d)
	})
	workflow.GetVersion(ctx, "stall-watchdog", 1, 1) // see cancel-batches-on-failure
	v.lastDone, v.idleChecks = st.DoneCount(), 0
	v.armStallCheck(ctx)
	for st.DoneCount() < st.Plan.Batches {
		for n := plan.BatchesToStart(window, st.Started, st.DoneCount(), st.Plan.Batches); n > 0; n-- {
			v.launch(ctx, st.Started)
			st.Started++
		}
		v.sel.Select(ctx)
		if v.failure != nil {
			return v.failure
		}
		v.setDetails(ctx)
		info := workflow.GetInfo(ctx)
		if st.DoneCount() < st.Plan.Batches && (info.GetCurrentHistoryLength() > budget || info.GetContinueAsNewSuggested()) {
			return v.settle(ctx)
		}
	}
	return nil
}

// launch starts one batch's child and watches it start and end.
func (v *version) launch(ctx workflow.Context, batch int) {
	in, st := v.in, v.st
	v.pendingStarts++
	child := startBatch(ctx, in, st.Plan, batch)
	v.sel.AddFuture(child.GetChildWorkflowExecution(), func(f workflow.Future) {
		v.pendingStarts--
		if err := f.Get(ctx, nil); err != nil && !isAlreadyStarted(err) {
			v.failure = fmt.Errorf("%s@%s: start batch %d: %w", in.Name, in.Version, batch, err)
		}
	})
	// A child that ends without reporting (terminated, timed out,
	// or unable to signal) fails the version instead of leaving it
	// waiting forever. Its report, if any, arrives before its end.
	v.sel.AddFuture(child, func(f workflow.Future) {
		if err := f.Get(ctx, nil); err != nil && !isAlreadyStarted(err) && !st.IsDone(batch) && v.failure == nil {
			v.failure = fmt.Errorf("%s@%s: batch %d ended without reporting: %w", in.Name, in.Version, batch, err)
		}
	})
}

// settle readies the state for continue-as-new: every child must have
// started (its signal then reaches the next run), and every signal already
// delivered must be counted.
func (v *version) settle(ctx workflow.Context) error {
	for v.pendingStarts > 0 && v.failure == nil {
		v.sel.Select(ctx)
	}
	// A fresh value per signal: decoding into the last one would
	// keep the fields a report leaves out (its error, its summary).
	for {
		var d contract.BatchDone
		if !v.signals.ReceiveAsync(&d) {
			break
		}
		v.record(d)
	}
	return v.failure
}

// record counts one batch's report.
func (v *version) record(d contract.BatchDone) {
	st := v.st
	if d.Batch < 0 || d.Batch >= st.Plan.Batches || st.IsDone(d.Batch) || (d.Execution != "" && d.Execution != v.execution) {
		return // duplicate or foreign signal: the count must not drift
	}
	if d.Error != "" {
		v.failure = fmt.Errorf("%s@%s: batch %d: %s", v.in.Name, v.in.Version, d.Batch, d.Error)
		return
	}
	st.MarkDone(d.Batch)
	if d.Summary != nil {
		t := &st.Totals
		t.Files += d.Summary.Files
		t.Twins += d.Summary.Twins
		t.MinifyFailed += d.Summary.MinifyFailed
		t.BytesIn += d.Summary.BytesIn
		t.BytesOut += d.Summary.BytesOut
		t.CPUMillis += d.Summary.CPUMillis
		t.Warnings = append(t.Warnings, d.Summary.Warnings...)
		if len(t.Warnings) > maxWarnings {
			t.Warnings = t.Warnings[:maxWarnings]
		}
	}
}

// isAlreadyStarted recognises a child whose workflow ID is taken: running
// elsewhere, or completed under a reuse policy that keeps it.
func isAlreadyStarted(err error) bool {
	var started *temporal.ChildWorkflowExecutionAlreadyStartedError
	var exists *serviceerror.WorkflowExecutionAlreadyStarted
	return errors.As(err, &started) || errors.As(err, &exists)
}

// stallCheckEvery is how often a version looks for batches that finished
// unseen. A child started by an earlier run (before continue-as-new) or left
// over from a reset cannot be watched directly; its results in the bucket
// are the durable proof that it finished.
const stallCheckEvery = 30 * time.Minute

// armStallCheck arms a durable timer, re-armed each time it fires: when no
// batch reported since the last check, the version looks for their results
// in the bucket and counts those it finds; after two checks in a row without
// progress it fails, so a lost child can never hold the version (and its
// update check) forever.
func (v *version) armStallCheck(ctx workflow.Context) {
	v.sel.AddFuture(workflow.NewTimer(ctx, stallCheckEvery), func(workflow.Future) {
		defer v.armStallCheck(ctx)
		v.checkStalls(ctx)
	})
}

func (v *version) checkStalls(ctx workflow.Context) {
	in, st := v.in, v.st
	if now := st.DoneCount(); now > v.lastDone {
		v.lastDone, v.idleChecks = now, 0
		return
	}
	var outstanding []int
	for b := 0; b < st.Started; b++ {
		if !st.IsDone(b) {
			outstanding = append(outstanding, b)
		}
	}
	if len(outstanding) == 0 {
		return
	}
	found, err := findBatchResults(ctx, contract.BatchResultsInput{Name: in.Name, Version: in.Version, Batches: outstanding})
	if err != nil {
		v.failure = fmt.Errorf("%s@%s: look for stalled batches: %w", in.Name, in.Version, err)
		return
	}
	for _, f := range found {
		v.record(contract.BatchDone{Batch: f.Batch, Summary: &contract.BatchSummary{Files: f.Files}})
	}
	if st.DoneCount() > v.lastDone {
		v.lastDone, v.idleChecks = st.DoneCount(), 0
		return
	}
	if v.idleChecks++; v.idleChecks >= 2 {
		v.failure = fmt.Errorf("%s@%s: batches %v made no progress for %s and left no results; their children ended unseen (terminated or reset?)",
			in.Name, in.Version, outstanding, 2*stallCheckEvery)
	}
}
