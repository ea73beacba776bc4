// Package integration runs the workflows on a real Temporal dev server with
// real MinIO, with the pipeline and compress worker pools in this process and
// a local npm registry serving tarballs the tests build.
package integration

import (
	"context"
	"net/http"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/edgeflow/edgeflow/activities"
	"github.com/edgeflow/edgeflow/internal/catalog"
	"github.com/edgeflow/edgeflow/internal/metadata"
	"github.com/edgeflow/edgeflow/internal/objectstore"
	"github.com/edgeflow/edgeflow/internal/process"
	"github.com/edgeflow/edgeflow/internal/registry"
	"github.com/edgeflow/edgeflow/internal/tarx"
	"github.com/edgeflow/edgeflow/internal/testenv"
	"github.com/edgeflow/edgeflow/workflows"
)

var (
	env     *testenv.Env
	npm     *fakeNPM
	pub     *activities.Publish
	buckets = metadata.Buckets{Files: "it-files", Mirror: "it-mirror", Meta: "it-meta", MirrorMeta: "it-mirror-meta", Incoming: "it-incoming"}
)

func TestMain(m *testing.M) {
	testenv.Main(m, testenv.Options{Temporal: true, MinIO: true}, &env)
}

// startWorkers runs both publish pools against the test stack until the test ends.
func startWorkers(t testing.TB) {
	t.Helper()
	testenv.Require(t, env)
	if pub == nil {
		npm = newFakeNPM()
		ctx := context.Background()
		if err := objectstore.EnsureBuckets(ctx, env.Store, buckets.Files, buckets.Mirror, buckets.Meta, buckets.MirrorMeta, buckets.Incoming); err != nil {
			t.Fatal(err)
		}
		pub = &activities.Publish{
			Primary: env.Store, Mirror: env.Store, Buckets: buckets,
			NPM:    &registry.NPM{BaseURL: npm.URL, Client: http.DefaultClient},
			GitHub: &registry.GitHub{BaseURL: npm.URL},
			HTTP:   http.DefaultClient, Extract: tarx.DefaultLimits,
			FirstImport: 10, CPU: process.NewLimiter(0), IOParallel: 16,
		}
	}
	pipeline := worker.New(env.Client, workflows.PipelineQueue, worker.Options{})
	workflows.RegisterPublish(pipeline)
	pub.RegisterPipeline(pipeline)
	compress := worker.New(env.Client, workflows.CompressQueue, worker.Options{MaxConcurrentActivityExecutionSize: 4})
	pub.RegisterCompress(compress)
	for _, w := range []worker.Worker{pipeline, compress} {
		if err := w.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(w.Stop)
	}
}

// publishOnce runs PublishVersion for one version and waits for it.
func publishOnce(ctx context.Context, pkg catalog.Package, version string) (*workflows.PublishOutput, error) {
	co := workflows.PublishChildOptions(pkg.Name, version)
	run, err := env.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID: co.WorkflowID, TaskQueue: co.TaskQueue, WorkflowIDReusePolicy: co.WorkflowIDReusePolicy,
		TypedSearchAttributes: co.TypedSearchAttributes,
	}, workflows.PublishVersion, workflows.PublishInput{VersionRef: activities.VersionRef{
		PackageRef: activities.PackageRef{Name: pkg.Name, Package: &pkg}, Version: version}})
	if err != nil {
		return nil, err
	}
	var out workflows.PublishOutput
	return &out, run.Get(ctx, &out)
}

func testContext(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	return ctx
}
