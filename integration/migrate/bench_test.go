package migrate_test

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/edgeflow/edgeflow/internal/migrate"
	"github.com/edgeflow/edgeflow/internal/migrate/migratetest"
	"github.com/edgeflow/edgeflow/internal/objectstore"
	"github.com/edgeflow/edgeflow/internal/testenv/loadtest"
	"github.com/edgeflow/edgeflow/workflows/migrate/contract"
)

var (
	benchSmall      = flag.Int("migrate.small-objects", 10000, "objects of 1-64 KiB in BenchmarkMigrateSmallObjects (the issue's full run: 75000)")
	benchLargeSize  = flag.String("migrate.large-size", "64MiB", "size of each object in BenchmarkMigrateLargeObjects (the issue's full run: 512MiB)")
	benchLargeCount = flag.Int("migrate.large-count", 8, "objects in BenchmarkMigrateLargeObjects")
	benchRuns       = flag.Int("migrate.runs", 3, "alternating runs of each side; medians are compared")
	benchPoolSize   = flag.Int("migrate.baseline-concurrency", 0, "the plain pool's concurrency; 0 measures the best first")
)

// BenchmarkMigrateSmallObjects copies many small objects between the two
// MinIO servers, alternately with Migrate (a job on Temporal, worker in
// this process, default settings) and with a plain Go worker pool on
// minio-go at its best concurrency (measured first, in the same run), and
// compares the median rates.
func BenchmarkMigrateSmallObjects(b *testing.B) {
	objs := make([]migratetest.Object, *benchSmall)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range objs {
		data := make([]byte, 1024+rng.IntN(63*1024))
		for j := range data {
			data[j] = byte(rng.Uint32())
		}
		objs[i] = migratetest.Object{Key: fmt.Sprintf("lib-%03d/%d/file-%05d.js", i%300, i%7, i), Data: data,
			Meta: objectstore.Metadata{ContentType: "application/javascript"}}
	}
	compare(b, objs, []int{16, 32, 64, 128}, false)
}

// BenchmarkMigrateLargeObjects does the same with a few large objects
// (multipart on both sides), in MB/s.
func BenchmarkMigrateLargeObjects(b *testing.B) {
	size, err := migrate.ParseSize(*benchLargeSize)
	if err != nil {
		b.Fatal(err)
	}
	objs := make([]migratetest.Object, *benchLargeCount)
	for i := range objs {
		data := make([]byte, size)
		rng := rand.New(rand.NewPCG(uint64(i), 9))
		for j := 0; j+8 <= len(data); j += 8 {
			v := rng.Uint64()
			for k := range 8 {
				data[j+k] = byte(v >> (8 * k))
			}
		}
		objs[i] = migratetest.Object{Key: fmt.Sprintf("big/%02d.bin", i), Data: data}
	}
	compare(b, objs, []int{1, 2, 4, 8}, true)
}

// benchSide is one way of copying a bucket in a comparison.
type benchSide struct {
	name string // its metrics' prefix
	copy func(dstBucket string)
}

// compare seeds the source once, finds the plain pool's best concurrency,
// then rotates the sides (the pool, rclone when installed, Migrate, and
// for small objects Migrate writing each object on its own: the path of a
// destination that does not extract archives), each into a fresh bucket,
// and reports.
func compare(b *testing.B, objs []migratetest.Object, concurrencies []int, large bool) {
	setup(b)
	a := startWorker(b, 100)
	srcBucket := migratetest.Bucket(b, env.Store, "bench-src")
	seedParallel(b, srcBucket, objs)
	total := totalBytes(objs)
	n := len(objs)
	b.ReportMetric(float64(n), "objects")
	b.ReportMetric(float64(total)/1e6, "MB")

	// The plain pool's best concurrency, on the whole set.
	best, bestRate := *benchPoolSize, 0.0
	if best > 0 {
		concurrencies = nil
	}
	for _, c := range concurrencies {
		d := runOnce(b, n, func(dst string) { plainPool(b, srcBucket, dst, c, large) })
		if rate := float64(n) / d.Seconds(); rate > bestRate {
			best, bestRate = c, rate
		}
		b.Logf("plain pool, %d at once: %.0f objects/s, %.1f MB/s", c, float64(n)/d.Seconds(), float64(total)/1e6/d.Seconds())
	}
	job := 0
	migrateJob := func(perObject bool) func(string) {
		return func(dst string) {
			a.PerObjectWrites.Store(perObject)
			defer a.PerObjectWrites.Store(false)
			job++
			in := jobInput(b, fmt.Sprintf("bench-%d-%d", time.Now().UnixNano(), job), source(srcBucket), dest2(env.MinIO2.Endpoint, dst, ""))
			in.Settings = contract.Settings{} // the defaults users get
			in.Account = fmt.Sprintf("bench-%d", job)
			st, err := wait(b, start(b, in))
			if err != nil || st.Copied != int64(n) {
				b.Fatalf("job: %+v %v", st, err)
			}
		}
	}
	sides := []benchSide{{"baseline", func(dst string) { plainPool(b, srcBucket, dst, best, large) }}}
	if rc := rcloneBinary(b); rc != "" {
		// rclone with as many transfers (and checkers) as the pool's best.
		sides = append(sides, benchSide{"rclone", func(dst string) { rcloneCopy(b, rc, srcBucket, dst, best) }})
	}
	sides = append(sides, benchSide{"migrate", migrateJob(false)})
	if !large {
		sides = append(sides, benchSide{"per-object", migrateJob(true)})
	}
	runs := make([][]time.Duration, len(sides))
	cpus := make([][]cpuUse, len(sides))
	for range *benchRuns {
		for i, side := range sides {
			before := readCPU(b)
			runs[i] = append(runs[i], runOnce(b, n, side.copy))
			cpus[i] = append(cpus[i], readCPU(b).since(before))
		}
	}
	unit, per := "objects/s", func(d time.Duration) float64 { return float64(n) / d.Seconds() }
	if large {
		unit, per = "MB/s", func(d time.Duration) float64 { return float64(total) / 1e6 / d.Seconds() }
	}
	b.ReportMetric(float64(best), "baseline-concurrency")
	// On a shared machine the run times move with the neighbours' load; the
	// CPU each side's whole system spent (both stores, Temporal, this
	// process) moves less, and says what the engine costs per object.
	sum := func(c cpuUse) float64 { return c.source + c.dest + c.temporal + c.self }
	medians, cpuTotals := make([]time.Duration, len(sides)), make([]float64, len(sides))
	for i, side := range sides {
		medians[i] = median(runs[i])
		b.ReportMetric(per(medians[i]), side.name+"-"+unit)
		mc := medianCPU(cpus[i])
		for _, part := range []struct {
			name string
			v    float64
		}{{"source-minio", mc.source}, {"dest-minio", mc.dest}, {"temporal", mc.temporal}, {"client", mc.self}} {
			b.ReportMetric(part.v, side.name+"-cpu-s-"+part.name)
		}
		var totals []float64
		for _, c := range cpus[i] {
			totals = append(totals, sum(c))
		}
		cpuTotals[i] = medianFloat(totals)
		b.Logf("%s: runs %v, CPU-seconds of each run, all parts %.1f", side.name, runs[i], totals)
	}
	// Each engine side against each other: medians of the rates, and of
	// the ratios of the runs of one rotation (neighbours in time).
	for i, engine := range sides {
		if engine.name != "migrate" && engine.name != "per-object" {
			continue
		}
		for j, other := range sides {
			if other.name != "baseline" && other.name != "rclone" {
				continue
			}
			b.ReportMetric(medians[j].Seconds()/medians[i].Seconds(), engine.name+"/"+other.name)
			var pairs []float64
			for r := range runs[i] {
				pairs = append(pairs, runs[j][r].Seconds()/runs[i][r].Seconds())
			}
			b.Logf("%s/%s of each rotation: %.2f (median %.2f)", engine.name, other.name, pairs, medianFloat(pairs))
		}
	}
	b.ReportMetric(cpuTotals[0]/cpuTotals[slices.IndexFunc(sides, func(s benchSide) bool { return s.name == "migrate" })], "migrate/baseline-cpu")
	b.Logf("load average after the runs: %s", loadAverage())
}

// loadAverage is the machine's load over 1, 5 and 15 minutes, said beside
// every figure: the machine is shared.
func loadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(data))
	return strings.Join(f[:3], " ")
}

func medianFloat(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

// runOnce copies into a fresh destination bucket, times it, checks that
// every object arrived, and removes the copies afterwards (both untimed).
func runOnce(b *testing.B, want int, copyInto func(dstBucket string)) time.Duration {
	dst := migratetest.Bucket(b, env.Store2, "bench-dst")
	began := time.Now()
	copyInto(dst)
	d := time.Since(began)
	if got, err := objectstore.ListAll(context.Background(), env.Store2, dst, ""); err != nil || len(got) != want {
		b.Fatalf("%d objects arrived of %d (%v)", len(got), want, err)
	}
	if err := objectstore.DeletePrefix(context.Background(), env.Store2, dst, ""); err != nil {
		b.Fatal(err)
	}
	_ = env.Store2.RemoveBucket(context.Background(), dst)
	return d
}

func seedParallel(b *testing.B, bucket string, objs []migratetest.Object) {
	var wg sync.WaitGroup
	next := make(chan migratetest.Object)
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for o := range next {
				if _, err := env.Store.Put(context.Background(), bucket, o.Key, bytes.NewReader(o.Data), int64(len(o.Data)),
					objectstore.PutOptions{Metadata: o.Meta}); err != nil {
					b.Error(err)
				}
			}
		}()
	}
	for _, o := range objs {
		next <- o
	}
	close(next)
	wg.Wait()
}

// plainPool is the baseline: list the source, and copy each object with
// one GET and one PUT (metadata kept), `concurrency` at a time, with
// minio-go's best settings: no payload hashing; large objects sent as
// parts of 16 MiB, 4 in parallel.
func plainPool(b *testing.B, srcBucket, dstBucket string, concurrency int, large bool) {
	plainPoolAt(b, env.MinIO.Endpoint, env.MinIO2.Endpoint, srcBucket, dstBucket, concurrency, large)
}

// plainPoolAt is plainPool between given endpoints of the two MinIO
// servers (a proxy in front of one, to see its requests).
func plainPoolAt(b testing.TB, srcEndpoint, dstEndpoint, srcBucket, dstBucket string, concurrency int, large bool) {
	ctx := context.Background()
	core := func(endpoint, access, secret string) *minio.Core {
		tr, err := minio.DefaultTransport(false)
		if err != nil {
			b.Fatal(err)
		}
		tr.MaxIdleConnsPerHost, tr.MaxIdleConns = 256, 512
		c, err := minio.NewCore(endpoint, &minio.Options{Creds: credentials.NewStaticV4(access, secret, ""), Transport: tr})
		if err != nil {
			b.Fatal(err)
		}
		return c
	}
	src := core(srcEndpoint, env.MinIO.AccessKey, env.MinIO.SecretKey)
	dst := core(dstEndpoint, env.MinIO2.AccessKey, env.MinIO2.SecretKey)
	keys := make(chan string, 1000)
	go func() {
		defer close(keys)
		for o := range src.Client.ListObjects(ctx, srcBucket, minio.ListObjectsOptions{Recursive: true}) {
			if o.Err != nil {
				b.Error(o.Err)
				return
			}
			keys <- o.Key
		}
	}()
	var wg sync.WaitGroup
	for range concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for key := range keys {
				body, info, _, err := src.GetObject(ctx, srcBucket, key, minio.GetObjectOptions{})
				if err != nil {
					b.Error(err)
					continue
				}
				opts := minio.PutObjectOptions{ContentType: info.ContentType, UserMetadata: info.UserMetadata, DisableContentSha256: true}
				if large {
					opts.PartSize, opts.NumThreads, opts.ConcurrentStreamParts = 16<<20, 4, true
				}
				if _, err := dst.Client.PutObject(ctx, dstBucket, key, body, info.Size, opts); err != nil {
					b.Error(err)
				}
				body.Close()
			}
		}()
	}
	wg.Wait()
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// cpuUse is CPU seconds spent by each part of the system.
type cpuUse struct{ source, dest, temporal, self float64 }

func (c cpuUse) since(before cpuUse) cpuUse {
	return cpuUse{c.source - before.source, c.dest - before.dest, c.temporal - before.temporal, c.self - before.self}
}

func medianCPU(cs []cpuUse) cpuUse {
	pick := func(f func(cpuUse) float64) float64 {
		v := make([]float64, len(cs))
		for i, c := range cs {
			v[i] = f(c)
		}
		slices.Sort(v)
		return v[len(v)/2]
	}
	return cpuUse{pick(func(c cpuUse) float64 { return c.source }), pick(func(c cpuUse) float64 { return c.dest }),
		pick(func(c cpuUse) float64 { return c.temporal }), pick(func(c cpuUse) float64 { return c.self })}
}

// readCPU reads the CPU time of the MinIO servers, the Temporal dev server
// (found by the address in their command lines) and this process.
func readCPU(b *testing.B) cpuUse {
	var c cpuUse
	c.self = procCPU(os.Getpid()) + childrenCPU(b)
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		pid, _ := strconv.Atoi(filepath.Base(d))
		cmdline, err := os.ReadFile(d + "/cmdline")
		if err != nil {
			continue
		}
		args := strings.Split(string(cmdline), "\x00")
		joined := strings.Join(args, " ")
		switch {
		case strings.Contains(joined, "server --quiet --address "+env.MinIO.Endpoint+" "):
			c.source += procCPU(pid)
		case strings.Contains(joined, "server --quiet --address "+env.MinIO2.Endpoint+" "):
			c.dest += procCPU(pid)
		case strings.Contains(joined, "start-dev") && strings.Contains(joined, "--port "+portOf(env.Temporal.HostPort)+" "):
			c.temporal += procCPU(pid)
		}
	}
	return c
}

func portOf(hostPort string) string {
	i := strings.LastIndex(hostPort, ":")
	return hostPort[i+1:]
}

// procCPU is utime+stime of a process, in seconds; 0 for one that ended
// since it was found.
func procCPU(pid int) float64 {
	t, err := loadtest.ProcessCPU(pid)
	if err != nil {
		return 0
	}
	return t.Seconds()
}

// childrenCPU is the CPU time of this process's children that ended
// (cutime+cstime): rclone's, which runs as one.
func childrenCPU(b *testing.B) float64 {
	t, err := loadtest.ChildrenCPU(os.Getpid())
	if err != nil {
		b.Fatal(err)
	}
	return t.Seconds()
}
