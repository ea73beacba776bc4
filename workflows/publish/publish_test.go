package publish_test

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/edgeflow/edgeflow/workflows/publish"
	"github.com/edgeflow/edgeflow/workflows/publish/contract"
)

func TestPublishVersionHappyPath(t *testing.T) {
	env, f := newEnv(t)
	f.plan = threeBatchPlan()
	var children batchChildren
	children.mock(env)

	// Out of order on purpose: the version counts batches, not positions.
	signalAt(env, f, done(2, 3), 1*time.Minute)
	signalAt(env, f, done(0, 1), 2*time.Minute)
	var mid contract.PublishProgress
	env.RegisterDelayedCallback(func() { mid = progress(t, env) }, 150*time.Second)
	signalAt(env, f, done(1, 3), 3*time.Minute)

	env.ExecuteWorkflow(publish.PublishVersion, contract.PublishInput{VersionRef: demoRef})
	if !env.IsWorkflowCompleted() {
		t.Fatal("workflow did not complete")
	}
	if err := env.GetWorkflowError(); err != nil {
		t.Fatalf("workflow error: %v", err)
	}
	var out contract.PublishOutput
	if err := env.GetWorkflowResult(&out); err != nil {
		t.Fatal(err)
	}

	if len(f.downloads) != 1 || !reflect.DeepEqual(f.downloads[0], demoRef) {
		t.Errorf("downloads %+v", f.downloads)
	}
	if len(f.commits) != 1 || f.commits[0] != (contract.PackageVersion{Name: "demo", Version: "1.2.3"}) {
		t.Fatalf("commits %+v, want one for demo@1.2.3", f.commits)
	}
	if f.commitSeen[0] != 3 {
		t.Errorf("Commit ran after %d of 3 batches reported", f.commitSeen[0])
	}
	if len(f.materialized) != 0 {
		t.Errorf("Materialize ran for a version without reused files: %v", f.materialized)
	}
	if got := children.batches(); !reflect.DeepEqual(got, []int{0, 1, 2}) {
		t.Errorf("children started for batches %v, want [0 1 2]", got)
	}
	children.check(t)

	wantTotals := contract.BatchSummary{Files: 7, Twins: 3, MinifyFailed: 1, BytesIn: 700, BytesOut: 70, CPUMillis: 21,
		Warnings: []string{"warning of batch 2", "warning of batch 0", "warning of batch 1"}}
	if !reflect.DeepEqual(out.Processing, wantTotals) {
		t.Errorf("processing totals %+v, want %+v", out.Processing, wantTotals)
	}
	if !reflect.DeepEqual(out.Plan, f.plan) || out.AlreadyPublished {
		t.Errorf("output plan %+v (already published %v), want %+v", out.Plan, out.AlreadyPublished, f.plan)
	}
	if out.Result == nil || out.Result.Files != 42 || out.Result.Latest != "1.2.3" {
		t.Errorf("result %+v", out.Result)
	}

	wantMid := contract.PublishProgress{Stage: "processing", Batches: 3, BatchesDone: 2, Files: 7, FilesDone: 4, Reused: 2}
	if mid != wantMid {
		t.Errorf("progress after two batches %+v, want %+v", mid, wantMid)
	}
	wantEnd := contract.PublishProgress{Stage: "published", Batches: 3, BatchesDone: 3, Files: 7, FilesDone: 7, Reused: 2}
	if end := progress(t, env); end != wantEnd {
		t.Errorf("final progress %+v, want %+v", end, wantEnd)
	}
}

// Before the plan exists the query answers with the stage alone.
func TestPublishVersionProgressWhileDownloading(t *testing.T) {
	env, f := newEnv(t, func(f *fakes) { f.stageDelay = time.Minute })
	f.plan = contract.PlanSummary{Batches: 1, ToProcess: 1}
	var children batchChildren
	children.mock(env)
	var during contract.PublishProgress
	env.RegisterDelayedCallback(func() { during = progress(t, env) }, 30*time.Second)
	signalAt(env, f, done(0, 1), 2*time.Minute)
	env.ExecuteWorkflow(publish.PublishVersion, contract.PublishInput{VersionRef: demoRef})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	if during != (contract.PublishProgress{Stage: "downloading"}) {
		t.Errorf("progress while downloading %+v", during)
	}
}

func TestPublishVersionIgnoresDuplicateAndForeignSignals(t *testing.T) {
	env, f := newEnv(t)
	f.plan = threeBatchPlan()
	var children batchChildren
	children.mock(env)

	signals := []contract.BatchDone{
		done(0, 1),
		done(0, 100), // duplicate
		{Batch: 0, Error: "a late failure of a batch already counted"},
		done(99, 1000), // beyond the plan
		done(3, 1000),  // just beyond the plan
		done(-1, 1000), // negative
		{Batch: 42, Error: "foreign failure"},
		done(1, 2),
		done(2, 4),
	}
	var afterDuplicates contract.PublishProgress
	for i, s := range signals {
		signalAt(env, f, s, time.Duration(i+1)*time.Minute)
	}
	env.RegisterDelayedCallback(func() { afterDuplicates = progress(t, env) }, 7*time.Minute+time.Second)

	env.ExecuteWorkflow(publish.PublishVersion, contract.PublishInput{VersionRef: demoRef})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatalf("workflow error: %v", err)
	}
	var out contract.PublishOutput
	if err := env.GetWorkflowResult(&out); err != nil {
		t.Fatal(err)
	}
	if out.Processing.Files != 7 || out.Processing.BytesIn != 700 || out.Processing.Twins != 3 {
		t.Errorf("totals %+v, want exactly batches 0, 1 and 2 (7 files)", out.Processing)
	}
	if len(out.Processing.Warnings) != 3 {
		t.Errorf("warnings %v", out.Processing.Warnings)
	}
	if afterDuplicates.BatchesDone != 1 || afterDuplicates.FilesDone != 1 {
		t.Errorf("after duplicates and foreign signals: %+v, want 1 batch, 1 file", afterDuplicates)
	}
	if len(f.commits) != 1 || f.commitSeen[0] != len(signals) {
		t.Errorf("commits %v after %v signals", f.commits, f.commitSeen)
	}
}

func TestPublishVersionBatchFailure(t *testing.T) {
	env, f := newEnv(t)
	f.plan = threeBatchPlan()
	var children batchChildren
	children.mock(env)
	signalAt(env, f, done(0, 1), time.Minute)
	signalAt(env, f, contract.BatchDone{Batch: 1, Error: "brotli: out of memory"}, 2*time.Minute)
	signalAt(env, f, done(2, 1), 3*time.Minute)

	env.ExecuteWorkflow(publish.PublishVersion, contract.PublishInput{VersionRef: demoRef})
	err := env.GetWorkflowError()
	if err == nil {
		t.Fatal("workflow succeeded though batch 1 failed")
	}
	for _, want := range []string{"demo@1.2.3", "batch 1", "brotli: out of memory"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	if len(f.commits) != 0 {
		t.Errorf("Commit called %d times after a failed batch", len(f.commits))
	}
	// Batches that had not reported are asked to stop; the finished one is not.
	sort.Strings(f.cancelled)
	if want := []string{contract.ProcessBatchWorkflowID("demo", "1.2.3", 1), contract.ProcessBatchWorkflowID("demo", "1.2.3", 2)}; !slices.Equal(f.cancelled, want) {
		t.Errorf("cancelled %v, want %v", f.cancelled, want)
	}
}

func TestPublishVersionAlreadyPublished(t *testing.T) {
	env, f := newEnv(t)
	f.plan = contract.PlanSummary{AlreadyPublished: true}
	var children batchChildren
	children.mock(env)
	env.ExecuteWorkflow(publish.PublishVersion, contract.PublishInput{VersionRef: demoRef})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	var out contract.PublishOutput
	if err := env.GetWorkflowResult(&out); err != nil {
		t.Fatal(err)
	}
	if !out.AlreadyPublished || out.Result != nil {
		t.Errorf("output %+v, want already published", out)
	}
	if n := children.count(); n != 0 {
		t.Errorf("%d batch children started", n)
	}
	if len(f.commits) != 0 {
		t.Errorf("Commit called")
	}
	if p := progress(t, env); p.Stage != "already published" {
		t.Errorf("stage %q", p.Stage)
	}
}

// A version whose every file is reused has no batch to wait for.
func TestPublishVersionNothingToProcess(t *testing.T) {
	env, f := newEnv(t)
	f.plan = contract.PlanSummary{Batches: 0, SourceFiles: 4, Reused: 4}
	f.commitCopies = 8
	var children batchChildren
	children.mock(env)
	env.ExecuteWorkflow(publish.PublishVersion, contract.PublishInput{VersionRef: demoRef})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	var out contract.PublishOutput
	if err := env.GetWorkflowResult(&out); err != nil || out.Result == nil {
		t.Fatalf("output %+v %v", out, err)
	}
	if n := children.count(); n != 0 {
		t.Errorf("%d batch children started", n)
	}
	if len(f.commits) != 1 || len(f.materialized) != 1 {
		t.Errorf("commits %v, materialized %v", f.commits, f.materialized)
	}
	if out.Processing.Files != 0 || out.Plan.Reused != 4 {
		t.Errorf("output %+v", out)
	}
}

func TestPublishVersionActivityErrors(t *testing.T) {
	tests := []struct {
		name     string
		download error
		commit   error
		want     []string
	}{
		{"download", temporal.NewNonRetryableApplicationError("no files selected", contract.ErrNoFiles, nil), nil,
			[]string{"demo@1.2.3", "download", "no files selected"}},
		{"commit", nil, temporal.NewNonRetryableApplicationError("two files publish to a.js", contract.ErrFileMapConflict, nil),
			[]string{"demo@1.2.3", "publish", "two files publish to a.js"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env, f := newEnv(t)
			f.plan = contract.PlanSummary{Batches: 1, ToProcess: 1}
			f.downloadErr, f.commitErr = tt.download, tt.commit
			var children batchChildren
			children.mock(env)
			signalAt(env, f, done(0, 1), time.Minute)
			env.ExecuteWorkflow(publish.PublishVersion, contract.PublishInput{VersionRef: demoRef})
			err := env.GetWorkflowError()
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
			var appErr *temporal.ApplicationError
			if !errors.As(err, &appErr) {
				t.Errorf("error %T is not an application error", err)
			}
		})
	}
}

// Reused files are copied to the version's own keys after the commit.
func TestPublishVersionMaterializes(t *testing.T) {
	tests := []struct {
		name    string
		copies  int
		err     error
		calls   int
		wantErr []string
	}{
		{"no reused files", 0, nil, 0, nil},
		{"reused files", 6, nil, 1, nil},
		{"copy fails", 6, temporal.NewNonRetryableApplicationError("bucket gone", "Gone", nil), 1,
			[]string{"demo@1.2.3", "materialize reused files", "bucket gone"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env, f := newEnv(t)
			f.plan = contract.PlanSummary{Batches: 1, ToProcess: 1, Reused: 3}
			f.commitCopies, f.materializeErr = tt.copies, tt.err
			var children batchChildren
			children.mock(env)
			signalAt(env, f, done(0, 1), time.Minute)
			env.ExecuteWorkflow(publish.PublishVersion, contract.PublishInput{VersionRef: demoRef})
			err := env.GetWorkflowError()
			if len(f.materialized) != tt.calls {
				t.Errorf("Materialize ran %d times, want %d", len(f.materialized), tt.calls)
			}
			for _, in := range f.materialized {
				if in != (contract.PackageVersion{Name: "demo", Version: "1.2.3"}) {
					t.Errorf("Materialize input %+v", in)
				}
			}
			if len(f.commits) != 1 {
				t.Errorf("Commit ran %d times", len(f.commits))
			}
			if tt.wantErr == nil {
				if err != nil {
					t.Fatal(err)
				}
				var out contract.PublishOutput
				if err := env.GetWorkflowResult(&out); err != nil || out.Result == nil || out.Result.Copies != tt.copies {
					t.Errorf("output %+v %v", out, err)
				}
				if p := progress(t, env); p.Stage != "published" {
					t.Errorf("stage %q", p.Stage)
				}
				return
			}
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tt.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

// The window bounds children in flight: a new batch starts only when one reports.
func TestPublishVersionSlidingWindow(t *testing.T) {
	for _, order := range [][]int{{0, 1, 2, 3, 4}, {1, 0, 3, 4, 2}, {1, 2, 0, 3, 4}} {
		t.Run(fmt.Sprint(order), func(t *testing.T) {
			env, f := newEnv(t)
			f.plan = contract.PlanSummary{Batches: 5, ToProcess: 5}
			var children batchChildren
			children.mock(env)
			const window = 2
			for k, b := range order {
				env.RegisterDelayedCallback(func() {
					// Before the k-th report: k done, so k+window started (at most 5).
					// and they are the first batches by index, whatever the order of reports.
					got := children.batches()
					var want []int
					for i := 0; i < min(k+window, 5); i++ {
						want = append(want, i)
					}
					if !reflect.DeepEqual(got, want) {
						t.Errorf("before report %d: children %v started, want %v", k, got, want)
					}
					if b >= len(got) {
						t.Fatalf("bad test: batch %d reports before it was started (%v)", b, got)
					}
					f.sent()
					env.SignalWorkflow(contract.BatchDoneSignal, done(b, 1))
				}, time.Duration(k+1)*time.Minute)
			}
			env.ExecuteWorkflow(publish.PublishVersion, contract.PublishInput{VersionRef: demoRef, MaxPendingBatches: window})
			if err := env.GetWorkflowError(); err != nil {
				t.Fatal(err)
			}
			children.check(t)
			if got := children.batches(); !reflect.DeepEqual(got, []int{0, 1, 2, 3, 4}) {
				t.Errorf("started %v", got)
			}
			if len(f.commits) != 1 || f.commitSeen[0] != 5 {
				t.Errorf("commits %v seen %v", f.commits, f.commitSeen)
			}
		})
	}
}

// Without MaxPendingBatches a version keeps two batches on the compress pool
// at a time, however many it has: a 1,000-file release (40 batches) never
// fills the pool, so a small release that comes meanwhile finds a free slot
// instead of queueing behind all of its batches (issue #37).
func TestPublishVersionDefaultWindow(t *testing.T) {
	env, f := newEnv(t)
	const batches, window = 40, 2
	f.plan = contract.PlanSummary{Batches: batches, ToProcess: batches}
	var children batchChildren
	children.mock(env)
	for k := range batches {
		env.RegisterDelayedCallback(func() {
			// Before the k-th report: k done, so k+window started.
			if n, want := children.count(), min(k+window, batches); n != want {
				t.Errorf("before report %d: %d children started, want %d", k, n, want)
			}
			f.sent()
			env.SignalWorkflow(contract.BatchDoneSignal, done(k, 1))
		}, time.Duration(k+1)*time.Minute)
	}
	env.ExecuteWorkflow(publish.PublishVersion, contract.PublishInput{VersionRef: demoRef})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	if n := children.count(); n != batches || len(f.commits) != 1 || f.commitSeen[0] != batches {
		t.Errorf("%d children, commits %v after %v reports; want %d children, one commit after all", n, f.commits, f.commitSeen, batches)
	}
}

// A version the fileMap selects nothing from is skipped with its reason, as
// cdnjs does: no batch, no commit, and not a failure.
func TestPublishVersionSkipsWhatTheFileMapDoesNotSelect(t *testing.T) {
	env, f := newEnv(t)
	f.plan = contract.PlanSummary{SkipReason: "the fileMap selects none of the 12 files of demo@2.0.0-alpha.1"}
	var children batchChildren
	children.mock(env)
	env.ExecuteWorkflow(publish.PublishVersion, contract.PublishInput{VersionRef: demoRef})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatalf("a skipped version failed: %v", err)
	}
	var out contract.PublishOutput
	if err := env.GetWorkflowResult(&out); err != nil {
		t.Fatal(err)
	}
	if out.SkipReason != f.plan.SkipReason || out.Result != nil {
		t.Errorf("output %+v, want skipped with the reason", out)
	}
	if children.count() != 0 || len(f.commits) != 0 {
		t.Errorf("%d batch children, %d commits for a skipped version", children.count(), len(f.commits))
	}
}

// A version listed but whose commit stopped part way is finished, not
// skipped as already published: Commit (which redoes the steps after the
// commit point) and Materialize run again.
func TestPublishVersionRepairsAnIncompleteCommit(t *testing.T) {
	env, f := newEnv(t)
	f.plan = contract.PlanSummary{AlreadyPublished: true, Repair: true}
	f.commitCopies = 3
	var children batchChildren
	children.mock(env)
	env.ExecuteWorkflow(publish.PublishVersion, contract.PublishInput{VersionRef: demoRef})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	var out contract.PublishOutput
	if err := env.GetWorkflowResult(&out); err != nil {
		t.Fatal(err)
	}
	if out.AlreadyPublished || out.Result == nil || len(f.commits) != 1 || len(f.materialized) != 1 || children.count() != 0 {
		t.Errorf("output %+v, commits %v, materialized %v, %d batches; want a repair", out, f.commits, f.materialized, children.count())
	}
}
