package migrate_test

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/edgeflow/edgeflow/internal/migrate/migratetest"
	"github.com/edgeflow/edgeflow/internal/objectstore"
	"github.com/edgeflow/edgeflow/workflows/migrate/contract"
)

var benchHeadline = flag.Int("migrate.headline-objects", 75000, "objects of 1-64 KiB in BenchmarkMigrateHeadline (Super Slurper's headline: 75,000)")

// BenchmarkMigrateHeadline copies Super Slurper's headline size, 75,000
// objects (of 1-64 KiB, 2.4 GB), once each with rclone copy -M, Migrate
// with the defaults users get, and Migrate writing each object on its own
// (the path of a destination that does not extract archives), and reports
// the time of each. One run each: at this size a run is minutes, and the
// rotating comparison is BenchmarkMigrateSmallObjects'.
func BenchmarkMigrateHeadline(b *testing.B) {
	setup(b)
	a := startWorker(b, 100)
	n := *benchHeadline
	srcBucket := migratetest.Bucket(b, env.Store, "headline-src")
	began := time.Now()
	total := seedSmall(b, srcBucket, n)
	b.Logf("seeded %d objects (%.1f GB) in %s (load %s)", n, float64(total)/1e9, time.Since(began).Round(time.Second), loadAverage())
	b.ReportMetric(float64(n), "objects")
	b.ReportMetric(float64(total)/1e6, "MB")
	const transfers = 64 // rclone's transfers and checkers: the pool's best in BenchmarkMigrateSmallObjects
	job := 0
	migrateInto := func(perObject bool) func(string) {
		return func(dst string) {
			a.PerObjectWrites.Store(perObject)
			defer a.PerObjectWrites.Store(false)
			job++
			in := jobInput(b, fmt.Sprintf("headline-%d-%d", time.Now().UnixNano(), job), source(srcBucket), dest2(env.MinIO2.Endpoint, dst, ""))
			in.Settings = contract.Settings{} // the defaults users get
			in.Account = fmt.Sprintf("headline-%d", job)
			st, err := waitWithin(b, start(b, in), 2*time.Hour)
			if err != nil || st.Copied != int64(n) {
				b.Fatalf("job: %+v %v", st, err)
			}
		}
	}
	sides := []benchSide{{"migrate", migrateInto(false)}, {"per-object", migrateInto(true)}}
	if rc := rcloneBinary(b); rc != "" {
		sides = append([]benchSide{{"rclone", func(dst string) { rcloneCopy(b, rc, srcBucket, dst, transfers) }}}, sides...)
	}
	took := map[string]time.Duration{}
	for _, side := range sides {
		took[side.name] = runOnce(b, n, side.copy)
		b.ReportMetric(took[side.name].Seconds(), side.name+"-s")
		b.Logf("%s: %s, %.0f objects/s (load %s)", side.name, took[side.name].Round(time.Second), float64(n)/took[side.name].Seconds(), loadAverage())
	}
	if r, ok := took["rclone"]; ok {
		b.ReportMetric(r.Seconds()/took["migrate"].Seconds(), "migrate/rclone")
		b.ReportMetric(r.Seconds()/took["per-object"].Seconds(), "per-object/rclone")
	}
}

// seedSmall writes n objects of 1-64 KiB (seeded from their index, so
// never all in memory) as archives the store extracts, up to 8 MB a
// request, 4 at once, and returns their bytes.
func seedSmall(b testing.TB, bucket string, n int) int64 {
	const perBatch = 256
	batches := make(chan int)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var total int64
	var firstErr error
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for first := range batches {
				var entries []objectstore.BatchEntry
				var bytes int64
				for i := first; i < min(first+perBatch, n); i++ {
					rng := rand.New(rand.NewPCG(uint64(i), 3))
					data := make([]byte, 1024+rng.IntN(63*1024))
					for j := range data {
						data[j] = byte(rng.Uint32())
					}
					bytes += int64(len(data))
					entries = append(entries, objectstore.BatchEntry{Key: fmt.Sprintf("lib-%03d/%d/file-%06d.js", i%300, i%7, i), Data: data,
						Metadata: objectstore.Metadata{ContentType: "application/javascript"}})
				}
				err := env.Store.PutBatch(context.Background(), bucket, entries)
				mu.Lock()
				total += bytes
				if err != nil && firstErr == nil {
					firstErr = err
				}
				mu.Unlock()
			}
		}()
	}
	for first := 0; first < n; first += perBatch {
		batches <- first
	}
	close(batches)
	wg.Wait()
	if firstErr != nil {
		b.Fatalf("seeding: %v", firstErr)
	}
	return total
}
