package publish_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/edgeflow/edgeflow/workflows/publish"
	"github.com/edgeflow/edgeflow/workflows/publish/contract"
)

func continueAsNewInput(t *testing.T, err error) contract.PublishInput {
	t.Helper()
	var can *workflow.ContinueAsNewError
	if !errors.As(err, &can) {
		t.Fatalf("workflow ended with %v (%T), want continue-as-new", err, err)
	}
	if can.WorkflowType == nil || can.WorkflowType.Name != "PublishVersion" {
		t.Errorf("continues as %+v", can.WorkflowType)
	}
	var next contract.PublishInput
	if err := converter.GetDefaultDataConverter().FromPayloads(can.Input, &next); err != nil {
		t.Fatal(err)
	}
	return next
}

func TestPublishVersionContinuesAsNew(t *testing.T) {
	env, f := newEnv(t)
	f.plan = contract.PlanSummary{Batches: 6, ToProcess: 6, Reused: 1}
	var children batchChildren
	children.mock(env)
	// Window 3: batches 0-2 start; batch 0 reports and 3 starts; then the
	// history goes over budget while batches 1 and 2 report in one task.
	signalAt(env, f, done(0, 1), time.Minute)
	env.RegisterDelayedCallback(func() {
		env.SetCurrentHistoryLength(11)
		env.SignalWorkflowSkippingWorkflowTask(contract.BatchDoneSignal, done(1, 2))
		env.SignalWorkflow(contract.BatchDoneSignal, done(2, 4))
	}, 2*time.Minute)
	in := contract.PublishInput{VersionRef: demoRef, MaxPendingBatches: 3, HistoryBudget: 10}
	env.ExecuteWorkflow(publish.PublishVersion, in)

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
	f.plan = contract.PlanSummary{Batches: 10, ToProcess: 10}
	var children batchChildren
	children.mock(env)
	env.SetCurrentHistoryLength(1000)
	env.ExecuteWorkflow(publish.PublishVersion, contract.PublishInput{VersionRef: demoRef, MaxPendingBatches: 4, HistoryBudget: 10})
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
	plan := contract.PlanSummary{Batches: 5, ToProcess: 15, Reused: 3}
	var children batchChildren
	children.mock(env)
	// Batches 0 and 1 reported to an earlier run, which had started batch 2.
	resume := &contract.PublishState{Plan: plan, Started: 3, Done: []uint64{0b11},
		Totals: contract.BatchSummary{Files: 5, BytesIn: 500}, Runs: 1}
	var mid contract.PublishProgress
	env.RegisterDelayedCallback(func() { mid = progress(t, env) }, 30*time.Second)
	signalAt(env, f, done(1, 100), time.Minute) // a late duplicate from the first run
	signalAt(env, f, done(3, 3), 2*time.Minute)
	signalAt(env, f, done(2, 3), 3*time.Minute)
	signalAt(env, f, done(4, 4), 4*time.Minute)
	env.ExecuteWorkflow(publish.PublishVersion, contract.PublishInput{VersionRef: demoRef, MaxPendingBatches: 2, Resume: resume})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	var out contract.PublishOutput
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
	want := contract.PublishProgress{Stage: "processing", Batches: 5, BatchesDone: 2, Files: 15, FilesDone: 5, Reused: 3, ContinuedAsNew: 1}
	if mid != want {
		t.Errorf("progress of the resumed run %+v, want %+v", mid, want)
	}
}

// The real ProcessBatch children run their activity on the compress queue
// and signal the version themselves.
func TestPublishVersionWithRealBatchChildren(t *testing.T) {
	env, f := newEnv(t)
	f.plan = contract.PlanSummary{Batches: 4, ToProcess: 10, Options: contract.ProcessingOptions{MinifyJS: true}}
	var queues sync.Map
	env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, _ converter.EncodedValues) {
		queues.Store(info.ActivityType.Name, info.TaskQueue)
	})
	env.ExecuteWorkflow(publish.PublishVersion, contract.PublishInput{VersionRef: demoRef, MaxPendingBatches: 2})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	var out contract.PublishOutput
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
	if q, _ := queues.Load("ProcessBatch"); q != contract.CompressTaskQueue {
		t.Errorf("ProcessBatch ran on %v, want %s", q, contract.CompressTaskQueue)
	}
	if q, _ := queues.Load("Commit"); q != contract.TaskQueue {
		t.Errorf("Commit ran on %v, want %s", q, contract.TaskQueue)
	}
}

func TestPublishVersionRealBatchChildFails(t *testing.T) {
	env, f := newEnv(t)
	f.plan = contract.PlanSummary{Batches: 3, ToProcess: 3}
	f.processErr = func(in contract.BatchInput) error {
		if in.Batch == 2 {
			return temporal.NewNonRetryableApplicationError("batch: missing manifest", contract.ErrBadArchive, nil)
		}
		return nil
	}
	env.ExecuteWorkflow(publish.PublishVersion, contract.PublishInput{VersionRef: demoRef})
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
				f.processErr = func(contract.BatchInput) error {
					return temporal.NewNonRetryableApplicationError("corrupt", contract.ErrBadArchive, nil)
				}
			}
			env.ExecuteWorkflow(publish.ProcessBatch, contract.BatchInput{Name: "demo", Version: "1", Batch: 4})
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
			var s contract.BatchSummary
			if err := env.GetWorkflowResult(&s); err != nil || s.Files != 5 {
				t.Errorf("summary %+v %v", s, err)
			}
		})
	}
}

func TestPublishStateBitset(t *testing.T) {
	st := contract.PublishState{Done: []uint64{0, 0, 0}}
	if st.DoneCount() != 0 {
		t.Fatal("empty state counts done batches")
	}
	st.Done = []uint64{1<<63 | 1, 0, 1 << 5}
	if got := st.DoneCount(); got != 3 {
		t.Errorf("DoneCount = %d, want 3", got)
	}
}
