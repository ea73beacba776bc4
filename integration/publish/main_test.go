// Package integration runs the workflows on a real Temporal dev server with
// real MinIO, with the publish and compress worker pools in this process and
// a local npm registry serving tarballs the tests build.
package integration

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	publishacts "github.com/edgeflow/edgeflow/activities/publish"
	"github.com/edgeflow/edgeflow/internal/objectstore"
	"github.com/edgeflow/edgeflow/internal/publish/catalog"
	"github.com/edgeflow/edgeflow/internal/publish/metadata"
	"github.com/edgeflow/edgeflow/internal/publish/registry"
	"github.com/edgeflow/edgeflow/internal/publish/registry/registrytest"
	"github.com/edgeflow/edgeflow/internal/publish/tarx"
	"github.com/edgeflow/edgeflow/internal/publish/transform"
	"github.com/edgeflow/edgeflow/internal/testenv"
	"github.com/edgeflow/edgeflow/workflows/publish"
	"github.com/edgeflow/edgeflow/workflows/publish/contract"
)

var (
	env     *testenv.Env
	npm     *registrytest.Registry
	acts    *publishacts.Publish
	squash  *publishacts.Compress
	buckets = metadata.Buckets{Files: "it-files", Mirror: "it-mirror", Meta: "it-meta", MirrorMeta: "it-mirror-meta", Incoming: "it-incoming"}
)

func TestMain(m *testing.M) {
	testenv.Main(m, testenv.Options{Temporal: true, MinIO: true}, &env)
}

// startWorkers runs both publish pools against the test stack until the test ends.
func startWorkers(t testing.TB) {
	t.Helper()
	setUpStack(t)
	startPools(t, acts, nil)
}

// setUpStack creates the test buckets and the local registry, once, and
// checks that the test leaves no workflow running.
func setUpStack(t testing.TB) {
	t.Helper()
	testenv.Require(t, env)
	t.Cleanup(func() { leavesNoWorkflowRunning(t) })
	if acts != nil {
		return
	}
	npm = registrytest.New()
	ctx := context.Background()
	if err := objectstore.EnsureBuckets(ctx, env.Store, buckets.Files, buckets.Mirror, buckets.Meta, buckets.MirrorMeta, buckets.Incoming); err != nil {
		t.Fatal(err)
	}
	stores := publishacts.Stores{Primary: env.Store, Mirror: env.Store, Buckets: buckets, IOParallel: 16}
	acts = &publishacts.Publish{
		Stores: stores,
		NPM:    &registry.NPM{BaseURL: npm.URL, Client: http.DefaultClient},
		GitHub: &registry.GitHub{BaseURL: npm.URL},
		HTTP:   http.DefaultClient, Extract: tarx.DefaultLimits, FirstImport: 10,
	}
	squash = &publishacts.Compress{Stores: stores, CPU: transform.NewLimiter(0)}
}

// startPools runs the publish pool with pub's activities (then override's
// registrations, if any) and the compress pool until the test ends.
func startPools(t testing.TB, pub *publishacts.Publish, override func(worker.Worker)) {
	t.Helper()
	pool := worker.New(env.Client, contract.TaskQueue, worker.Options{})
	publish.Register(pool)
	publishacts.RegisterPublish(pool, pub)
	if override != nil {
		override(pool)
	}
	compress := worker.New(env.Client, contract.CompressTaskQueue, worker.Options{MaxConcurrentActivityExecutionSize: 4})
	publishacts.RegisterCompress(compress, squash)
	for _, w := range []worker.Worker{pool, compress} {
		if err := w.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(w.Stop)
	}
	// Cleanups run last first: the test's workflows must end while the
	// pools still run, since a lane's last task comes after the check that
	// waited for it has answered the test. (Benchmarks may leave theirs.)
	if _, isTest := t.(*testing.T); isTest {
		t.Cleanup(func() { leavesNoWorkflowRunning(t) })
	}
}

// publishOnce runs PublishVersion for one version and waits for it.
func publishOnce(ctx context.Context, pkg catalog.Package, version string) (*contract.PublishOutput, error) {
	run, err := env.Client.ExecuteWorkflow(ctx, versionStart(pkg.Name, version),
		contract.WorkflowTypePublishVersion, contract.PublishInput{VersionRef: contract.VersionRef{
			PackageRef: contract.PackageRef{Name: pkg.Name, Package: &pkg}, Version: version}})
	if err != nil {
		return nil, err
	}
	var out contract.PublishOutput
	return &out, run.Get(ctx, &out)
}

// versionStart starts a version's run the way PackageUpdates and the
// publish starter do.
func versionStart(name, version string) client.StartWorkflowOptions {
	return client.StartWorkflowOptions{
		ID: contract.PublishVersionWorkflowID(name, version), TaskQueue: contract.TaskQueue, WorkflowIDReusePolicy: contract.PublishIDReusePolicy,
		TypedSearchAttributes: contract.VersionAttributes(name, version),
	}
}

// eventually polls check until it reports done, failing the test with its
// last word after the deadline: for what becomes true some time later.
func eventually(t testing.TB, within time.Duration, what string, check func() (bool, string)) {
	t.Helper()
	testenv.Eventually(t, within, 200*time.Millisecond, what, check)
}

func testContext(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// leavesNoWorkflowRunning fails a test that leaves a workflow running: the
// next test's workers would finish it with that test's catalog and stores
// (a check TestStarters once left behind published the trace test's
// version). It runs after the test's own clean-up, and waits for the
// visibility store, which learns of ended runs a moment late.
func leavesNoWorkflowRunning(t testing.TB) {
	t.Helper()
	var open []string
	eventually(t, 30*time.Second, "the test leaves no workflow running", func() (bool, string) {
		open = open[:0]
		resp, err := env.Client.ListWorkflow(context.Background(), &workflowservice.ListWorkflowExecutionsRequest{
			Query: "ExecutionStatus = 'Running'"})
		if err != nil {
			return false, err.Error()
		}
		for _, e := range resp.GetExecutions() {
			open = append(open, e.GetType().GetName()+" "+e.GetExecution().GetWorkflowId())
		}
		return len(open) == 0, fmt.Sprint(open)
	})
}
