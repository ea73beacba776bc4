//go:build cluster

// Package cluster runs every product on the cluster profile (`make
// cluster`'s devstack.StartCluster): Temporal's services as separate
// processes on PostgreSQL, MinIO in distributed mode, a Redis per data
// center and one Anywhere, two processes of everything. Each product's
// end-to-end path runs, then faults: the history service killed with
// SIGKILL mid-publish, the matching service mid-migration, one MinIO node
// stopped during both, one data center's Redis stopped during a spike. It
// prints `<product>: faults N, operations N, verified N, lost 0` per
// product. `make cluster-test` runs it (build tag cluster: about 30
// processes, out of `make test` and CI).
package cluster

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"

	"github.com/edgeflow/edgeflow/integration/e2echeck"
	"github.com/edgeflow/edgeflow/internal/devstack"
	"github.com/edgeflow/edgeflow/internal/objectstore"
	"github.com/edgeflow/edgeflow/internal/objectstore/s3"
	"github.com/edgeflow/edgeflow/internal/publish/registry/registrytest"
	"github.com/edgeflow/edgeflow/internal/testenv"
)

var (
	cl    *devstack.Cluster
	tc    client.Client
	store *s3.Store
	npm   *registrytest.Registry
	dir   string
)

// figures are one product's counts, printed at the end.
type figures struct {
	product                            string
	faults, operations, verified, lost int64
}

var (
	figMu   sync.Mutex
	results []*figures
)

func record(f *figures) {
	figMu.Lock()
	defer figMu.Unlock()
	results = append(results, f)
}

func say(format string, args ...any) {
	fmt.Printf("%s cluster | "+format+"\n", append([]any{time.Now().UTC().Format("15:04:05")}, args...)...)
}

func TestMain(m *testing.M) {
	started := time.Now()
	code := run(m)
	lost := int64(0)
	for _, f := range results {
		fmt.Printf("%s: faults %d, operations %d, verified %d, lost %d\n", f.product, f.faults, f.operations, f.verified, f.lost)
		lost += f.lost
	}
	if lost != 0 && code == 0 {
		code = 1
	}
	fmt.Printf("cluster-test took %s (the cluster's start included)\n", time.Since(started).Round(time.Second))
	os.Exit(code)
}

func run(m *testing.M) int {
	root, err := devstack.RepoRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	// Its own directory, fresh: a `make cluster` running meanwhile keeps
	// .data/cluster.
	dir = filepath.Join(root, ".data", "cluster-test")
	_ = os.RemoveAll(dir)
	logDir := filepath.Join(dir, "logs")
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	logs, closeLogs := devstack.LogFiles(logDir)
	defer closeLogs()
	npm = registrytest.New()
	defer npm.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	const access, secret = "clusteraccess", "cluster-secret-1"
	cl, err = devstack.StartCluster(ctx, devstack.ClusterOptions{
		DataDir: dir, BinDir: filepath.Join(root, "bin"), DBPassword: "cluster-db-secret",
		AccessKey: access, SecretKey: secret,
		CatalogDir: filepath.Join(dir, "catalog"),
		ProductEnv: []string{"NPM_REGISTRY=" + npm.URL, "GITHUB_API=" + npm.URL},
		// CLUSTER_UI=off leaves the Web UI out (a machine without ui-server).
		Headless: os.Getenv("CLUSTER_UI") == "off",
		Say:      say, Logs: logs,
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "cluster: %v (logs in %s)\n", err, logDir)
		if cl != nil {
			cl.Stop()
		}
		return 1
	}
	say("processes: %v", cl.ProcessNames())
	if tc, err = client.Dial(client.Options{HostPort: cl.Temporal.HostPort, Namespace: cl.Temporal.Namespace,
		Logger: sdklog.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		cl.Stop()
		return 1
	}
	if store, err = s3.New(s3.Config{Endpoint: cl.MinIO.Endpoint, AccessKey: access, SecretKey: secret}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		cl.Stop()
		return 1
	}
	if err := e2echeck.Retry(ctx, e2echeck.StoreWait, "create "+probeBucket, func() error {
		return objectstore.EnsureBuckets(ctx, store, probeBucket)
	}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		cl.Stop()
		return 1
	}
	code := m.Run()
	tc.Close()
	say("stopping the cluster")
	cl.Stop()
	if code != 0 {
		fmt.Fprintf(os.Stderr, "cluster: every process's log is in %s\n", logDir)
	}
	return code
}

// eventually polls check until it reports done, failing the test with its
// last word after the deadline.
func eventually(t testing.TB, within time.Duration, what string, check func() (bool, string)) {
	t.Helper()
	testenv.Eventually(t, within, 500*time.Millisecond, what, check)
}

// killTemporal kills a Temporal service with SIGKILL and waits until the
// supervisor has started it again.
func killTemporal(t *testing.T, service string) {
	t.Helper()
	name := "temporal-" + service
	pid, err := cl.Kill(name)
	if err != nil {
		t.Fatal(err)
	}
	say("killed %s (pid %d) with SIGKILL", name, pid)
	eventually(t, time.Minute, name+" restarted", func() (bool, string) {
		p := cl.Infra.Pid(name)
		return p != 0 && p != pid, fmt.Sprintf("pid %d", p)
	})
	say("%s is back (pid %d)", name, cl.Infra.Pid(name))
}

// probeBucket is where the suite writes its probes of the distributed
// MinIO (DistributedMinIO.WaitRejoined), away from every product's buckets.
const probeBucket = "cluster-probe"

// stopMinIONode stops one MinIO node; the returned func starts it again
// and waits until the cluster is whole: every node sees the others again
// and takes writes (a restarted node answers healthy before its peers
// reconnect to it; until then writes may get 503 SlowDownWrite, reads
// NoSuchKey, and the next fault would leave objects short of drives).
func stopMinIONode(t *testing.T, i int) func() {
	t.Helper()
	if err := cl.MinIO.StopNode(i); err != nil {
		t.Logf("stop %s: %v", devstack.NodeName(i), err)
	}
	say("stopped %s (%s): 3 of 4 drives left", devstack.NodeName(i), cl.MinIO.NodeEndpoint(i))
	return func() {
		if err := cl.MinIO.StartNode(i); err != nil {
			t.Fatal(err)
		}
		if err := cl.MinIO.WaitNode(context.Background(), i, 2*time.Minute); err != nil {
			t.Fatal(err)
		}
		if err := cl.MinIO.WaitRejoined(context.Background(), probeBucket, e2echeck.StoreWait); err != nil {
			t.Fatal(err)
		}
		say("%s is back, every node sees every drive and takes writes", devstack.NodeName(i))
	}
}

// TestCluster runs the products in order: the admit path reads what
// publish put on the edges.
func TestCluster(t *testing.T) {
	t.Run("publish", testPublish)
	t.Run("migrate", testMigrate)
	t.Run("admit", testAdmit)
}
