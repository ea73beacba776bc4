package workflows

import (
	"errors"
	"fmt"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/edgeflow/edgeflow/activities"
)

// a is used only to name activity methods; workflows never call it directly.
var a *activities.Publish

// BatchDoneSignal is what a batch child sends its version when it finishes.
const BatchDoneSignal = "batch-done"

// ProgressQuery returns a PublishProgress.
const ProgressQuery = "progress"

// PublishInput asks for one version; Resume carries state across continue-as-new.
type PublishInput struct {
	activities.VersionRef
	// MaxPendingBatches bounds children in flight, well under Temporal's
	// 2,000 pending children per workflow.
	MaxPendingBatches int `json:"maxPendingBatches,omitempty"`
	// HistoryBudget is the event count after which the run continues as new;
	// zero means historyBudget.
	HistoryBudget int           `json:"historyBudget,omitempty"`
	Resume        *PublishState `json:"resume,omitempty"`
}

// PublishState is the part of a version's progress that must survive
// continue-as-new: the plan summary and the completion count the batch
// children signal (the seed's Durable Object counter).
type PublishState struct {
	Plan    activities.DownloadResult `json:"plan"`
	Started int                       `json:"started"`
	Done    []uint64                  `json:"done"` // bitset by batch index
	Totals  activities.BatchSummary   `json:"totals"`
	Runs    int                       `json:"runs"`
}

func (s *PublishState) isDone(b int) bool { return s.Done[b/64]&(1<<(b%64)) != 0 }
func (s *PublishState) markDone(b int)    { s.Done[b/64] |= 1 << (b % 64) }

// DoneCount counts the batches that reported.
func (s *PublishState) DoneCount() int {
	n := 0
	for _, w := range s.Done {
		for ; w != 0; w &= w - 1 {
			n++
		}
	}
	return n
}

// BatchDone is the signal payload of a finished batch.
type BatchDone struct {
	Batch int `json:"batch"`
	// Execution is the first run ID of the version execution that started
	// the batch: a child left running by an earlier, failed or terminated
	// execution of the same version must not count for the next one.
	Execution string                   `json:"execution,omitempty"`
	Summary   *activities.BatchSummary `json:"summary,omitempty"`
	Error     string                   `json:"error,omitempty"`
}

// PublishProgress answers ProgressQuery.
type PublishProgress struct {
	Stage          string `json:"stage"`
	Batches        int    `json:"batches"`
	BatchesDone    int    `json:"batchesDone"`
	Files          int    `json:"files"`
	FilesDone      int    `json:"filesDone"`
	Reused         int    `json:"reused"`
	ContinuedAsNew int    `json:"continuedAsNew"`
}

// PublishOutput is a version's result.
type PublishOutput struct {
	AlreadyPublished bool                      `json:"alreadyPublished,omitempty"`
	Plan             activities.DownloadResult `json:"plan"`
	Processing       activities.BatchSummary   `json:"processing"`
	Result           *activities.PublishResult `json:"result,omitempty"`
}

// maxWarnings bounds the minify warnings a version keeps for its summary.
const maxWarnings = 10

// historyBudget is the event count after which a version continues as new;
// far below the 51,200-event limit, so a 100,000-file version never nears it.
const historyBudget = 10000

func pipelineOptions(ctx workflow.Context) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		TaskQueue:           PipelineQueue,
		StartToCloseTimeout: 30 * time.Minute,
		HeartbeatTimeout:    time.Minute,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute, MaximumAttempts: 8,
		},
	})
}

// PublishVersion downloads one version, fans its files out to batch children
// on the compress pool, waits for their completion signals, and publishes.
// Its workflow ID is PublishID(name, version).
func PublishVersion(ctx workflow.Context, in PublishInput) (_ *PublishOutput, err error) {
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
	progress := func() PublishProgress {
		p := PublishProgress{Stage: stage}
		if st != nil {
			p.Batches, p.BatchesDone, p.Files, p.FilesDone, p.Reused, p.ContinuedAsNew =
				st.Plan.Batches, st.DoneCount(), st.Plan.ToProcess, st.Totals.Files, st.Plan.Reused, st.Runs
		}
		return p
	}
	if err := workflow.SetQueryHandler(ctx, ProgressQuery, func() (PublishProgress, error) { return progress(), nil }); err != nil {
		return nil, err
	}
	setDetails := func() {
		p := progress()
		workflow.SetCurrentDetails(ctx, fmt.Sprintf("**%s@%s** — %s: %d/%d batches, %d/%d files processed, %d reused",
			name, version, p.Stage, p.BatchesDone, p.Batches, p.FilesDone, p.Files, p.Reused))
	}
	ctx = pipelineOptions(ctx)

	if st == nil {
		setDetails()
		var plan activities.DownloadResult
		if err := workflow.ExecuteActivity(ctx, a.Download, in.VersionRef).Get(ctx, &plan); err != nil {
			return nil, fmt.Errorf("%s@%s: download: %w", name, version, err)
		}
		if plan.AlreadyPublished {
			stage = "already published"
			setDetails()
			return &PublishOutput{AlreadyPublished: true}, nil
		}
		st = &PublishState{Plan: plan, Done: make([]uint64, (plan.Batches+63)/64)}
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
	var res activities.PublishResult
	if err := workflow.ExecuteActivity(ctx, a.Commit, activities.FinishInput{Name: name, Version: version}).Get(ctx, &res); err != nil {
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
		if err := workflow.ExecuteActivity(mctx, a.Materialize, activities.FinishInput{Name: name, Version: version}).Get(ctx, nil); err != nil {
			return nil, fmt.Errorf("%s@%s: materialize reused files: %w", name, version, err)
		}
	}
	stage = "published"
	setDetails()
	workflow.GetLogger(ctx).Info("published", "package", name, "version", version, "files", res.Files,
		"reuseRate", res.ReuseRate, "latest", res.Latest)
	return &PublishOutput{Plan: st.Plan, Processing: st.Totals, Result: &res}, nil
}

// awaitBatches keeps at most MaxPendingBatches children running and counts
// their completion signals. It returns early, with the state consistent,
// when the history is due for continue-as-new.
func awaitBatches(ctx workflow.Context, in PublishInput, st *PublishState, setDetails func()) error {
	window := in.MaxPendingBatches
	if window <= 0 {
		window = 500
	}
	budget := in.HistoryBudget
	if budget <= 0 {
		budget = historyBudget
	}
	signals := workflow.GetSignalChannel(ctx, BatchDoneSignal)
	var failure error
	execution := workflow.GetInfo(ctx).FirstRunID
	record := func(d BatchDone) {
		if d.Batch < 0 || d.Batch >= st.Plan.Batches || st.isDone(d.Batch) || (d.Execution != "" && d.Execution != execution) {
			return // duplicate or foreign signal: the count must not drift
		}
		if d.Error != "" {
			failure = fmt.Errorf("%s@%s: batch %d: %s", in.Name, in.Version, d.Batch, d.Error)
			return
		}
		st.markDone(d.Batch)
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
		var d BatchDone
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
				if err := f.Get(ctx, nil); err != nil && !isAlreadyStarted(err) && !st.isDone(batch) && failure == nil {
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
			var d BatchDone
			for signals.ReceiveAsync(&d) {
				record(d)
			}
			return failure
		}
	}
	return nil
}

func startBatch(ctx workflow.Context, in PublishInput, plan activities.DownloadResult, batch int) workflow.ChildWorkflowFuture {
	cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{
		WorkflowID: BatchID(in.Name, in.Version, batch),
		TaskQueue:  PipelineQueue,
		// Children outlive a continue-as-new of their version and report by signal.
		ParentClosePolicy:     enums.PARENT_CLOSE_POLICY_ABANDON,
		WorkflowIDReusePolicy: enums.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		TypedSearchAttributes: temporal.NewSearchAttributes(PackageKey.ValueSet(in.Name), VersionKey.ValueSet(in.Version)),
		StaticSummary:         fmt.Sprintf("%s@%s batch %d of %d", in.Name, in.Version, batch+1, plan.Batches),
	})
	return workflow.ExecuteChildWorkflow(cctx, ProcessBatch, BatchRequest{
		Name: in.Name, Version: in.Version, Batch: batch, Options: plan.Options, Fingerprint: plan.Fingerprint,
		Execution: workflow.GetInfo(ctx).FirstRunID,
	})
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
func watchStalls(ctx workflow.Context, in PublishInput, st *PublishState, sel workflow.Selector, record func(BatchDone), failure *error) {
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
				if !st.isDone(b) {
					outstanding = append(outstanding, b)
				}
			}
			if len(outstanding) == 0 {
				return
			}
			var found []activities.FoundBatch
			err := workflow.ExecuteActivity(ctx, a.FindBatchResults, activities.BatchResultsInput{Name: in.Name, Version: in.Version, Batches: outstanding}).Get(ctx, &found)
			if err != nil {
				*failure = fmt.Errorf("%s@%s: look for stalled batches: %w", in.Name, in.Version, err)
				return
			}
			for _, f := range found {
				record(BatchDone{Batch: f.Batch, Summary: &activities.BatchSummary{Files: f.Files}})
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

// cancelOutstanding asks every batch started (in this run or an earlier
// one) that has not reported to stop: a failed version must not keep the
// compress pool busy. Children that already ended ignore the request.
func cancelOutstanding(ctx workflow.Context, in PublishInput, st *PublishState) {
	var pending []workflow.Future
	for b := 0; b < st.Started; b++ {
		if !st.isDone(b) {
			pending = append(pending, workflow.RequestCancelExternalWorkflow(ctx, BatchID(in.Name, in.Version, b), ""))
		}
	}
	for _, f := range pending {
		_ = f.Get(ctx, nil)
	}
}

// BatchRequest is a batch child's input; the parent is found from workflow info.
type BatchRequest = activities.BatchInput

// ProcessBatch runs one batch's CPU work on the compress pool and signals the
// version that started it, success or failure.
func ProcessBatch(ctx workflow.Context, in BatchRequest) (*activities.BatchSummary, error) {
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		TaskQueue: CompressQueue,
		// A batch holds at most a few MB, but one file can be 25 MiB and
		// brotli 11 runs at well under 1 MB/s per core.
		StartToCloseTimeout: time.Hour,
		HeartbeatTimeout:    time.Minute,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute, MaximumAttempts: 5,
		},
	})
	var summary activities.BatchSummary
	runErr := workflow.ExecuteActivity(actx, a.ProcessBatch, in).Get(ctx, &summary)
	done := BatchDone{Batch: in.Batch, Execution: in.Execution}
	if runErr != nil {
		done.Error = runErr.Error()
	} else {
		done.Summary = &summary
	}
	if parent := workflow.GetInfo(ctx).ParentWorkflowExecution; parent != nil {
		// Empty run ID: the signal reaches whichever run of the version is current.
		if err := workflow.SignalExternalWorkflow(ctx, parent.ID, "", BatchDoneSignal, done).Get(ctx, nil); err != nil {
			// Failing makes the version see this batch end unreported.
			return nil, fmt.Errorf("batch %d could not report to %s: %w", in.Batch, parent.ID, err)
		}
	}
	if runErr != nil {
		return nil, runErr
	}
	return &summary, nil
}
