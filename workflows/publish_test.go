package workflows_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/edgeflow/edgeflow/activities"
	"github.com/edgeflow/edgeflow/internal/process"
	"github.com/edgeflow/edgeflow/workflows"
)

// fakes stands in for the activities: registered by name, as the workers do.
// Activities run on goroutines of their own, so every field is behind mu.
type fakes struct {
	mu sync.Mutex

	plan        activities.DownloadResult
	downloadErr error
	downloads   []activities.VersionRef

	commitErr    error
	commitCopies int // PublishResult.Copies
	commits      []activities.FinishInput

	materializeErr error
	materialized   []activities.FinishInput

	cancelled []string // workflow IDs the version asked to cancel
	// signalsSent counts BatchDone signals a test delivered; commitSeen is its
	// value when Commit ran.
	signalsSent int
	commitSeen  []int

	processErr func(in activities.BatchInput) error
	processed  []activities.BatchInput

	catalog  []string
	listed   int
	checks   map[string]activities.PackageCheck
	checkErr error
	checked  [][]activities.PackageRef
}

func (f *fakes) register(env *testsuite.TestWorkflowEnvironment) {
	env.RegisterActivityWithOptions(func(ctx context.Context, in activities.VersionRef) (*activities.DownloadResult, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.downloads = append(f.downloads, in)
		if f.downloadErr != nil {
			return nil, f.downloadErr
		}
		plan := f.plan
		return &plan, nil
	}, activity.RegisterOptions{Name: "Download"})
	env.RegisterActivityWithOptions(func(ctx context.Context, in activities.FinishInput) (*activities.PublishResult, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.commits = append(f.commits, in)
		f.commitSeen = append(f.commitSeen, f.signalsSent)
		if f.commitErr != nil {
			return nil, f.commitErr
		}
		return &activities.PublishResult{Files: 42, SourceFiles: 21, Latest: in.Version, Copies: f.commitCopies}, nil
	}, activity.RegisterOptions{Name: "Commit"})
	env.RegisterActivityWithOptions(func(ctx context.Context, in activities.FinishInput) (int, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.materialized = append(f.materialized, in)
		if len(f.commits) == 0 {
			return 0, errors.New("Materialize ran before Commit")
		}
		if f.materializeErr != nil {
			return 0, f.materializeErr
		}
		return f.commitCopies, nil
	}, activity.RegisterOptions{Name: "Materialize"})
	env.RegisterActivityWithOptions(func(ctx context.Context, in activities.BatchInput) (*activities.BatchSummary, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.processed = append(f.processed, in)
		if f.processErr != nil {
			if err := f.processErr(in); err != nil {
				return nil, err
			}
		}
		return &activities.BatchSummary{Files: in.Batch + 1, BytesIn: 100, BytesOut: 10}, nil
	}, activity.RegisterOptions{Name: "ProcessBatch"})
	env.RegisterActivityWithOptions(func(ctx context.Context) ([]string, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.listed++
		return append([]string(nil), f.catalog...), nil
	}, activity.RegisterOptions{Name: "ListCatalog"})
	env.RegisterActivityWithOptions(func(ctx context.Context, refs []activities.PackageRef) ([]activities.PackageCheck, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.checked = append(f.checked, refs)
		if f.checkErr != nil {
			return nil, f.checkErr
		}
		out := make([]activities.PackageCheck, len(refs))
		for i, r := range refs {
			c, ok := f.checks[r.Name]
			if !ok {
				c = activities.PackageCheck{Name: r.Name}
			}
			out[i] = c
		}
		return out, nil
	}, activity.RegisterOptions{Name: "CheckPackages"})
}

func (f *fakes) sent() {
	f.mu.Lock()
	f.signalsSent++
	f.mu.Unlock()
}

// batchChildren mocks the ProcessBatch children: they complete at once and do
// not signal; the test delivers BatchDone itself. It records every child
// started. Children run on goroutines of their own, so the order of the
// records is not the order of the starts.
type batchChildren struct {
	mu      sync.Mutex
	started []int
	bad     []string // children whose ID, parent or queue is wrong
}

func (b *batchChildren) mock(env *testsuite.TestWorkflowEnvironment) {
	env.OnWorkflow(workflows.ProcessBatch, mock.Anything, mock.Anything).Return(
		func(ctx workflow.Context, in workflows.BatchRequest) (*activities.BatchSummary, error) {
			info := workflow.GetInfo(ctx)
			b.mu.Lock()
			defer b.mu.Unlock()
			b.started = append(b.started, in.Batch)
			if want := workflows.BatchID(in.Name, in.Version, in.Batch); info.WorkflowExecution.ID != want {
				b.bad = append(b.bad, fmt.Sprintf("batch %d: ID %q, want %q", in.Batch, info.WorkflowExecution.ID, want))
			}
			if p := info.ParentWorkflowExecution; p == nil || p.ID != workflows.PublishID(in.Name, in.Version) {
				b.bad = append(b.bad, fmt.Sprintf("batch %d: parent %+v", in.Batch, p))
			}
			if info.TaskQueueName != workflows.PipelineQueue {
				b.bad = append(b.bad, fmt.Sprintf("batch %d: task queue %q", in.Batch, info.TaskQueueName))
			}
			return &activities.BatchSummary{}, nil
		})
}

func (b *batchChildren) count() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.started)
}

// batches returns the batches started, sorted.
func (b *batchChildren) batches() []int {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := append([]int(nil), b.started...)
	sort.Ints(out)
	return out
}

func (b *batchChildren) check(t *testing.T) {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, m := range b.bad {
		t.Error(m)
	}
}

var demoRef = activities.VersionRef{PackageRef: activities.PackageRef{Name: "demo"}, Version: "1.2.3"}

func newEnv(t *testing.T) (*testsuite.TestWorkflowEnvironment, *fakes) {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	s.SetLogger(log.NewStructuredLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))))
	env := s.NewTestWorkflowEnvironment()
	env.SetTestTimeout(30 * time.Second)
	env.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: workflows.PublishID(demoRef.Name, demoRef.Version), TaskQueue: workflows.PipelineQueue})
	env.RegisterWorkflow(workflows.PublishVersion)
	env.RegisterWorkflow(workflows.ProcessBatch)
	env.RegisterWorkflow(workflows.PackageUpdates)
	f := &fakes{}
	f.register(env)
	env.OnRequestCancelExternalWorkflow(mock.Anything, mock.Anything, mock.Anything).Return(nil).Run(func(args mock.Arguments) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.cancelled = append(f.cancelled, args.String(1))
	})
	return env, f
}

// signalAt delivers BatchDone d after delay (workflow time).
func signalAt(env *testsuite.TestWorkflowEnvironment, f *fakes, d workflows.BatchDone, delay time.Duration) {
	env.RegisterDelayedCallback(func() {
		f.sent()
		env.SignalWorkflow(workflows.BatchDoneSignal, d)
	}, delay)
}

func done(batch, files int) workflows.BatchDone {
	return workflows.BatchDone{Batch: batch, Summary: &activities.BatchSummary{
		Files: files, Twins: 1, MinifyFailed: batch % 2, BytesIn: int64(100 * files), BytesOut: int64(10 * files), CPUMillis: 7,
		Warnings: []string{fmt.Sprintf("warning of batch %d", batch)},
	}}
}

func progress(t *testing.T, env *testsuite.TestWorkflowEnvironment) workflows.PublishProgress {
	t.Helper()
	v, err := env.QueryWorkflow(workflows.ProgressQuery)
	if err != nil {
		t.Fatalf("progress query: %v", err)
	}
	var p workflows.PublishProgress
	if err := v.Get(&p); err != nil {
		t.Fatal(err)
	}
	return p
}

func threeBatchPlan() activities.DownloadResult {
	return activities.DownloadResult{Batches: 3, SourceFiles: 9, ToProcess: 7, Reused: 2, Bytes: 12345,
		Options: process.Options{MinifyJS: true, MinifyCSS: true}}
}

func TestPublishVersionHappyPath(t *testing.T) {
	env, f := newEnv(t)
	f.plan = threeBatchPlan()
	var children batchChildren
	children.mock(env)

	// Out of order on purpose: the version counts batches, not positions.
	signalAt(env, f, done(2, 3), 1*time.Minute)
	signalAt(env, f, done(0, 1), 2*time.Minute)
	var mid workflows.PublishProgress
	env.RegisterDelayedCallback(func() { mid = progress(t, env) }, 150*time.Second)
	signalAt(env, f, done(1, 3), 3*time.Minute)

	env.ExecuteWorkflow(workflows.PublishVersion, workflows.PublishInput{VersionRef: demoRef})
	if !env.IsWorkflowCompleted() {
		t.Fatal("workflow did not complete")
	}
	if err := env.GetWorkflowError(); err != nil {
		t.Fatalf("workflow error: %v", err)
	}
	var out workflows.PublishOutput
	if err := env.GetWorkflowResult(&out); err != nil {
		t.Fatal(err)
	}

	if len(f.downloads) != 1 || !reflect.DeepEqual(f.downloads[0], demoRef) {
		t.Errorf("downloads %+v", f.downloads)
	}
	if len(f.commits) != 1 || f.commits[0] != (activities.FinishInput{Name: "demo", Version: "1.2.3"}) {
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

	wantTotals := activities.BatchSummary{Files: 7, Twins: 3, MinifyFailed: 1, BytesIn: 700, BytesOut: 70, CPUMillis: 21,
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

	wantMid := workflows.PublishProgress{Stage: "processing", Batches: 3, BatchesDone: 2, Files: 7, FilesDone: 4, Reused: 2}
	if mid != wantMid {
		t.Errorf("progress after two batches %+v, want %+v", mid, wantMid)
	}
	wantEnd := workflows.PublishProgress{Stage: "published", Batches: 3, BatchesDone: 3, Files: 7, FilesDone: 7, Reused: 2}
	if end := progress(t, env); end != wantEnd {
		t.Errorf("final progress %+v, want %+v", end, wantEnd)
	}
}

// Before the plan exists the query answers with the stage alone.
func TestPublishVersionProgressWhileDownloading(t *testing.T) {
	env, f := newEnv(t)
	f.plan = activities.DownloadResult{Batches: 1, ToProcess: 1}
	var children batchChildren
	children.mock(env)
	var during workflows.PublishProgress
	env.OnActivity("Download", mock.Anything, mock.Anything).After(time.Minute).Return(&f.plan, nil)
	env.RegisterDelayedCallback(func() { during = progress(t, env) }, 30*time.Second)
	signalAt(env, f, done(0, 1), 2*time.Minute)
	env.ExecuteWorkflow(workflows.PublishVersion, workflows.PublishInput{VersionRef: demoRef})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	if during != (workflows.PublishProgress{Stage: "downloading"}) {
		t.Errorf("progress while downloading %+v", during)
	}
}

func TestPublishVersionIgnoresDuplicateAndForeignSignals(t *testing.T) {
	env, f := newEnv(t)
	f.plan = threeBatchPlan()
	var children batchChildren
	children.mock(env)

	signals := []workflows.BatchDone{
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
	var afterDuplicates workflows.PublishProgress
	for i, s := range signals {
		signalAt(env, f, s, time.Duration(i+1)*time.Minute)
	}
	env.RegisterDelayedCallback(func() { afterDuplicates = progress(t, env) }, 7*time.Minute+time.Second)

	env.ExecuteWorkflow(workflows.PublishVersion, workflows.PublishInput{VersionRef: demoRef})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatalf("workflow error: %v", err)
	}
	var out workflows.PublishOutput
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
	signalAt(env, f, workflows.BatchDone{Batch: 1, Error: "brotli: out of memory"}, 2*time.Minute)
	signalAt(env, f, done(2, 1), 3*time.Minute)

	env.ExecuteWorkflow(workflows.PublishVersion, workflows.PublishInput{VersionRef: demoRef})
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
	if want := []string{workflows.BatchID("demo", "1.2.3", 1), workflows.BatchID("demo", "1.2.3", 2)}; !slices.Equal(f.cancelled, want) {
		t.Errorf("cancelled %v, want %v", f.cancelled, want)
	}
}

func TestPublishVersionAlreadyPublished(t *testing.T) {
	env, f := newEnv(t)
	f.plan = activities.DownloadResult{AlreadyPublished: true}
	var children batchChildren
	children.mock(env)
	env.ExecuteWorkflow(workflows.PublishVersion, workflows.PublishInput{VersionRef: demoRef})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	var out workflows.PublishOutput
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
	f.plan = activities.DownloadResult{Batches: 0, SourceFiles: 4, Reused: 4}
	f.commitCopies = 8
	var children batchChildren
	children.mock(env)
	env.ExecuteWorkflow(workflows.PublishVersion, workflows.PublishInput{VersionRef: demoRef})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	var out workflows.PublishOutput
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
		{"download", temporal.NewNonRetryableApplicationError("no files selected", activities.ErrNoFiles, nil), nil,
			[]string{"demo@1.2.3", "download", "no files selected"}},
		{"commit", nil, temporal.NewNonRetryableApplicationError("two files publish to a.js", activities.ErrFileMapConflict, nil),
			[]string{"demo@1.2.3", "publish", "two files publish to a.js"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env, f := newEnv(t)
			f.plan = activities.DownloadResult{Batches: 1, ToProcess: 1}
			f.downloadErr, f.commitErr = tt.download, tt.commit
			var children batchChildren
			children.mock(env)
			signalAt(env, f, done(0, 1), time.Minute)
			env.ExecuteWorkflow(workflows.PublishVersion, workflows.PublishInput{VersionRef: demoRef})
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
			f.plan = activities.DownloadResult{Batches: 1, ToProcess: 1, Reused: 3}
			f.commitCopies, f.materializeErr = tt.copies, tt.err
			var children batchChildren
			children.mock(env)
			signalAt(env, f, done(0, 1), time.Minute)
			env.ExecuteWorkflow(workflows.PublishVersion, workflows.PublishInput{VersionRef: demoRef})
			err := env.GetWorkflowError()
			if len(f.materialized) != tt.calls {
				t.Errorf("Materialize ran %d times, want %d", len(f.materialized), tt.calls)
			}
			for _, in := range f.materialized {
				if in != (activities.FinishInput{Name: "demo", Version: "1.2.3"}) {
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
				var out workflows.PublishOutput
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
			f.plan = activities.DownloadResult{Batches: 5, ToProcess: 5}
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
					env.SignalWorkflow(workflows.BatchDoneSignal, done(b, 1))
				}, time.Duration(k+1)*time.Minute)
			}
			env.ExecuteWorkflow(workflows.PublishVersion, workflows.PublishInput{VersionRef: demoRef, MaxPendingBatches: window})
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

// Without MaxPendingBatches every batch of a small plan starts at once.
func TestPublishVersionDefaultWindow(t *testing.T) {
	env, f := newEnv(t)
	f.plan = activities.DownloadResult{Batches: 20, ToProcess: 20}
	var children batchChildren
	children.mock(env)
	env.RegisterDelayedCallback(func() {
		if n := children.count(); n != 20 {
			t.Errorf("%d of 20 children started before any report", n)
		}
	}, 30*time.Second)
	for b := 0; b < 20; b++ {
		signalAt(env, f, done(b, 1), time.Minute)
	}
	env.ExecuteWorkflow(workflows.PublishVersion, workflows.PublishInput{VersionRef: demoRef})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
}

func continueAsNewInput(t *testing.T, err error) workflows.PublishInput {
	t.Helper()
	var can *workflow.ContinueAsNewError
	if !errors.As(err, &can) {
		t.Fatalf("workflow ended with %v (%T), want continue-as-new", err, err)
	}
	if can.WorkflowType == nil || can.WorkflowType.Name != "PublishVersion" {
		t.Errorf("continues as %+v", can.WorkflowType)
	}
	var next workflows.PublishInput
	if err := converter.GetDefaultDataConverter().FromPayloads(can.Input, &next); err != nil {
		t.Fatal(err)
	}
	return next
}

func TestPublishVersionContinuesAsNew(t *testing.T) {
	env, f := newEnv(t)
	f.plan = activities.DownloadResult{Batches: 6, ToProcess: 6, Reused: 1}
	var children batchChildren
	children.mock(env)
	// Window 3: batches 0-2 start; batch 0 reports and 3 starts; then the
	// history goes over budget while batches 1 and 2 report in one task.
	signalAt(env, f, done(0, 1), time.Minute)
	env.RegisterDelayedCallback(func() {
		env.SetCurrentHistoryLength(11)
		env.SignalWorkflowSkippingWorkflowTask(workflows.BatchDoneSignal, done(1, 2))
		env.SignalWorkflow(workflows.BatchDoneSignal, done(2, 4))
	}, 2*time.Minute)
	in := workflows.PublishInput{VersionRef: demoRef, MaxPendingBatches: 3, HistoryBudget: 10}
	env.ExecuteWorkflow(workflows.PublishVersion, in)

	next := continueAsNewInput(t, env.GetWorkflowError())
	st := next.Resume
	if st == nil {
		t.Fatal("next run has no Resume state")
	}
	if next.VersionRef.Name != "demo" || next.Version != "1.2.3" || next.MaxPendingBatches != 3 || next.HistoryBudget != 10 {
		t.Errorf("next input lost its settings: %+v", next)
	}
	if !reflect.DeepEqual(st.Plan, f.plan) {
		t.Errorf("resume plan %+v", st.Plan)
	}
	if !reflect.DeepEqual(st.Done, []uint64{0b111}) || st.DoneCount() != 3 {
		t.Errorf("done bitset %b, want batches 0-2", st.Done)
	}
	if st.Started != 4 {
		t.Errorf("Started = %d, want 4 (batch 3 in flight)", st.Started)
	}
	if got := children.batches(); !reflect.DeepEqual(got, []int{0, 1, 2, 3}) {
		t.Errorf("children started %v, want [0 1 2 3]", got)
	}
	if st.Totals.Files != 7 || st.Totals.BytesIn != 700 || len(st.Totals.Warnings) != 3 {
		t.Errorf("totals %+v", st.Totals)
	}
	if st.Runs != 1 {
		t.Errorf("Runs = %d", st.Runs)
	}
	if len(f.commits) != 0 {
		t.Error("Commit called by a run that continued as new")
	}
}

// A run already over its budget when it begins still starts its window's
// children and waits until every one of them has started before continuing
// as new, so their signals reach the next run.
func TestPublishVersionContinuesAsNewAfterStartsComplete(t *testing.T) {
	env, f := newEnv(t)
	f.plan = activities.DownloadResult{Batches: 10, ToProcess: 10}
	var children batchChildren
	children.mock(env)
	env.SetCurrentHistoryLength(1000)
	env.ExecuteWorkflow(workflows.PublishVersion, workflows.PublishInput{VersionRef: demoRef, MaxPendingBatches: 4, HistoryBudget: 10})
	next := continueAsNewInput(t, env.GetWorkflowError())
	if next.Resume == nil || next.Resume.Started != 4 || next.Resume.DoneCount() != 0 || len(next.Resume.Done) != 1 {
		t.Fatalf("resume %+v", next.Resume)
	}
	if n := children.count(); n != 4 {
		t.Errorf("%d children started, want 4", n)
	}
}

func TestPublishVersionResumes(t *testing.T) {
	env, f := newEnv(t)
	plan := activities.DownloadResult{Batches: 5, ToProcess: 15, Reused: 3}
	var children batchChildren
	children.mock(env)
	// Batches 0 and 1 reported to an earlier run, which had started batch 2.
	resume := &workflows.PublishState{Plan: plan, Started: 3, Done: []uint64{0b11},
		Totals: activities.BatchSummary{Files: 5, BytesIn: 500}, Runs: 1}
	var mid workflows.PublishProgress
	env.RegisterDelayedCallback(func() { mid = progress(t, env) }, 30*time.Second)
	signalAt(env, f, done(1, 100), time.Minute) // a late duplicate from the first run
	signalAt(env, f, done(3, 3), 2*time.Minute)
	signalAt(env, f, done(2, 3), 3*time.Minute)
	signalAt(env, f, done(4, 4), 4*time.Minute)
	env.ExecuteWorkflow(workflows.PublishVersion, workflows.PublishInput{VersionRef: demoRef, MaxPendingBatches: 2, Resume: resume})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	var out workflows.PublishOutput
	if err := env.GetWorkflowResult(&out); err != nil {
		t.Fatal(err)
	}
	if len(f.downloads) != 0 {
		t.Errorf("a resumed run downloaded again")
	}
	if got := children.batches(); !reflect.DeepEqual(got, []int{3, 4}) {
		t.Errorf("resumed run started children %v, want [3 4]", got)
	}
	if len(f.commits) != 1 || f.commitSeen[0] != 4 {
		t.Errorf("commits %v seen %v", f.commits, f.commitSeen)
	}
	if out.Processing.Files != 15 || out.Processing.BytesIn != 500+1000 {
		t.Errorf("totals %+v, want 15 files", out.Processing)
	}
	if !reflect.DeepEqual(out.Plan, plan) {
		t.Errorf("plan %+v", out.Plan)
	}
	want := workflows.PublishProgress{Stage: "processing", Batches: 5, BatchesDone: 2, Files: 15, FilesDone: 5, Reused: 3, ContinuedAsNew: 1}
	if mid != want {
		t.Errorf("progress of the resumed run %+v, want %+v", mid, want)
	}
}

// The real ProcessBatch children run their activity on the compress queue
// and signal the version themselves.
func TestPublishVersionWithRealBatchChildren(t *testing.T) {
	env, f := newEnv(t)
	f.plan = activities.DownloadResult{Batches: 4, ToProcess: 10, Options: process.Options{MinifyJS: true}}
	var queues sync.Map
	env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, _ converter.EncodedValues) {
		queues.Store(info.ActivityType.Name, info.TaskQueue)
	})
	env.ExecuteWorkflow(workflows.PublishVersion, workflows.PublishInput{VersionRef: demoRef, MaxPendingBatches: 2})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	var out workflows.PublishOutput
	if err := env.GetWorkflowResult(&out); err != nil {
		t.Fatal(err)
	}
	if out.Processing.Files != 1+2+3+4 || out.Result == nil {
		t.Errorf("output %+v", out)
	}
	if len(f.processed) != 4 {
		t.Fatalf("processed %+v", f.processed)
	}
	seen := map[int]bool{}
	for _, in := range f.processed {
		seen[in.Batch] = true
		if in.Name != "demo" || in.Version != "1.2.3" || !in.Options.MinifyJS {
			t.Errorf("batch input %+v", in)
		}
	}
	if len(seen) != 4 {
		t.Errorf("batches processed %v", seen)
	}
	if q, _ := queues.Load("ProcessBatch"); q != workflows.CompressQueue {
		t.Errorf("ProcessBatch ran on %v, want %s", q, workflows.CompressQueue)
	}
	if q, _ := queues.Load("Commit"); q != workflows.PipelineQueue {
		t.Errorf("Commit ran on %v, want %s", q, workflows.PipelineQueue)
	}
}

func TestPublishVersionRealBatchChildFails(t *testing.T) {
	env, f := newEnv(t)
	f.plan = activities.DownloadResult{Batches: 3, ToProcess: 3}
	f.processErr = func(in activities.BatchInput) error {
		if in.Batch == 2 {
			return temporal.NewNonRetryableApplicationError("batch: missing manifest", activities.ErrBadArchive, nil)
		}
		return nil
	}
	env.ExecuteWorkflow(workflows.PublishVersion, workflows.PublishInput{VersionRef: demoRef})
	err := env.GetWorkflowError()
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{"batch 2", "missing manifest"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	if len(f.commits) != 0 {
		t.Error("Commit called")
	}
}

// ProcessBatch on its own (no parent) returns its summary or its error.
func TestProcessBatchWithoutParent(t *testing.T) {
	for _, fail := range []bool{false, true} {
		t.Run(fmt.Sprint("fail=", fail), func(t *testing.T) {
			env, f := newEnv(t)
			if fail {
				f.processErr = func(activities.BatchInput) error {
					return temporal.NewNonRetryableApplicationError("corrupt", activities.ErrBadArchive, nil)
				}
			}
			env.ExecuteWorkflow(workflows.ProcessBatch, workflows.BatchRequest{Name: "demo", Version: "1", Batch: 4})
			err := env.GetWorkflowError()
			if fail {
				if err == nil || !strings.Contains(err.Error(), "corrupt") {
					t.Fatalf("error %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var s activities.BatchSummary
			if err := env.GetWorkflowResult(&s); err != nil || s.Files != 5 {
				t.Errorf("summary %+v %v", s, err)
			}
		})
	}
}

func TestPublishStateBitset(t *testing.T) {
	st := workflows.PublishState{Done: []uint64{0, 0, 0}}
	if st.DoneCount() != 0 {
		t.Fatal("empty state counts done batches")
	}
	st.Done = []uint64{1<<63 | 1, 0, 1 << 5}
	if got := st.DoneCount(); got != 3 {
		t.Errorf("DoneCount = %d, want 3", got)
	}
}
