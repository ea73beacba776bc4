package publish_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	publishacts "github.com/edgeflow/edgeflow/activities/publish"
	"github.com/edgeflow/edgeflow/workflows/publish"
	"github.com/edgeflow/edgeflow/workflows/publish/contract"
)

// fakes stands in for the activities: their methods are mocked by function.
// Activities run on goroutines of their own, so every field is behind mu.
type fakes struct {
	mu sync.Mutex

	plan        contract.PlanSummary
	downloadErr error
	downloads   []contract.VersionRef

	commitErr    error
	commitCopies int // PublishResult.Copies
	commits      []contract.PackageVersion

	materializeErr error
	materialized   []contract.PackageVersion

	cancelled []string // workflow IDs the version asked to cancel
	// signalsSent counts BatchDone signals a test delivered; commitSeen is its
	// value when Commit ran.
	signalsSent int
	commitSeen  []int

	processErr func(in contract.BatchInput) error
	processed  []contract.BatchInput

	catalog  []string
	listed   int
	checks   map[string]contract.PackageCheck
	checkErr error
	checked  [][]contract.PackageRef

	// stageDelay is how long StageVersion takes (workflow time).
	stageDelay time.Duration
	// found answers FindBatchResults; lookedFor records what it was asked.
	found     func(contract.BatchResultsInput) []contract.FoundBatch
	lookedFor [][]int

	// laneSignal answers a signal to a lane that is not a workflow of the
	// test environment; nil: no such lane runs.
	laneSignal func(id string, v contract.LaneVersions) error
}

// The activities the workers register, with no dependencies: the tests
// mock their methods, and the workflows schedule them by the names the
// structs' Register gives them.
var (
	acts      = &publishacts.Publish{}
	compress  = &publishacts.Compress{}
	anyInput  = []any{mock.Anything, mock.Anything}
	anyNoArgs = []any{mock.Anything}
)

func (f *fakes) register(env *testsuite.TestWorkflowEnvironment) {
	publishacts.RegisterPublish(env, acts)
	publishacts.RegisterCompress(env, compress)
	env.OnActivity(acts.StageVersion, anyInput...).After(f.stageDelay).Return(func(ctx context.Context, in contract.VersionRef) (*contract.PlanSummary, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.downloads = append(f.downloads, in)
		if f.downloadErr != nil {
			return nil, f.downloadErr
		}
		plan := f.plan
		return &plan, nil
	})
	env.OnActivity(acts.Commit, anyInput...).Return(func(ctx context.Context, in contract.PackageVersion) (*contract.CommitResult, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.commits = append(f.commits, in)
		f.commitSeen = append(f.commitSeen, f.signalsSent)
		if f.commitErr != nil {
			return nil, f.commitErr
		}
		return &contract.CommitResult{Files: 42, SourceFiles: 21, Latest: in.Version, Copies: f.commitCopies}, nil
	})
	env.OnActivity(acts.Materialize, anyInput...).Return(func(ctx context.Context, in contract.PackageVersion) (int, error) {
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
	})
	env.OnActivity(compress.CompressBatch, anyInput...).Return(func(ctx context.Context, in contract.BatchInput) (*contract.BatchSummary, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.processed = append(f.processed, in)
		if f.processErr != nil {
			if err := f.processErr(in); err != nil {
				return nil, err
			}
		}
		return &contract.BatchSummary{Files: in.Batch + 1, BytesIn: 100, BytesOut: 10}, nil
	})
	env.OnActivity(acts.ListCatalog, anyNoArgs...).Return(func(ctx context.Context) ([]string, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.listed++
		return append([]string(nil), f.catalog...), nil
	})
	env.OnActivity(acts.CheckPackages, anyInput...).Return(func(ctx context.Context, refs []contract.PackageRef) ([]contract.PackageCheck, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.checked = append(f.checked, refs)
		if f.checkErr != nil {
			return nil, f.checkErr
		}
		out := make([]contract.PackageCheck, len(refs))
		for i, r := range refs {
			c, ok := f.checks[r.Name]
			if !ok {
				c = contract.PackageCheck{Name: r.Name}
			}
			out[i] = c
		}
		return out, nil
	})
	env.OnActivity(acts.FindBatchResults, anyInput...).Return(func(ctx context.Context, in contract.BatchResultsInput) ([]contract.FoundBatch, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.lookedFor = append(f.lookedFor, in.Batches)
		if f.found == nil {
			return nil, nil
		}
		return f.found(in), nil
	})
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
	env.OnWorkflow(publish.ProcessBatch, mock.Anything, mock.Anything).Return(
		func(ctx workflow.Context, in contract.BatchInput) (*contract.BatchSummary, error) {
			info := workflow.GetInfo(ctx)
			b.mu.Lock()
			defer b.mu.Unlock()
			b.started = append(b.started, in.Batch)
			if want := contract.ProcessBatchWorkflowID(in.Name, in.Version, in.Batch); info.WorkflowExecution.ID != want {
				b.bad = append(b.bad, fmt.Sprintf("batch %d: ID %q, want %q", in.Batch, info.WorkflowExecution.ID, want))
			}
			if p := info.ParentWorkflowExecution; p == nil || p.ID != contract.PublishVersionWorkflowID(in.Name, in.Version) {
				b.bad = append(b.bad, fmt.Sprintf("batch %d: parent %+v", in.Batch, p))
			}
			if info.TaskQueueName != contract.TaskQueue {
				b.bad = append(b.bad, fmt.Sprintf("batch %d: task queue %q", in.Batch, info.TaskQueueName))
			}
			return &contract.BatchSummary{}, nil
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

var demoRef = contract.VersionRef{PackageRef: contract.PackageRef{Name: "demo"}, Version: "1.2.3"}

// newEnv is a test environment with the workflows and the fake activities;
// setup, if any, adjusts the fakes before they are registered.
func newEnv(t *testing.T, setup ...func(*fakes)) (*testsuite.TestWorkflowEnvironment, *fakes) {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	s.SetLogger(log.NewStructuredLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))))
	env := s.NewTestWorkflowEnvironment()
	env.SetTestTimeout(30 * time.Second)
	env.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: contract.PublishVersionWorkflowID(demoRef.Name, demoRef.Version), TaskQueue: contract.TaskQueue})
	publish.Register(env)
	f := &fakes{}
	for _, s := range setup {
		s(f)
	}
	f.register(env)
	// No lane runs outside this test environment: a signal to a lane that is
	// not a workflow of the environment finds nothing, as on a server.
	env.OnSignalExternalWorkflow(mock.Anything, mock.Anything, "", contract.LaneVersionsSignal, mock.Anything).
		Return(func(_, id, _, _ string, v any) error {
			if f.laneSignal != nil {
				return f.laneSignal(id, v.(contract.LaneVersions))
			}
			return &temporal.UnknownExternalWorkflowExecutionError{}
		}).Maybe()
	env.OnRequestCancelExternalWorkflow(mock.Anything, mock.Anything, mock.Anything).Return(nil).Run(func(args mock.Arguments) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.cancelled = append(f.cancelled, args.String(1))
	})
	return env, f
}

// signalAt delivers BatchDone d after delay (workflow time).
func signalAt(env *testsuite.TestWorkflowEnvironment, f *fakes, d contract.BatchDone, delay time.Duration) {
	env.RegisterDelayedCallback(func() {
		f.sent()
		env.SignalWorkflow(contract.BatchDoneSignal, d)
	}, delay)
}

func done(batch, files int) contract.BatchDone {
	return contract.BatchDone{Batch: batch, Summary: &contract.BatchSummary{
		Files: files, Twins: 1, MinifyFailed: batch % 2, BytesIn: int64(100 * files), BytesOut: int64(10 * files), CPUMillis: 7,
		Warnings: []string{fmt.Sprintf("warning of batch %d", batch)},
	}}
}

func progress(t *testing.T, env *testsuite.TestWorkflowEnvironment) contract.PublishProgress {
	t.Helper()
	v, err := env.QueryWorkflow(contract.ProgressQuery)
	if err != nil {
		t.Fatalf("progress query: %v", err)
	}
	var p contract.PublishProgress
	if err := v.Get(&p); err != nil {
		t.Fatal(err)
	}
	return p
}

func threeBatchPlan() contract.PlanSummary {
	return contract.PlanSummary{Batches: 3, SourceFiles: 9, ToProcess: 7, Reused: 2, Bytes: 12345,
		Options: contract.ProcessingOptions{MinifyJS: true, MinifyCSS: true}}
}
