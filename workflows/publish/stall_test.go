package publish_test

import (
	"strings"
	"testing"
	"time"

	"github.com/edgeflow/edgeflow/workflows/publish"
	"github.com/edgeflow/edgeflow/workflows/publish/contract"
)

// A batch whose report was lost (its child ran in an earlier run, or was
// reset) is found through its results in the bucket, and the version commits.
func TestPublishVersionFindsBatchesThatFinishedUnseen(t *testing.T) {
	env, f := newEnv(t)
	f.plan = threeBatchPlan()
	var children batchChildren
	children.mock(env)
	f.found = func(contract.BatchResultsInput) []contract.FoundBatch {
		return []contract.FoundBatch{{Batch: 1, Files: 4}}
	}
	signalAt(env, f, done(0, 1), time.Minute)
	signalAt(env, f, done(2, 1), 2*time.Minute) // batch 1 never reports

	env.ExecuteWorkflow(publish.PublishVersion, contract.PublishInput{VersionRef: demoRef})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatalf("version failed: %v", err)
	}
	if asked := f.lookedFor; len(asked) != 1 || len(asked[0]) != 1 || asked[0][0] != 1 {
		t.Errorf("looked for %v, want one look for batch 1", asked)
	}
	var out contract.PublishOutput
	if err := env.GetWorkflowResult(&out); err != nil || out.Processing.Files != 6 || len(f.commits) != 1 {
		t.Errorf("result %+v (%v), commits %d; want 6 files counted and one commit", out.Processing, err, len(f.commits))
	}
}

// A batch that never reports and left no results fails the version after two
// idle checks instead of holding it forever.
func TestPublishVersionFailsWhenABatchIsLost(t *testing.T) {
	env, f := newEnv(t)
	f.plan = threeBatchPlan()
	var children batchChildren
	children.mock(env)
	signalAt(env, f, done(0, 1), time.Minute)
	signalAt(env, f, done(2, 1), 2*time.Minute)

	env.ExecuteWorkflow(publish.PublishVersion, contract.PublishInput{VersionRef: demoRef})
	err := env.GetWorkflowError()
	if err == nil || !strings.Contains(err.Error(), "made no progress") || !strings.Contains(err.Error(), "[1]") {
		t.Fatalf("error %v; want the lost batch named", err)
	}
	if looks := len(f.lookedFor); looks != 2 || len(f.commits) != 0 {
		t.Errorf("%d looks, %d commits; want 2 looks and no commit", len(f.lookedFor), len(f.commits))
	}
}

// A report from a batch that an earlier execution of the same version
// started is not counted: only this execution's batches are.
func TestPublishVersionIgnoresReportsFromAnotherExecution(t *testing.T) {
	env, f := newEnv(t)
	f.plan = threeBatchPlan()
	var children batchChildren
	children.mock(env)
	stale := done(1, 100)
	stale.Execution = "an-earlier-execution"
	signalAt(env, f, stale, time.Minute)
	signalAt(env, f, done(0, 1), 2*time.Minute)
	signalAt(env, f, done(1, 1), 3*time.Minute)
	signalAt(env, f, done(2, 1), 4*time.Minute)

	env.ExecuteWorkflow(publish.PublishVersion, contract.PublishInput{VersionRef: demoRef})
	var out contract.PublishOutput
	if err := env.GetWorkflowResult(&out); err != nil {
		t.Fatal(err)
	}
	if out.Processing.Files != 3 {
		t.Errorf("counted %d files; the stale report of 100 must not count", out.Processing.Files)
	}
}
