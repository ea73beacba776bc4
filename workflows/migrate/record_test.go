package migrate_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"

	"github.com/edgeflow/edgeflow/internal/migrate"
	"github.com/edgeflow/edgeflow/internal/testenv/replaytest"
	wf "github.com/edgeflow/edgeflow/workflows/migrate"
	"github.com/edgeflow/edgeflow/workflows/migrate/contract"
)

// TestRecordHistories regenerates the histories in testdata/ that
// TestReplayRecordedHistories replays. It runs only when
// EDGEFLOW_RECORD_HISTORY is the address of a fresh Temporal dev server with
// Migrate's search attributes, for example:
//
//	temporal server start-dev --headless --port 7388 --http-port 7389 --metrics-port 7390 \
//	    --search-attribute MigrationJob=Keyword --search-attribute MigrationSourceBucket=Keyword \
//	    --search-attribute MigrationDestBucket=Keyword
//	EDGEFLOW_RECORD_HISTORY=127.0.0.1:7388 go test ./workflows/migrate/ -run TestRecordHistories -v
//
// The workflows run for real on an in-process worker; the activities are
// stubs registered under the real names (a history records what activities
// returned, not how). Rerun it after an intended change to workflow code,
// keep the earlier histories in a subfolder, and check the new ones in.
func TestRecordHistories(t *testing.T) {
	c := replaytest.Dial(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	s := &recordingStubs{c: c, gates: map[string]chan struct{}{}}
	replaytest.StartWorker(t, c, contract.TaskQueue, func(w worker.Worker) {
		wf.Register(w)
		s.register(w)
	})

	input := func(job string, objects int) contract.JobInput {
		s.mu.Lock()
		s.objects[job] = objects
		s.mu.Unlock()
		return contract.JobInput{Job: job, Account: "rec", Overwrite: migrate.OverwriteIfDifferent,
			Source:   contract.Endpoint{Endpoint: "src:9000", Location: migrate.Location{Bucket: "rec-src"}},
			Dest:     contract.Endpoint{Endpoint: "dst:9000", Location: migrate.Location{Bucket: "rec-dst", Prefix: "copy/"}},
			Settings: contract.Settings{PageSize: 10, PagesInFlight: 2, HeartbeatTimeout: 10 * time.Second}}
	}
	s.objects = map[string]int{}
	start := func(in contract.JobInput) client.WorkflowRun {
		t.Helper()
		run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: contract.MigrationWorkflowID(in.Job), TaskQueue: contract.TaskQueue,
			WorkflowIDReusePolicy: enums.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
			TypedSearchAttributes: temporal.NewSearchAttributes(contract.JobKey.ValueSet(in.Job),
				contract.SourceBucketKey.ValueSet(in.Source.Bucket), contract.DestBucketKey.ValueSet(in.Dest.Bucket))},
			contract.WorkflowTypeMigration, in)
		if err != nil {
			t.Fatalf("start %s (the server must be fresh): %v", in.Job, err)
		}
		return run
	}
	update := func(job, name string) {
		t.Helper()
		h, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: contract.MigrationWorkflowID(job), UpdateName: name,
			WaitForStage: client.WorkflowUpdateStageCompleted})
		if err == nil {
			err = h.Get(ctx, nil)
		}
		if err != nil {
			t.Fatalf("%s %s: %v", name, job, err)
		}
	}
	result := func(run client.WorkflowRun) contract.Status {
		t.Helper()
		var st contract.Status
		if err := run.Get(ctx, &st); err != nil {
			var app *temporal.ApplicationError
			if !errors.As(err, &app) || app.Details(&st) != nil {
				t.Fatal(err)
			}
		}
		return st
	}

	// A job with dead letters, redriven while it runs.
	gateA := s.gate("rec-a/0")
	runA := start(input("rec-a", 25))
	update("rec-a", contract.RedriveUpdate)
	close(gateA)
	stA := result(runA)
	if stA.Copied != 25 || stA.Failed != 0 || stA.RedrivePasses != 1 {
		t.Fatalf("rec-a: %+v", stA)
	}
	replaytest.WriteHistory(t, ctx, c, "migration_redriven.json", contract.MigrationWorkflowID("rec-a"), "")
	replaytest.WriteHistory(t, ctx, c, "migration_page.json", contract.MigrationPageWorkflowID("rec-a", stA.Execution, 0, 0), "")
	replaytest.WriteHistory(t, ctx, c, "migration_redrive_page.json", contract.MigrationPageWorkflowID("rec-a", stA.Execution, 1, 1), "")

	// A job that continues as new.
	inB := input("rec-b", 80)
	inB.Settings.HistoryBudget = 60
	runB := start(inB)
	firstRunB := runB.GetRunID() // Get follows the run across continue-as-new
	stB := result(runB)
	if stB.ContinuedAsNew == 0 || stB.Copied != 80-2 || stB.Failed != 2 {
		t.Fatalf("rec-b: %+v", stB)
	}
	replaytest.WriteHistory(t, ctx, c, "migration_continued_first_run.json", contract.MigrationWorkflowID("rec-b"), firstRunB)
	replaytest.WriteHistory(t, ctx, c, "migration_continued_last_run.json", contract.MigrationWorkflowID("rec-b"), "")

	// Paused, resumed, then aborted with a page in flight.
	gateC := s.gate("rec-c/1")
	runC := start(input("rec-c", 40))
	s.waitStarted(t, "rec-c/1")
	update("rec-c", contract.PauseUpdate)
	update("rec-c", contract.ResumeUpdate)
	update("rec-c", contract.AbortUpdate)
	stC := result(runC)
	close(gateC)
	if stC.State != contract.StateAborted {
		t.Fatalf("rec-c: %+v", stC)
	}
	replaytest.WriteHistory(t, ctx, c, "migration_aborted.json", contract.MigrationWorkflowID("rec-c"), "")

	// A job whose precheck fails.
	inD := input("rec-d", 5)
	inD.Dest.Bucket = "missing"
	if st := result(start(inD)); st.State != contract.StateFailed {
		t.Fatalf("rec-d: %+v", st)
	}
	replaytest.WriteHistory(t, ctx, c, "migration_failed.json", contract.MigrationWorkflowID("rec-d"), "")

	// Two jobs of an account that runs one at a time: the second waits in line.
	gateE := s.gate("rec-e/0")
	inE, inF := input("rec-e", 5), input("rec-f", 5)
	inE.Account, inF.Account = "rec-one", "rec-one"
	runE := start(inE)
	s.waitStarted(t, "rec-e/0")
	runF := start(inF)
	time.Sleep(time.Second) // rec-f asks for a slot and waits
	close(gateE)
	result(runE)
	if st := result(runF); st.Copied != 5 {
		t.Fatalf("rec-f: %+v", st)
	}
	replaytest.WriteHistory(t, ctx, c, "migration_queued.json", contract.MigrationWorkflowID("rec-f"), "")
	replaytest.WriteHistory(t, ctx, c, "migration_account.json", contract.MigrationAccountWorkflowID("rec-one"), "")

	// A job whose pages are larger than the first page: its first listing
	// asks for a short page (the stubs answer ten objects whatever the size).
	inH := input("rec-h", 30)
	inH.Settings.PageSize = 1000
	if st := result(start(inH)); st.Copied != 30-2 || st.Failed != 2 {
		t.Fatalf("rec-h: %+v", st)
	}
	replaytest.WriteHistory(t, ctx, c, "migration_ramped.json", contract.MigrationWorkflowID("rec-h"), "")

	// A catalog import: its copy job, then Publish's metadata rebuild.
	replaytest.StartWorker(t, c, contract.PublishTaskQueue, func(pw worker.Worker) {
		pw.RegisterActivityWithOptions(func(ctx context.Context, in contract.RebuildRequest) (*contract.RebuildCounts, error) {
			return &contract.RebuildCounts{Packages: 1, Versions: 2, Files: 5, Bytes: 500}, nil
		}, activity.RegisterOptions{Name: contract.RebuildMetadataActivity})
	})
	files := input("rec-g-files", 5)
	files.Overwrite, files.StripSourcePrefix = migrate.OverwriteNever, true
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: contract.MigrationCatalogImportWorkflowID("rec-g"), TaskQueue: contract.TaskQueue},
		contract.WorkflowTypeMigrationCatalogImport, contract.ImportInput{Import: "rec-g", Files: files})
	if err != nil {
		t.Fatal(err)
	}
	var imported contract.ImportResult
	if err := run.Get(ctx, &imported); err != nil || imported.Rebuild.Versions != 2 {
		t.Fatalf("rec-g: %+v %v", imported, err)
	}
	replaytest.WriteHistory(t, ctx, c, "migration_catalog_import.json", contract.MigrationCatalogImportWorkflowID("rec-g"), "")
}

// recordingStubs stand in for the activities: a source of objects[job]
// objects in pages of ten, whose second page holds two objects that fail
// until redriven; TransferPage of a page with a gate waits for it.
type recordingStubs struct {
	c       client.Client
	mu      sync.Mutex
	objects map[string]int
	gates   map[string]chan struct{}
	started sync.Map
}

func (s *recordingStubs) gate(page string) chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := make(chan struct{})
	s.gates[page] = g
	return g
}

func (s *recordingStubs) waitStarted(t *testing.T, page string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		if _, ok := s.started.Load(page); ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never started", page)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (s *recordingStubs) register(w worker.Worker) {
	reg := func(fn any, name string) { w.RegisterActivityWithOptions(fn, activity.RegisterOptions{Name: name}) }
	reg(func(ctx context.Context, in contract.PrecheckInput) error {
		if in.Dest.Bucket == "missing" {
			return temporal.NewNonRetryableApplicationError("destination s3://missing on dst:9000: the bucket does not exist", contract.ErrPrecheck, nil)
		}
		return nil
	}, contract.PrecheckActivity)
	reg(func(ctx context.Context, in contract.ListInput) (contract.ListResult, error) {
		s.mu.Lock()
		n := s.objects[in.Job]
		s.mu.Unlock()
		count := min(10, n-in.Seq*10)
		res := contract.ListResult{Seq: in.Seq, Count: count, Bytes: int64(count) * 100}
		if (in.Seq+1)*10 < n {
			res.Next = fmt.Sprintf("token-%d", in.Seq+1)
		} else {
			res.Last = true
		}
		return res, nil
	}, contract.ListPageActivity)
	reg(func(ctx context.Context, in contract.PageInput) (contract.PageReport, error) {
		page := fmt.Sprintf("%s/%d", in.Job, in.Seq)
		s.started.Store(page, true)
		s.mu.Lock()
		g := s.gates[page]
		n := s.objects[in.Job]
		s.mu.Unlock()
		rep := contract.PageReport{Execution: in.Execution, Pass: in.Pass, Seq: in.Seq, Item: in.Item}
		if g != nil && in.Pass == 0 {
			select {
			case <-g:
			case <-ctx.Done():
				rep.Aborted, rep.Counters = true, migrate.Counters{Copied: 3, Bytes: 300}
				return rep, temporal.NewCanceledError(rep)
			}
		}
		count := min(10, n-in.Seq*10)
		if in.Pass > 0 {
			rep.Redriven = 2
			rep.Counters = migrate.Counters{Copied: 2, Bytes: 200}
			return rep, nil
		}
		failed := 0
		if in.Seq == 1 {
			failed = 2
		}
		rep.Counters = migrate.Counters{Copied: int64(count - failed), Failed: int64(failed), Bytes: int64(count-failed) * 100}
		return rep, nil
	}, contract.TransferPageActivity)
	reg(func(ctx context.Context, in contract.DeadPagesInput) (contract.DeadPagesResult, error) {
		if in.After < 1 {
			return contract.DeadPagesResult{Seqs: []int{1}, Last: true}, nil
		}
		return contract.DeadPagesResult{Last: true}, nil
	}, contract.DeadPagesActivity)
	reg(func(ctx context.Context, in contract.FindReportsInput) ([]contract.PageReport, error) {
		return nil, nil
	}, contract.FindReportsActivity)
	reg(func(ctx context.Context, account string, req contract.SlotRequest) error {
		limit := 3
		if account == "rec-one" {
			limit = 1
		}
		_, err := s.c.SignalWithStartWorkflow(ctx, contract.MigrationAccountWorkflowID(account), contract.AcquireSignal, req,
			client.StartWorkflowOptions{ID: contract.MigrationAccountWorkflowID(account), TaskQueue: contract.TaskQueue},
			contract.WorkflowTypeMigrationAccount, contract.AccountInput{Account: account, Queue: migrate.JobQueue{Limit: limit}})
		return err
	}, contract.RequestSlotActivity)
	reg(func(ctx context.Context, in contract.RunningInput) ([]string, error) { return in.WorkflowIDs, nil }, contract.StillRunningActivity)
	reg(func(ctx context.Context, st contract.Status) error { return nil }, contract.ArchiveJobActivity)
}
