//go:build chaos

package chaos

import (
	"context"
	"fmt"
	"testing"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/edgeflow/edgeflow/integration/e2echeck"
	"github.com/edgeflow/edgeflow/internal/faultproxy"
	"github.com/edgeflow/edgeflow/internal/keyring"
	"github.com/edgeflow/edgeflow/internal/migrate"
	"github.com/edgeflow/edgeflow/internal/migrate/migratetest"
	"github.com/edgeflow/edgeflow/internal/objectstore"
	"github.com/edgeflow/edgeflow/workflows/migrate/contract"
)

// migrateFaults are the issue's: 5% SlowDown, 1% connection resets, and
// latency spikes, on both the source and the destination.
var migrateFaults = faultproxy.Faults{SlowDown: 0.05, Reset: 0.01, Spike: 0.02, SpikeDelay: 500 * time.Millisecond}

// TestMigrateUnderFaults copies 20,000 objects (and the odd ones: keys
// with spaces, '+', '%' and unicode, zero bytes, one over the multipart
// cutoff) between two MinIO servers through fault proxies while the migrate
// worker processes are killed; then it compares every byte, the counters,
// the report and the dead letters, and counts the writes at the proxy.
func TestMigrateUnderFaults(t *testing.T) {
	f, recordFigures := startFigures(t, "migrate")
	defer recordFigures()
	ctx := context.Background()
	count, kills := 20_000, 10
	if *soak {
		count, kills = 60_000, 30
	}

	objs := append(e2echeck.Generated(count, 77), migratetest.OddObjects(t, 7<<20)...)
	srcBucket := migratetest.Bucket(t, env.primaryStore, "chaos-src")
	seed(t, env.primaryStore, srcBucket, objs)
	dstBucket := migratetest.Bucket(t, env.mirrorStore, "chaos-dst")

	// The job store stays direct: the faults are between the job and the
	// buckets it copies.
	rig := startMigrateRig(t, "migrate", "chaos-migrate-jobs")
	keys, jobs, workers := rig.keys, rig.jobs, rig.workers
	srcProxy := faultproxy.New(env.primary.Endpoint, migrateFaults, 21)
	defer srcProxy.Close()
	dstProxy := faultproxy.New(env.mirror.Endpoint, migrateFaults, 22)
	defer dstProxy.Close()

	job := fmt.Sprintf("chaos-%d", time.Now().UnixNano())
	in := migrateInput(t, keys, job, srcProxy.Endpoint, srcBucket, dstProxy.Endpoint, dstBucket)
	run := startMigration(ctx, t, in)
	killCap := kills
	stopKilling := make(chan struct{})
	killed := killer(workers, 20*time.Second, 9, stopKilling)
	var st contract.Status
	copyStarted := time.Now()
	ended := jobEnded(ctx, t, run, job, &st)
	eventually(t, 20*time.Minute, "the job ends", func() (bool, string) {
		total := 0
		for _, w := range workers {
			total += w.Kills()
		}
		if total >= kills {
			stopOnce(stopKilling)
		}
		return ended()
	})
	copyTook := time.Since(copyStarted)
	stopOnce(stopKilling)
	kills = <-killed
	srcProxy.SetFaults(faultproxy.Faults{})
	dstProxy.SetFaults(faultproxy.Faults{})
	src, dst := srcProxy.Counts(), dstProxy.Counts()

	n := int64(len(objs))
	f.faults = int64(kills) + src.Faults() + dst.Faults()
	f.operations = src.Requests + dst.Requests
	f.note("%d objects (%d generated, and the odd ones: zero bytes, keys with spaces, '+', '%%' and unicode, one of 7 MiB over the 6 MiB multipart cutoff), %d bytes, copied in %s",
		n, count, e2echeck.TotalBytes(objs), copyTook.Round(time.Second))
	f.note("%d migrate worker processes killed with SIGKILL (2 processes, one every 10–30 s until %d kills or the end; %d process starts in all)", kills, killCap, startsOf(workers))
	f.note("S3 proxies: source %d requests, %d SlowDown, %d reset, %d latency spikes; destination %d requests, %d SlowDown, %d reset, %d spikes",
		src.Requests, src.SlowDowns, src.Resets, src.Spikes, dst.Requests, dst.SlowDowns, dst.Resets, dst.Spikes)

	// The counters are exact.
	if st.State != contract.StateCompleted || st.Listed != n || st.Copied != n || st.Skipped != 0 || st.Failed != 0 ||
		st.Bytes != e2echeck.TotalBytes(objs) || st.ListedBytes != e2echeck.TotalBytes(objs) || st.Verified != n || st.Mismatched != 0 {
		t.Errorf("status %+v; want %d objects and %d bytes listed, copied and verified, nothing else", st, n, e2echeck.TotalBytes(objs))
		f.lost++
	} else {
		f.verified++
	}
	f.note("the job's counters: listed %d, copied %d, skipped %d, failed %d, verified %d, mismatched %d, bytes %d (throttled %d, retried %d)",
		st.Listed, st.Copied, st.Skipped, st.Failed, st.Verified, st.Mismatched, st.Bytes, st.Throttled, st.Retried)

	// Every object at the destination, byte for byte.
	identical, different := compareAll(t, dstBucket, in.KeyMap(), objs)
	f.verified += identical
	f.lost += different
	f.note("destination read back: %d objects byte-identical to the source, %d missing or different", identical, different)

	// Every object written exactly once, and nothing else written.
	writes := migrate.WithoutProbes(dstProxy.Writes())
	var once, twice int64
	for _, o := range objs {
		switch w := writes[dstBucket+"/"+in.KeyMap().Dest(o.Key)]; w {
		case 1:
			once++
		default:
			t.Errorf("%s written %d times at the destination, want once", o.Key, w)
			twice++
		}
	}
	if len(writes) != len(objs) {
		t.Errorf("%d keys written at the destination, want %d", len(writes), len(objs))
		twice++
	}
	f.verified += once
	f.lost += twice
	f.note("writes counted at the destination proxy: %d objects written exactly once, %d not", once, twice)

	// The report: one line per object, all copied; no dead letter left.
	results := map[string]int{}
	if err := jobs.ForEachResult(ctx, job, st.Execution, func(r migrate.ObjectResult) error {
		if r.Status == migrate.StatusCopied {
			results[r.Key]++
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	var reported, misreported int64
	for _, o := range objs {
		if results[o.Key] == 1 {
			reported++
		} else {
			t.Errorf("%s: %d copied lines in the report, want 1", o.Key, results[o.Key])
			misreported++
		}
	}
	f.verified += reported
	f.lost += misreported
	dead := migratetest.DeadLetters(t, jobs, job, st.Execution)
	for _, d := range dead {
		t.Errorf("dead letter for %s, which was copied: %s", d.Key, d.Error)
	}
	f.lost += int64(len(dead))
	f.note("the job's report: %d objects reported copied once, %d not; %d dead letters left for objects that were copied", reported, misreported, len(dead))
	if f.lost != 0 {
		t.Errorf("lost %d", f.lost)
	}
}

// jobEnded is eventually's check that a migration has ended: it fills st with
// the job's result, and fails the test if the workflow failed.
func jobEnded(ctx context.Context, t testing.TB, run client.WorkflowRun, job string, st *contract.Status) func() (bool, string) {
	return func() (bool, string) {
		desc, err := env.client.DescribeWorkflow(ctx, contract.MigrationWorkflowID(job), "")
		if err != nil {
			return false, err.Error()
		}
		if desc.Status == enums.WORKFLOW_EXECUTION_STATUS_RUNNING {
			return false, "running"
		}
		if err := run.Get(ctx, st); err != nil {
			t.Fatalf("the job failed: %v", err)
		}
		return true, ""
	}
}

func stopOnce(c chan struct{}) {
	select {
	case <-c:
	default:
		close(c)
	}
}

// seed puts the objects into the source bucket.
func seed(t *testing.T, s objectstore.Store, bucket string, objs []migratetest.Object) {
	t.Helper()
	if err := e2echeck.Seed(context.Background(), s, bucket, objs); err != nil {
		t.Fatalf("seed the source: %v", err)
	}
}

// compareAll reads every copy back from the destination store directly.
func compareAll(t *testing.T, bucket string, m migrate.KeyMap, objs []migratetest.Object) (identical, different int64) {
	t.Helper()
	return e2echeck.Compare(context.Background(), env.mirrorStore, bucket, m, objs, func(o migratetest.Object, got []byte, err error) {
		t.Errorf("%s at the destination: %d bytes, %v (source %d bytes)", o.Key, len(got), err, len(o.Data))
	})
}

func migrateInput(t *testing.T, keys *keyring.Keyring, job, srcEndpoint, srcBucket, dstEndpoint, dstBucket string) contract.JobInput {
	t.Helper()
	seal := func(access, secret, side string, store migrate.StoreBinding) migrate.SealedCredentials {
		sc, err := migrate.SealCredentials(keys, migrate.Credentials{AccessKey: access, SecretKey: secret}, job, side, store)
		if err != nil {
			t.Fatal(err)
		}
		return sc
	}
	return contract.JobInput{
		Job: job, Account: "chaos", Overwrite: migrate.OverwriteIfDifferent, Verify: true,
		Source: contract.Endpoint{Endpoint: srcEndpoint, Location: migrate.Location{Bucket: srcBucket},
			Credentials: seal(env.primary.AccessKey, env.primary.SecretKey, migrate.SideSource, migrate.StoreBinding{Endpoint: srcEndpoint, Bucket: srcBucket})},
		Dest: contract.Endpoint{Endpoint: dstEndpoint, Location: migrate.Location{Bucket: dstBucket, Prefix: "copy/"},
			Credentials: seal(env.mirror.AccessKey, env.mirror.SecretKey, migrate.SideDest, migrate.StoreBinding{Endpoint: dstEndpoint, Bucket: dstBucket, Prefix: "copy/"})},
		Settings: contract.Settings{PageSize: 1000, PagesInFlight: 4, Concurrency: 16,
			MultipartCutoff: 6 << 20, PartSize: 5 << 20, PartConcurrency: 3, CopyCutoff: 6 << 20,
			// A transfer on a killed worker is retried within seconds.
			HeartbeatTimeout: 5 * time.Second, ClockSkew: time.Second, WatchEvery: time.Minute},
	}
}
