package publish

import (
	"errors"
	"fmt"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

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
	name, version := in.Name, in.Version
	defer func() {
		// The Web UI shows why a version failed without opening its history.
		if err != nil && !workflow.IsContinueAsNewError(err) {
			workflow.SetCurrentDetails(ctx, fmt.Sprintf("**%s@%s failed**: %s", name, version, err))
		}
	}()
	st := in.Resume
	stage := "downloading"
	if st != nil {
		stage = "processing"
	}
	progress := func() contract.PublishProgress {
		p := contract.PublishProgress{Stage: stage}
		if st != nil {
			p.Batches, p.BatchesDone, p.Files, p.FilesDone, p.Reused, p.ContinuedAsNew =
				st.Plan.Batches, st.DoneCount(), st.Plan.ToProcess, st.Totals.Files, st.Plan.Reused, st.Runs
		}
		return p
	}
	if err := workflow.SetQueryHandler(ctx, contract.ProgressQuery, func() (contract.PublishProgress, error) { return progress(), nil }); err != nil {
		return nil, err
	}
	setDetails := func() {
		p := progress()
		workflow.SetCurrentDetails(ctx, fmt.Sprintf("**%s@%s** — %s: %d/%d batches, %d/%d files processed, %d reused",
			name, version, p.Stage, p.BatchesDone, p.Batches, p.FilesDone, p.Files, p.Reused))
	}
	ctx = publishOptions(ctx)

	if st == nil {
		setDetails()
		plan, err := stageVersion(ctx, in.VersionRef)
		if err != nil {
			return nil, fmt.Errorf("%s@%s: download: %w", name, version, err)
		}
		if plan.Repair && workflow.GetVersion(ctx, "repair-incomplete-commits", workflow.DefaultVersion, 1) == 1 {
			return repairCommit(ctx, name, version, setDetails, func(s string) { stage = s })
		}
		if plan.AlreadyPublished {
			stage = "already published"
			setDetails()
			return &contract.PublishOutput{AlreadyPublished: true}, nil
		}
		if plan.SkipReason != "" && workflow.GetVersion(ctx, "skip-unselected-versions", workflow.DefaultVersion, 1) == 1 {
			stage = "skipped: " + plan.SkipReason
			setDetails()
			return &contract.PublishOutput{SkipReason: plan.SkipReason}, nil
		}
		st = contract.NewPublishState(plan)
		stage = "processing"
	}

	if err := awaitBatches(ctx, in, st, setDetails); err != nil {
		if workflow.GetVersion(ctx, "cancel-batches-on-failure", workflow.DefaultVersion, 1) == 1 {
			cancelOutstanding(ctx, in, st)
		}
		return nil, err
	}
	if st.DoneCount() < st.Plan.Batches {
		// awaitBatches stopped for continue-as-new.
		st.Runs++
		next := in
		next.Resume = st
		return nil, workflow.NewContinueAsNewError(ctx, PublishVersion, next)
	}

	stage = "publishing"
	setDetails()
	res, err := commit(ctx, contract.PackageVersion{Name: name, Version: version})
	if err != nil {
		return nil, fmt.Errorf("%s@%s: publish: %w", name, version, err)
	}
	stage = "materializing"
	setDetails()
	if res.Copies > 0 {
		// Gives reused files their own keys. The version is served already and
		// the copies are idempotent, so this waits out a store outage (no
		// attempt limit) instead of failing a published version.
		mctx := workflow.WithRetryPolicy(ctx, temporal.RetryPolicy{
			InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: 10 * time.Minute})
		if err := materialize(mctx, contract.PackageVersion{Name: name, Version: version}); err != nil {
			return nil, fmt.Errorf("%s@%s: materialize reused files: %w", name, version, err)
		}
	}
	stage = "published"
	setDetails()
	workflow.GetLogger(ctx).Info("published", "package", name, "version", version, "files", res.Files,
		"reuseRate", res.ReuseRate, "latest", res.Latest)
	return &contract.PublishOutput{Plan: st.Plan, Processing: st.Totals, Result: &res}, nil
}

// awaitBatches keeps at most MaxPendingBatches children running and counts
// their completion signals. It returns early, with the state consistent,
// when the history is due for continue-as-new.
func awaitBatches(ctx workflow.Context, in contract.PublishInput, st *contract.PublishState, setDetails func()) error {
	window := in.MaxPendingBatches
	if window <= 0 {
		window = 500
	}
	budget := in.HistoryBudget
	if budget <= 0 {
		budget = historyBudget
	}
	signals := workflow.GetSignalChannel(ctx, contract.BatchDoneSignal)
	var failure error
	execution := workflow.GetInfo(ctx).FirstRunID
	record := func(d contract.BatchDone) {
		if d.Batch < 0 || d.Batch >= st.Plan.Batches || st.IsDone(d.Batch) || (d.Execution != "" && d.Execution != execution) {
			return // duplicate or foreign signal: the count must not drift
		}
		if d.Error != "" {
			failure = fmt.Errorf("%s@%s: batch %d: %s", in.Name, in.Version, d.Batch, d.Error)
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
	sel := workflow.NewSelector(ctx)
	sel.AddReceive(signals, func(c workflow.ReceiveChannel, _ bool) {
		var d contract.BatchDone
		c.Receive(ctx, &d)
		record(d)
	})
	pendingStarts := 0
	if workflow.GetVersion(ctx, "stall-watchdog", workflow.DefaultVersion, 1) == 1 {
		watchStalls(ctx, in, st, sel, record, &failure)
	}
	for st.DoneCount() < st.Plan.Batches {
		for st.Started < st.Plan.Batches && st.Started-st.DoneCount() < window {
			batch := st.Started
			pendingStarts++
			child := startBatch(ctx, in, st.Plan, batch)
			sel.AddFuture(child.GetChildWorkflowExecution(), func(f workflow.Future) {
				pendingStarts--
				if err := f.Get(ctx, nil); err != nil && !isAlreadyStarted(err) {
					failure = fmt.Errorf("%s@%s: start batch %d: %w", in.Name, in.Version, batch, err)
				}
			})
			// A child that ends without reporting (terminated, timed out,
			// or unable to signal) fails the version instead of leaving it
			// waiting forever. Its report, if any, arrives before its end.
			sel.AddFuture(child, func(f workflow.Future) {
				if err := f.Get(ctx, nil); err != nil && !isAlreadyStarted(err) && !st.IsDone(batch) && failure == nil {
					failure = fmt.Errorf("%s@%s: batch %d ended without reporting: %w", in.Name, in.Version, batch, err)
				}
			})
			st.Started++
		}
		sel.Select(ctx)
		if failure != nil {
			return failure
		}
		setDetails()
		info := workflow.GetInfo(ctx)
		if st.DoneCount() < st.Plan.Batches && (info.GetCurrentHistoryLength() > budget || info.GetContinueAsNewSuggested()) {
			// Every child must have started (its signal then reaches the next
			// run), and every signal already delivered must be counted.
			for pendingStarts > 0 && failure == nil {
				sel.Select(ctx)
			}
			// A fresh value per signal: decoding into the last one would
			// keep the fields a report leaves out (its error, its summary).
			for {
				var d contract.BatchDone
				if !signals.ReceiveAsync(&d) {
					break
				}
				record(d)
			}
			return failure
		}
	}
	return nil
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

// watchStalls arms a repeating durable timer: when no batch reported since
// the last check, the version looks for their results in the bucket and
// counts those it finds; after two checks in a row without progress it fails,
// so a lost child can never hold the version (and its update check) forever.
func watchStalls(ctx workflow.Context, in contract.PublishInput, st *contract.PublishState, sel workflow.Selector, record func(contract.BatchDone), failure *error) {
	lastDone, idleChecks := st.DoneCount(), 0
	var arm func()
	arm = func() {
		sel.AddFuture(workflow.NewTimer(ctx, stallCheckEvery), func(workflow.Future) {
			defer arm()
			if now := st.DoneCount(); now > lastDone {
				lastDone, idleChecks = now, 0
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
				*failure = fmt.Errorf("%s@%s: look for stalled batches: %w", in.Name, in.Version, err)
				return
			}
			for _, f := range found {
				record(contract.BatchDone{Batch: f.Batch, Summary: &contract.BatchSummary{Files: f.Files}})
			}
			if st.DoneCount() > lastDone {
				lastDone, idleChecks = st.DoneCount(), 0
				return
			}
			if idleChecks++; idleChecks >= 2 {
				*failure = fmt.Errorf("%s@%s: batches %v made no progress for %s and left no results; their children ended unseen (terminated or reset?)",
					in.Name, in.Version, outstanding, 2*stallCheckEvery)
			}
		})
	}
	arm()
}

// repairCommit finishes a version listed in its package document whose
// commit stopped part way: Commit, finding its plan gone, redoes the steps
// after the commit point (each idempotent), then Materialize copies what is
// left to copy.
func repairCommit(ctx workflow.Context, name, version string, setDetails func(), setStage func(string)) (*contract.PublishOutput, error) {
	setStage("repairing")
	setDetails()
	res, err := commit(ctx, contract.PackageVersion{Name: name, Version: version})
	if err != nil {
		return nil, fmt.Errorf("%s@%s: repair: %w", name, version, err)
	}
	if res.Copies > 0 {
		mctx := workflow.WithRetryPolicy(ctx, temporal.RetryPolicy{
			InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: 10 * time.Minute})
		if err := materialize(mctx, contract.PackageVersion{Name: name, Version: version}); err != nil {
			return nil, fmt.Errorf("%s@%s: repair: materialize reused files: %w", name, version, err)
		}
	}
	setStage("repaired")
	setDetails()
	return &contract.PublishOutput{Result: &res}, nil
}
