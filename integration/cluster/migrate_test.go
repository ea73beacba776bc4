//go:build cluster

package cluster

import (
	"context"
	"fmt"
	"testing"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/edgeflow/edgeflow/integration/e2echeck"
	"github.com/edgeflow/edgeflow/internal/keyring"
	"github.com/edgeflow/edgeflow/internal/migrate"
	"github.com/edgeflow/edgeflow/internal/migrate/migratetest"
	"github.com/edgeflow/edgeflow/internal/objectstore"
	"github.com/edgeflow/edgeflow/workflows/migrate/contract"
)

// testMigrate copies 5,000 objects between two buckets of the distributed
// MinIO through the cluster's migrate pool, kills the matching service with
// SIGKILL once copies are under way and stops a MinIO node for the rest of
// the job, then checks the job's counters and every byte at the
// destination.
func testMigrate(t *testing.T) {
	f := &figures{product: "migrate"}
	defer record(f)
	ctx := context.Background()
	const count = 5000
	objs := e2echeck.Generated(count, 26)
	src, dst := "cluster-src", "cluster-dst"
	// Every call to the store waits out one that throttles or heals (the
	// publish part stopped and started a node just before).
	if err := e2echeck.Retry(ctx, e2echeck.StoreWait, "create the buckets", func() error {
		return objectstore.EnsureBuckets(ctx, store, src, dst)
	}); err != nil {
		t.Fatal(err)
	}
	if err := e2echeck.Seed(ctx, store, src, objs); err != nil {
		t.Fatalf("seed the source: %v", err)
	}
	jobs := migrate.JobStore{Store: store, Bucket: "migrate-jobs"}
	if err := e2echeck.Retry(ctx, e2echeck.StoreWait, "create the jobs' bucket", func() error { return jobs.Ensure(ctx) }); err != nil {
		t.Fatal(err)
	}
	// The workers open the job's credentials with the cluster's codec
	// keys (DATA_DIR's key file); the test seals them with the same.
	keys, err := keyring.LoadFile(keyring.Codec.DevPath(dir))
	if err != nil {
		t.Fatal(err)
	}
	job := fmt.Sprintf("cluster-%d", time.Now().UnixNano())
	seal := func(side string, store migrate.StoreBinding) migrate.SealedCredentials {
		sc, err := migrate.SealCredentials(keys, migrate.Credentials{AccessKey: "clusteraccess", SecretKey: "cluster-secret-1"}, job, side, store)
		if err != nil {
			t.Fatal(err)
		}
		return sc
	}
	in := contract.JobInput{
		Job: job, Account: "cluster", Overwrite: migrate.OverwriteIfDifferent, Verify: true,
		Source: contract.Endpoint{Endpoint: cl.MinIO.Endpoint, Location: migrate.Location{Bucket: src}, Credentials: seal(migrate.SideSource, migrate.StoreBinding{Endpoint: cl.MinIO.Endpoint, Bucket: src})},
		Dest:   contract.Endpoint{Endpoint: cl.MinIO.Endpoint, Location: migrate.Location{Bucket: dst, Prefix: "copy/"}, Credentials: seal(migrate.SideDest, migrate.StoreBinding{Endpoint: cl.MinIO.Endpoint, Bucket: dst, Prefix: "copy/"})},
		Settings: contract.Settings{PageSize: 500, PagesInFlight: 4, Concurrency: 16,
			MultipartCutoff: 6 << 20, PartSize: 5 << 20, PartConcurrency: 3, CopyCutoff: 6 << 20,
			HeartbeatTimeout: 10 * time.Second, ClockSkew: time.Second, WatchEvery: time.Minute},
	}
	id := contract.MigrationWorkflowID(job)
	run, err := tc.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: contract.TaskQueue,
		TypedSearchAttributes: temporal.NewSearchAttributes(contract.JobKey.ValueSet(job),
			contract.SourceBucketKey.ValueSet(src), contract.DestBucketKey.ValueSet(dst)),
	}, contract.WorkflowTypeMigration, in)
	if err != nil {
		t.Fatal(err)
	}
	say("migrate: job %s started: %d objects %s → %s", job, count, src, dst)

	// Mid-migration: once objects are being copied.
	eventually(t, 10*time.Minute, "the first copies", func() (bool, string) {
		st, err := status(ctx, id)
		if err != nil {
			return false, err.Error()
		}
		return st.Copied > 0, fmt.Sprintf("%+v", st)
	})
	killTemporal(t, "matching")
	f.faults++
	restart := stopMinIONode(t, 1)
	f.faults++
	eventually(t, 20*time.Minute, "the job ends", func() (bool, string) {
		desc, err := tc.DescribeWorkflow(ctx, id, "")
		if err != nil {
			return false, err.Error()
		}
		return desc.Status != enums.WORKFLOW_EXECUTION_STATUS_RUNNING, desc.Status.String()
	})
	restart()
	var st contract.Status
	if err := run.Get(ctx, &st); err != nil {
		t.Fatalf("the job failed: %v", err)
	}
	say("migrate: the job ended: listed %d, copied %d, skipped %d, failed %d, verified %d", st.Listed, st.Copied, st.Skipped, st.Failed, st.Verified)
	total := e2echeck.TotalBytes(objs)
	f.operations = count + st.Listed + st.Copied
	if st.State != contract.StateCompleted || st.Listed != count || st.Copied != count || st.Failed != 0 || st.Verified != count || st.Bytes != total {
		t.Errorf("status %+v; want %d objects (%d bytes) listed, copied and verified, none failed", st, count, total)
		f.lost++
	}
	// Every object at the destination, byte for byte.
	same, diff := e2echeck.Compare(ctx, store, dst, in.KeyMap(), objs, func(o migratetest.Object, got []byte, err error) {
		t.Errorf("%s at the destination: %d bytes, %v (source %d bytes)", o.Key, len(got), err, len(o.Data))
	})
	f.verified += same
	f.lost += diff
	f.operations += count
	say("migrate: %d objects byte-identical at the destination, %d missing or different", same, diff)
}

func status(ctx context.Context, id string) (contract.Status, error) {
	var st contract.Status
	qctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	v, err := tc.QueryWorkflow(qctx, id, "", contract.StatusQuery)
	if err != nil {
		return st, err
	}
	return st, v.Get(&st)
}
