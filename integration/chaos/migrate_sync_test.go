//go:build chaos

package chaos

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/edgeflow/edgeflow/integration/e2echeck"
	"github.com/edgeflow/edgeflow/internal/faultproxy"
	"github.com/edgeflow/edgeflow/internal/migrate"
	"github.com/edgeflow/edgeflow/internal/migrate/jobclient"
	"github.com/edgeflow/edgeflow/internal/migrate/migratetest"
	"github.com/edgeflow/edgeflow/workflows/migrate/contract"
)

// TestMigrateSyncUnderKills copies a bucket, changes its source (new
// objects, changed ones — half of them the same size —, deleted ones),
// and syncs it with --delete-extraneous through fault proxies while the
// worker processes are killed with SIGKILL at set points of the sync's
// progress. Then every source object must be at the destination byte for
// byte, the deleted ones gone, the counters exact, and every new or changed
// object written exactly once (the writes counted at the proxy).
func TestMigrateSyncUnderKills(t *testing.T) {
	f, recordFigures := startFigures(t, "migrate-sync")
	defer recordFigures()
	ctx := context.Background()
	count, added, changedN, deletedN := 6_000, 1_500, 300, 300
	if *soak {
		count, added, changedN, deletedN = 20_000, 5_000, 1_000, 1_000
	}

	objs := e2echeck.Generated(count, 91)
	srcBucket := migratetest.Bucket(t, env.primaryStore, "chaos-sync-src")
	seed(t, env.primaryStore, srcBucket, objs)
	dstBucket := migratetest.Bucket(t, env.mirrorStore, "chaos-sync-dst")
	rig := startMigrateRig(t, "migrate-sync", "chaos-migrate-jobs")
	keys, jobs, workers := rig.keys, rig.jobs, rig.workers
	srcProxy := faultproxy.New(env.primary.Endpoint, faultproxy.Faults{}, 31)
	defer srcProxy.Close()
	dstProxy := faultproxy.New(env.mirror.Endpoint, faultproxy.Faults{}, 32)
	defer dstProxy.Close()

	// The bulk copy, without faults: what is tested is the sync.
	job := fmt.Sprintf("chaos-sync-%d", time.Now().UnixNano())
	in := migrateInput(t, keys, job, srcProxy.Endpoint, srcBucket, dstProxy.Endpoint, dstBucket)
	in.Settings.PageSize = 500
	run := startMigration(ctx, t, in)
	var bulk contract.Status
	eventually(t, 20*time.Minute, "the bulk copy ends", jobEnded(ctx, t, run, job, &bulk))
	if bulk.State != contract.StateCompleted || bulk.Copied != int64(count) {
		t.Fatalf("bulk copy: %+v", bulk)
	}
	var bulkEnd time.Time
	for _, o := range migratetest.List(t, env.mirrorStore, dstBucket, "copy/") {
		if o.LastModified.After(bulkEnd) {
			bulkEnd = o.LastModified
		}
	}

	// The source changes while the destination is in service.
	now := map[string][]byte{}
	for _, o := range objs {
		now[o.Key] = o.Data
	}
	changed := map[string]bool{}
	var changes []migratetest.Object
	for i := 0; i < changedN; i++ {
		o := objs[i*count/changedN]
		data := bytes.Clone(o.Data)
		if i%2 == 0 && len(data) > 0 {
			data[len(data)/2] ^= 0x5a // the same size: the ETag tells
		} else {
			data = append(data, "changed"...)
		}
		changes = append(changes, migratetest.Object{Key: o.Key, Data: data})
		changed[o.Key] = true
		now[o.Key] = data
	}
	for _, o := range e2echeck.Generated(added, 92) {
		o.Key = "added/" + o.Key
		changes = append(changes, o)
		now[o.Key] = o.Data
	}
	seed(t, env.primaryStore, srcBucket, changes)
	var deleted []string
	for i := 0; i < deletedN; i++ {
		o := objs[i*count/deletedN+1]
		if changed[o.Key] {
			continue
		}
		if err := env.primaryStore.Delete(ctx, srcBucket, o.Key); err != nil {
			t.Fatal(err)
		}
		deleted = append(deleted, o.Key)
		delete(now, o.Key)
	}
	// A retried page takes an identical object written since the sync
	// started (less the 1 s clock skew) for its own copy: the bulk copies
	// must be older than that on the store's clock.
	eventually(t, time.Minute, "the bulk copies are older than the clock skew", func() (bool, string) {
		return time.Since(bulkEnd) > in.Settings.ClockSkew+time.Second, "too recent"
	})

	dstProxy.ResetWrites()
	srcProxy.SetFaults(migrateFaults)
	dstProxy.SetFaults(migrateFaults)
	base, err := jobclient.SyncBase(ctx, env.client, job)
	if err != nil {
		t.Fatal(err)
	}
	syncStarted := time.Now()
	srun, err := jobclient.StartSync(ctx, env.client, base, contract.SyncRun{DeleteExtraneous: true})
	if err != nil {
		t.Fatal(err)
	}
	// SIGKILL at set points of the copies, alternating workers, so that
	// the kills land mid-sync however fast the machine is.
	copies := int64(len(changes))
	points := []int64{copies / 10, copies * 3 / 10, copies / 2, copies * 7 / 10}
	kills := 0
	var st contract.Status
	done := false
	eventually(t, 20*time.Minute, "the sync ends", func() (bool, string) {
		cur, err := jobclient.QueryRun(ctx, env.client, job, srun.GetID())
		if err != nil {
			return false, err.Error()
		}
		if contract.Ended(cur.State) {
			st, done = cur, true
			return true, ""
		}
		if kills < len(points) && cur.Copied >= points[kills] {
			workers[kills%2].kill()
			kills++
		}
		return false, fmt.Sprintf("copied %d, %d kills", cur.Copied, kills)
	})
	syncTook := time.Since(syncStarted)
	srcProxy.SetFaults(faultproxy.Faults{})
	dstProxy.SetFaults(faultproxy.Faults{})
	if !done {
		t.Fatal("the sync did not end")
	}
	src, dst := srcProxy.Counts(), dstProxy.Counts()
	f.faults = int64(kills) + src.Faults() + dst.Faults()
	f.operations = src.Requests + dst.Requests
	f.note("a bucket of %d objects copied, then changed at the source: %d added, %d changed (half of them the same size), %d deleted; the sync (--delete-extraneous, --verify) took %s",
		count, added, changedN, len(deleted), syncTook.Round(time.Second))
	f.note("%d migrate worker processes killed with SIGKILL during the sync (at 10%%, 30%%, 50%% and 70%% of its copies, alternating the 2 processes)", kills)
	f.note("S3 proxies during the sync: source %d requests, %d SlowDown, %d reset, %d spikes; destination %d requests, %d SlowDown, %d reset, %d spikes",
		src.Requests, src.SlowDowns, src.Resets, src.Spikes, dst.Requests, dst.SlowDowns, dst.Resets, dst.Spikes)
	if kills < len(points) {
		t.Errorf("only %d of %d kills landed before the sync ended: the case did not test what it says", kills, len(points))
		f.lost++
	}

	// The counters are exact. A change the killed worker had copied is
	// counted as copied, not as changed: its retry cannot tell.
	recovered := int64(0)
	if err := jobs.ForEachResult(ctx, job, st.Execution, func(r migrate.ObjectResult) error {
		if r.Reason == migrate.ReasonCopiedByJob && changed[r.Key] {
			recovered++
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	n, nd := int64(len(now)), int64(len(deleted))
	if st.State != contract.StateCompleted || st.Listed != n || st.Copied != copies || st.Changed+recovered != int64(changedN) ||
		st.Unchanged != n-copies || st.Failed != 0 || st.Extraneous != nd || st.Deleted != nd || st.Verified != n || st.Mismatched != 0 {
		t.Errorf("sync status %+v; want %d listed and verified, %d copied (%d changed), %d unchanged, %d extraneous and deleted", st, n, copies, changedN, n-copies, nd)
		f.lost++
	} else {
		f.verified++
	}
	f.note("the sync's counters: listed %d, copied %d (changed %d, and %d changes found copied by a killed attempt), unchanged %d, extraneous %d, deleted %d, failed %d, verified %d (throttled %d, retried %d)",
		st.Listed, st.Copied, st.Changed, recovered, st.Unchanged, st.Extraneous, st.Deleted, st.Failed, st.Verified, st.Throttled, st.Retried)

	// Every source object at the destination, byte for byte; nothing else.
	var current []migratetest.Object
	for k, d := range now {
		current = append(current, migratetest.Object{Key: k, Data: d})
	}
	identical, different := compareAll(t, dstBucket, in.KeyMap(), current)
	f.verified += identical
	f.lost += different
	left := 0
	for _, o := range migratetest.List(t, env.mirrorStore, dstBucket, "copy/") {
		if _, ok := now[o.Key[len("copy/"):]]; !ok {
			t.Errorf("%s is at the destination, deleted at the source", o.Key)
			left++
		}
	}
	f.lost += int64(left)
	f.verified += nd - int64(left)
	f.note("destination read back: %d objects byte-identical to the source, %d missing or different; %d of the %d deleted objects left behind", identical, different, left, nd)

	// Every new or changed object written exactly once, nothing else.
	writes := migrate.WithoutProbes(dstProxy.Writes())
	var once, other int64
	for _, o := range changes {
		if w := writes[dstBucket+"/"+in.KeyMap().Dest(o.Key)]; w == 1 {
			once++
		} else {
			t.Errorf("%s written %d times by the sync, want once", o.Key, w)
			other++
		}
	}
	if len(writes) != len(changes) {
		t.Errorf("%d keys written by the sync, want the %d new and changed", len(writes), len(changes))
		other++
	}
	f.verified += once
	f.lost += other
	f.note("writes counted at the destination proxy during the sync: %d new or changed objects written exactly once, %d not", once, other)
	if f.lost != 0 {
		t.Errorf("lost %d", f.lost)
	}
}
