// Package migrate_test runs Migrate end to end on a real Temporal dev
// server and two real MinIO servers: jobs across endpoints and on one,
// control, dead letters, the starter's contract, secrets in history, and a
// worker killed mid-job.
package migrate_test

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"

	acts "github.com/edgeflow/edgeflow/activities/migrate"
	"github.com/edgeflow/edgeflow/internal/devstack"
	"github.com/edgeflow/edgeflow/internal/keyring"
	"github.com/edgeflow/edgeflow/internal/migrate"
	"github.com/edgeflow/edgeflow/internal/testenv"
	wf "github.com/edgeflow/edgeflow/workflows/migrate"
	"github.com/edgeflow/edgeflow/workflows/migrate/contract"
)

var (
	env       *testenv.Env
	setupOnce sync.Once
	keys      *keyring.Keyring
	codecKeys string // the keys in CODEC_KEYS form, for processes
	jobs      migrate.JobStore
)

func TestMain(m *testing.M) {
	testenv.Main(m, testenv.Options{Temporal: true, MinIO: true, SecondMinIO: true}, &env)
}

func setup(t testing.TB) {
	t.Helper()
	testenv.Require(t, env)
	t.Cleanup(func() { leavesNoJobRunning(t) })
	setupOnce.Do(func() {
		k, err := keyring.Generate("it")
		if err != nil {
			panic(err)
		}
		codecKeys = k.Encode()
		keys, _ = keyring.New(k)
		jobs = migrate.JobStore{Store: env.Store, Bucket: "it-migrate-jobs"}
		if err := jobs.Ensure(context.Background()); err != nil {
			panic(err)
		}
	})
}

// logs collects what the in-process worker logs, to check it for secrets.
var logs struct {
	sync.Mutex
	strings.Builder
}

type logWriter struct{}

func (logWriter) Write(p []byte) (int, error) {
	logs.Lock()
	defer logs.Unlock()
	return logs.Write(p)
}

// startWorker runs a migrate worker in this process until the test ends,
// and returns its activities.
func startWorker(t testing.TB, perAccount int) *acts.Activities {
	t.Helper()
	setup(t)
	// A client of its own, whose logger the worker and activities use.
	c, err := client.NewClientFromExisting(env.Client, client.Options{
		Logger: sdklog.NewStructuredLogger(slog.New(slog.NewTextHandler(logWriter{}, &slog.HandlerOptions{Level: slog.LevelDebug}))),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	w := worker.New(c, contract.TaskQueue, worker.Options{})
	wf.Register(w)
	a := &acts.Activities{Keys: keys, Jobs: jobs, Temporal: env.Client, JobsPerAccount: perAccount}
	acts.Register(w, a)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	checkedWhileWorkerRuns(t)
	return a
}

// checkedWhileWorkerRuns runs leavesNoJobRunning before the worker just
// started stops (clean-ups run last in, first out). A job's pages end after
// the job can: a page's last workflow task follows its report, and one
// that a killed worker had taken is handed to another only after the
// workflow task timeout (10 s). Checked once the test's workers were gone,
// such a page stayed running for want of a worker.
func checkedWhileWorkerRuns(t testing.TB) {
	t.Helper()
	t.Cleanup(func() { leavesNoJobRunning(t) })
}

// side describes one side of a job for tests.
type side struct {
	endpoint string
	access   string
	secret   string
	bucket   string
	prefix   string
}

func source(bucket string) side {
	return side{endpoint: env.MinIO.Endpoint, access: env.MinIO.AccessKey, secret: env.MinIO.SecretKey, bucket: bucket}
}

func dest2(endpoint, bucket, prefix string) side {
	return side{endpoint: endpoint, access: env.MinIO2.AccessKey, secret: env.MinIO2.SecretKey, bucket: bucket, prefix: prefix}
}

// jobInput builds a job's input with sealed credentials and test-sized settings.
func jobInput(t testing.TB, job string, src, dst side) contract.JobInput {
	t.Helper()
	seal := func(s side, name string) migrate.SealedCredentials {
		sc, err := migrate.SealCredentials(keys, migrate.Credentials{AccessKey: s.access, SecretKey: s.secret}, job, name,
			migrate.StoreBinding{Endpoint: s.endpoint, Bucket: s.bucket, Prefix: s.prefix})
		if err != nil {
			t.Fatal(err)
		}
		return sc
	}
	return contract.JobInput{
		Job: job, Account: "it", Overwrite: migrate.OverwriteIfDifferent,
		Source: contract.Endpoint{Endpoint: src.endpoint, Location: migrate.Location{Bucket: src.bucket, Prefix: src.prefix}, Credentials: seal(src, migrate.SideSource)},
		Dest:   contract.Endpoint{Endpoint: dst.endpoint, Location: migrate.Location{Bucket: dst.bucket, Prefix: dst.prefix}, Credentials: seal(dst, migrate.SideDest)},
		Settings: contract.Settings{PageSize: 100, PagesInFlight: 4, Concurrency: 8,
			MultipartCutoff: 6 << 20, PartSize: 5 << 20, PartConcurrency: 3, CopyCutoff: 6 << 20,
			HeartbeatTimeout: 5 * time.Second, ClockSkew: time.Second, WatchEvery: time.Minute},
	}
}

func start(t testing.TB, in contract.JobInput) client.WorkflowRun {
	t.Helper()
	run, err := env.Client.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{
		ID: contract.MigrationWorkflowID(in.Job), TaskQueue: contract.TaskQueue,
		TypedSearchAttributes: searchAttributes(in),
	}, contract.WorkflowTypeMigration, in)
	if err != nil {
		t.Fatal(err)
	}
	return run
}

// wait waits for a job and returns its status (also when it failed).
func wait(t testing.TB, run client.WorkflowRun) (contract.Status, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	var st contract.Status
	err := run.Get(ctx, &st)
	return st, err
}

func status(t testing.TB, job string) contract.Status {
	t.Helper()
	v, err := env.Client.QueryWorkflow(context.Background(), contract.MigrationWorkflowID(job), "", contract.StatusQuery)
	if err != nil {
		t.Fatal(err)
	}
	var st contract.Status
	if err := v.Get(&st); err != nil {
		t.Fatal(err)
	}
	return st
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %s: %s", within, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

var (
	buildOnce sync.Once
	binDir    string
	buildErr  error
)

// binary builds the migrate starter and worker once (migrate-starter,
// migrate-worker) and returns one's path.
func binary(t testing.TB, name string) string {
	t.Helper()
	buildOnce.Do(func() {
		root, err := devstack.RepoRoot()
		if err != nil {
			buildErr = err
			return
		}
		if binDir, buildErr = os.MkdirTemp("", "edgeflow-migrate-"); buildErr != nil {
			return
		}
		for name, pkg := range map[string]string{"migrate-starter": "./starters/migrate", "migrate-worker": "./workers/migrate"} {
			cmd := exec.Command("go", "build", "-o", filepath.Join(binDir, name), pkg)
			cmd.Dir = root
			if out, err := cmd.CombinedOutput(); err != nil {
				buildErr = errors.New(string(out))
				return
			}
		}
	})
	if buildErr != nil {
		t.Fatalf("build: %v", buildErr)
	}
	return filepath.Join(binDir, name)
}

// processEnv is the environment of a starter or worker process of the tests.
func processEnv(extra ...string) []string {
	return append(append(os.Environ(),
		"TEMPORAL_ADDRESS="+env.Temporal.HostPort, "CODEC_KEYS="+codecKeys,
		"S3_ENDPOINT="+env.MinIO.Endpoint, "S3_ACCESS_KEY="+env.MinIO.AccessKey, "S3_SECRET_KEY="+env.MinIO.SecretKey,
		"BUCKET_MIGRATE="+jobs.Bucket, "LOG_FORMAT=json"), extra...)
}

func searchAttributes(in contract.JobInput) temporal.SearchAttributes {
	return temporal.NewSearchAttributes(contract.JobKey.ValueSet(in.Job),
		contract.SourceBucketKey.ValueSet(in.Source.Bucket), contract.DestBucketKey.ValueSet(in.Dest.Bucket))
}

// leavesNoJobRunning fails a test that leaves a job (or a page of one)
// running: the next test's workers would go on with it, with that test's
// stores and faults. Account workflows stay, as in production, idle until
// their next job. It runs after the test's own clean-up, and waits for the
// visibility store, which learns of ended runs a moment late. Workers
// check it too before they stop (checkedWhileWorkerRuns).
func leavesNoJobRunning(t testing.TB) {
	t.Helper()
	query := "ExecutionStatus = 'Running' AND WorkflowType != '" + contract.WorkflowTypeMigrationAccount + "'"
	deadline := time.Now().Add(30 * time.Second)
	for {
		var open []string
		resp, err := env.Client.ListWorkflow(context.Background(), &workflowservice.ListWorkflowExecutionsRequest{Query: query})
		for _, e := range resp.GetExecutions() {
			open = append(open, e.GetType().GetName()+" "+e.GetExecution().GetWorkflowId())
		}
		if err == nil && len(open) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("the test left workflows running (%v): %v", err, open)
			// Ended here, so the next test is not blamed for them too.
			for _, e := range resp.GetExecutions() {
				_ = env.Client.TerminateWorkflow(context.Background(), e.GetExecution().GetWorkflowId(), e.GetExecution().GetRunId(), "left running by "+t.Name())
			}
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
}
