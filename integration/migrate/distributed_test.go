package migrate_test

import (
	"context"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/edgeflow/edgeflow/integration/e2echeck"
	"github.com/edgeflow/edgeflow/internal/devstack"
	"github.com/edgeflow/edgeflow/internal/migrate"
	"github.com/edgeflow/edgeflow/internal/migrate/migratetest"
	"github.com/edgeflow/edgeflow/internal/objectstore/s3"
	"github.com/edgeflow/edgeflow/internal/testenv"
	"github.com/edgeflow/edgeflow/workflows/migrate/contract"
)

// The cluster test's loss, on one machine: a job between two buckets of a
// distributed MinIO (4 nodes behind the devstack's balancer) while one node
// is stopped mid-job and started again. No object may become a dead letter
// (the store is degraded, not the objects), and every object is copied
// once and byte-identical.
func TestDistributedMinIONodeStopped(t *testing.T) {
	startWorker(t, 4)
	ctx := context.Background()
	logs := map[string]*testenv.SyncBuffer{}
	for i := range 4 {
		logs[devstack.NodeName(i)] = &testenv.SyncBuffer{}
	}
	startCtx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	dm, err := devstack.StartDistributedMinIO(startCtx, devstack.DistributedMinIOOptions{Dir: t.TempDir(), Nodes: 4,
		AccessKey: "distaccess", SecretKey: "distsecret1", Logs: func(name string) io.Writer { return logs[name] }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(dm.Stop)
	store, err := s3.New(s3.Config{Endpoint: dm.Endpoint, AccessKey: "distaccess", SecretKey: "distsecret1"})
	if err != nil {
		t.Fatal(err)
	}
	objs := migratetest.Small("d/", 2000, 4<<10)
	srcBucket := migratetest.Bucket(t, store, "dist-src")
	dstBucket := migratetest.Bucket(t, store, "dist-dst")
	// A fresh erasure set on a busy machine may answer 503 SlowDownWrite
	// (no write quorum for now) past minio-go's own retries: seeding waits
	// it out, as every seeding of a cluster does (e2echeck.Seed).
	if err := e2echeck.Seed(ctx, store, srcBucket, objs); err != nil {
		t.Fatalf("seed the source: %v", err)
	}

	s := side{endpoint: dm.Endpoint, access: "distaccess", secret: "distsecret1", bucket: srcBucket}
	d := s
	d.bucket, d.prefix = dstBucket, "copy/"
	job := fmt.Sprintf("dist-%d", time.Now().UnixNano())
	in := jobInput(t, job, s, d)
	in.Verify = true
	in.Settings.Concurrency = 16
	run := start(t, in)
	eventually(t, time.Minute, "the first page copied", func() bool { return status(t, job).Copied > 0 })
	if err := dm.StopNode(1); err != nil {
		t.Fatal(err)
	}
	time.Sleep(10 * time.Second)
	if err := dm.StartNode(1); err != nil {
		t.Fatal(err)
	}
	if err := dm.WaitNode(startCtx, 1, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	st, err := wait(t, run)
	if err != nil {
		t.Fatalf("the job: %v", err)
	}
	dead := deadLetterLines(t, job, st.Execution)
	if len(dead) > 0 || st.State != contract.StateCompleted || st.Failed != 0 || st.Copied != int64(len(objs)) {
		t.Fatalf("with a node stopped and started again: %+v\n%d dead letters:\n%s", st, len(dead), strings.Join(dead, "\n"))
	}
	// Copied once: one result per object, each copied. (Writes are not
	// counted through a proxy here: a proxy would answer the cut connection
	// with a 502 and hide the very failure this test is about.)
	results := map[string]int{}
	if err := jobs.ForEachResult(ctx, job, st.Execution, func(r migrate.ObjectResult) error {
		if r.Status != migrate.StatusCopied {
			t.Errorf("%s: %s (%s)", r.Key, r.Status, r.Error)
		}
		results[r.Key]++
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if n := results[o.Key]; n != 1 {
			t.Errorf("%s: %d results, want 1", o.Key, n)
		}
	}
	// Every copy byte-identical; a read the healing set throttles is tried
	// again (a copy missing or different is not).
	same, _ := e2echeck.Compare(ctx, store, dstBucket, in.KeyMap(), objs, func(o migratetest.Object, got []byte, err error) {
		t.Errorf("%s: %d bytes at the destination (%v), %d at the source", o.Key, len(got), err, len(o.Data))
	})
	if same != int64(len(objs)) {
		t.Fatalf("%d of %d copies byte-identical", same, len(objs))
	}
	t.Logf("a node of four stopped for 10 s: %d objects copied, none failed; waited %.1f s", st.Copied, st.WaitedSeconds)
}

// deadLetterLines are a run's dead letters, one line each: key, attempts,
// error.
func deadLetterLines(t *testing.T, job, execution string) []string {
	t.Helper()
	var lines []string
	for _, l := range migratetest.DeadLetters(t, jobs, job, execution) {
		lines = append(lines, fmt.Sprintf("%s (%d attempts): %s", l.Key, l.Attempts, l.Error))
	}
	return lines
}
