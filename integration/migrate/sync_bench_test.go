package migrate_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/edgeflow/edgeflow/internal/migrate/jobclient"
	"github.com/edgeflow/edgeflow/internal/migrate/migratetest"
	"github.com/edgeflow/edgeflow/internal/objectstore"
	"github.com/edgeflow/edgeflow/workflows/migrate/contract"
)

// BenchmarkLiveBucketSync measures a live migration's steps on a bucket of
// 5,000 objects of 1-64 KiB between the two MinIO servers, with the
// defaults users get: the bulk copy, then rounds of a sync after 1% of the
// objects changed (half of them keeping their size), a sync with nothing
// changed, and a cutover. Each sync lists the whole source and compares it
// with the destination. Medians over the rounds (-benchtime=Nx: N rounds).
func BenchmarkLiveBucketSync(b *testing.B) {
	startWorker(b, 100)
	const n, changedPerRound = 5000, 50
	rng := rand.New(rand.NewPCG(5, 6))
	objs := make([]migratetest.Object, n)
	for i := range objs {
		data := make([]byte, 1024+rng.IntN(63*1024))
		for j := range data {
			data[j] = byte(rng.Uint32())
		}
		objs[i] = migratetest.Object{Key: fmt.Sprintf("lib-%03d/%d/file-%05d.js", i%300, i%7, i), Data: data}
	}
	srcBucket := migratetest.Bucket(b, env.Store, "syncb-src")
	migratetest.Seed(b, env.Store, srcBucket, objs)
	dstBucket := migratetest.Bucket(b, env.Store2, "syncb-dst")
	job := fmt.Sprintf("syncb-%d", time.Now().UnixNano())
	in := jobInput(b, job, source(srcBucket), dest2(env.MinIO2.Endpoint, dstBucket, ""))
	in.Settings = contract.Settings{} // the defaults users get
	began := time.Now()
	if st, err := wait(b, start(b, in)); err != nil || st.Copied != n {
		b.Fatalf("bulk: %+v %v", st, err)
	}
	bulk := time.Since(began)

	ctx := context.Background()
	base, err := jobclient.SyncBase(ctx, env.Client, job)
	if err != nil {
		b.Fatal(err)
	}
	sync := func(run contract.SyncRun) (contract.Status, time.Duration) {
		began := time.Now()
		r, err := jobclient.StartSync(ctx, env.Client, base, run)
		if err != nil {
			b.Fatal(err)
		}
		st, err := jobclient.Result(ctx, r)
		if err != nil || st.State != contract.StateCompleted {
			b.Fatalf("sync: %+v %v", st, err)
		}
		return st, time.Since(began)
	}
	var changedRuns, idleRuns []float64
	var last contract.Status
	b.ResetTimer()
	for round := range b.N {
		for i := range changedPerRound {
			o := &objs[(round*changedPerRound+i)*97%n]
			data := bytes.Clone(o.Data)
			if i%2 == 0 {
				data[0] ^= 0xff // the same size: told by the ETag
			} else {
				data = append(data, byte(round))
			}
			if _, err := env.Store.Put(ctx, srcBucket, o.Key, bytes.NewReader(data), int64(len(data)), objectstore.PutOptions{}); err != nil {
				b.Fatal(err)
			}
			o.Data = data
		}
		st, took := sync(contract.SyncRun{})
		if st.Listed != n || st.Copied != changedPerRound || st.Changed != changedPerRound {
			b.Fatalf("sync after 1%% changed: %+v", st)
		}
		changedRuns = append(changedRuns, took.Seconds())
		last = st
		st, took = sync(contract.SyncRun{})
		if st.Copied != 0 || st.Unchanged != n {
			b.Fatalf("sync with nothing changed: %+v", st)
		}
		idleRuns = append(idleRuns, took.Seconds())
	}
	b.StopTimer()
	st, took := sync(contract.SyncRun{Cutover: true})
	if st.Identical == nil || !*st.Identical {
		b.Fatalf("cutover: %+v", st)
	}
	median := func(v []float64) float64 { slices.Sort(v); return v[len(v)/2] }
	b.ReportMetric(bulk.Seconds(), "bulk-s")
	b.ReportMetric(median(changedRuns), "sync-1%-s")
	b.ReportMetric(median(idleRuns), "sync-0%-s")
	b.ReportMetric(took.Seconds(), "cutover-s")
	b.ReportMetric(float64(last.Listed), "listed")
	b.ReportMetric(float64(last.Copied), "copied")
	b.Logf("%d objects: bulk %.2fs; sync after 1%% changed %.2fs (listed %d, copied %d, lag %.2fs); nothing changed %.2fs; cutover %.2fs (verified %d)",
		n, bulk.Seconds(), median(changedRuns), last.Listed, last.Copied, *last.LagSeconds, median(idleRuns), took.Seconds(), st.Verified)
}
