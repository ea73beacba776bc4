package edge

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/edgeflow/edgeflow/internal/publish/catalog"
)

// The benchmark library: 50 files of 1 to 100 KiB, published to MinIO for
// the edge and written to a temporary directory for http.FileServer, under
// the same URL paths.
const (
	benchLib       = "benchlib"
	benchVersion   = "1.0.0"
	benchFileCount = 50
	// benchWorkers is the number of concurrent clients of the load runs.
	benchWorkersPerCPU = 4
)

type benchFixture struct {
	paths []string // URL paths, e.g. /ajax/libs/benchlib/1.0.0/file-07.js
	dir   string   // FileServer root
	bytes int64    // total size of the files
}

var (
	benchOnce  sync.Once
	benchFx    benchFixture
	benchSetup error
)

func loadBenchFixture(b *testing.B) benchFixture {
	b.Helper()
	benchOnce.Do(func() { benchFx, benchSetup = makeBenchFixture() })
	if benchSetup != nil {
		b.Fatalf("benchmark fixture: %v", benchSetup)
	}
	return benchFx
}

func makeBenchFixture() (benchFixture, error) {
	dir, err := os.MkdirTemp("", "cdn-bench-fileserver-")
	if err != nil {
		return benchFixture{}, err
	}
	rng := rand.New(rand.NewPCG(3, 5))
	alphabet := []byte("abcdefghijklmnopqrstuvwxyz0123456789 (){};=.,\n")
	var files []fixtureFile
	fx := benchFixture{dir: dir}
	for i := range benchFileCount {
		size := 1024 + i*(99*1024)/(benchFileCount-1)
		data := make([]byte, size)
		for j := range data {
			data[j] = alphabet[rng.IntN(len(alphabet))]
		}
		name := fmt.Sprintf("file-%02d.js", i)
		// Requests in both runs ask for identity, so no compressed twins are needed.
		files = append(files, fixtureFile{Path: name, Data: data, NoCompression: true})
		urlPath := "/ajax/libs/" + benchLib + "/" + benchVersion + "/" + name
		local := filepath.Join(dir, filepath.FromSlash(urlPath))
		if err := os.MkdirAll(filepath.Dir(local), 0o755); err != nil {
			return benchFixture{}, err
		}
		if err := os.WriteFile(local, data, 0o644); err != nil {
			return benchFixture{}, err
		}
		fx.paths = append(fx.paths, urlPath)
		fx.bytes += int64(size)
	}
	pkg := catalog.Package{Name: benchLib, Description: "benchmark files", Filename: "file-00.js"}
	err = publishVersion(context.Background(), testEnv.store, testEnv.buckets, pkg, benchVersion, files, time.Now())
	return fx, err
}

func benchEdge(b *testing.B, cacheBytes int64) *httptest.Server {
	b.Helper()
	s := New(Config{
		Primary:    testEnv.store,
		Mirror:     testEnv.store,
		Buckets:    testEnv.buckets,
		CacheBytes: cacheBytes,
		Logger:     slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	ts := serveAsDeployed(s, nil)
	b.Cleanup(ts.Close)
	return ts
}

func benchFileServer(b *testing.B, dir string) *httptest.Server {
	b.Helper()
	ts := httptest.NewServer(http.FileServer(http.Dir(dir)))
	b.Cleanup(ts.Close)
	return ts
}

// benchClient keeps enough idle connections for every worker and never asks
// for compression, so both servers send the same identity bytes.
func benchClient() *http.Client {
	workers := benchWorkersPerCPU * runtime.GOMAXPROCS(0)
	return &http.Client{Transport: &http.Transport{
		MaxIdleConns:        workers * 2,
		MaxIdleConnsPerHost: workers * 2,
		DisableCompression:  true,
	}}
}

func fetch(client *http.Client, url string) error {
	resp, err := client.Get(url)
	if err != nil {
		return err
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("GET %s: status %d", url, resp.StatusCode)
	}
	return err
}

// warm requests every file once, which fills the edge's caches.
func warm(b *testing.B, client *http.Client, base string, fx benchFixture) {
	b.Helper()
	for _, p := range fx.paths {
		if err := fetch(client, base+p); err != nil {
			b.Fatal(err)
		}
	}
}

func runParallelGets(b *testing.B, base string, fx benchFixture) {
	client := benchClient()
	warm(b, client, base, fx)
	b.SetBytes(fx.bytes / int64(len(fx.paths)))
	b.SetParallelism(benchWorkersPerCPU)
	var next atomic.Uint64
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := next.Add(1)
			if err := fetch(client, base+fx.paths[i%uint64(len(fx.paths))]); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
}

// BenchmarkEdgeHotFile serves the files from the edge's warm cache over
// loopback HTTP under concurrent load.
func BenchmarkEdgeHotFile(b *testing.B) {
	fx := loadBenchFixture(b)
	runParallelGets(b, benchEdge(b, 64<<20).URL, fx)
}

// BenchmarkFileServerBaseline serves the same files from a local directory
// with Go's http.FileServer, the yardstick for the edge's overhead.
func BenchmarkFileServerBaseline(b *testing.B) {
	fx := loadBenchFixture(b)
	runParallelGets(b, benchFileServer(b, fx.dir).URL, fx)
}

// loadResult is one closed-loop load run.
type loadResult struct {
	requests  int
	elapsed   time.Duration
	latencies []time.Duration
}

func (r *loadResult) add(o loadResult) {
	r.requests += o.requests
	r.elapsed += o.elapsed
	r.latencies = append(r.latencies, o.latencies...)
}

func (r loadResult) perSecond() float64 { return float64(r.requests) / r.elapsed.Seconds() }

func (r loadResult) percentile(p float64) time.Duration {
	if len(r.latencies) == 0 {
		return 0
	}
	sorted := slices.Clone(r.latencies)
	slices.Sort(sorted)
	return sorted[min(len(sorted)-1, int(p*float64(len(sorted))))]
}

// runLoad sends total requests from workers concurrent clients, cycling
// through the files, and records each request's latency (to the last byte).
func runLoad(client *http.Client, base string, paths []string, total, workers int) (loadResult, error) {
	var next atomic.Int64
	var wg sync.WaitGroup
	perWorker := make([][]time.Duration, workers)
	errs := make([]error, workers)
	start := time.Now()
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lat := make([]time.Duration, 0, total/workers+1)
			for {
				i := next.Add(1) - 1
				if i >= int64(total) {
					break
				}
				t0 := time.Now()
				if err := fetch(client, base+paths[i%int64(len(paths))]); err != nil {
					errs[w] = err
					break
				}
				lat = append(lat, time.Since(t0))
			}
			perWorker[w] = lat
		}()
	}
	wg.Wait()
	res := loadResult{elapsed: time.Since(start)}
	for _, lat := range perWorker {
		res.latencies = append(res.latencies, lat...)
	}
	res.requests = len(res.latencies)
	for _, err := range errs {
		if err != nil {
			return res, err
		}
	}
	return res, nil
}

// BenchmarkEdgeVsFileServer runs the edge (warm cache), http.FileServer and
// the edge with its file cache disabled (every body read from MinIO) under
// the same closed-loop load, alternating rounds so that drift on a shared
// machine hits both sides alike, and reports throughput, p50/p99 latency and
// the edge/baseline throughput ratio (target: at least 0.8).
func BenchmarkEdgeVsFileServer(b *testing.B) {
	fx := loadBenchFixture(b)
	const (
		rounds           = 3
		requestsPerRound = 4000
		coldRequests     = 1500
	)
	workers := benchWorkersPerCPU * runtime.GOMAXPROCS(0)
	edge := benchEdge(b, 64<<20)
	cold := benchEdge(b, 0)
	baseline := benchFileServer(b, fx.dir)
	edgeClient, baseClient, coldClient := benchClient(), benchClient(), benchClient()
	warm(b, edgeClient, edge.URL, fx)
	warm(b, baseClient, baseline.URL, fx)
	warm(b, coldClient, cold.URL, fx) // metadata only: bodies are never cached

	var edgeRes, baseRes, coldRes loadResult
	b.ResetTimer()
	for range b.N {
		edgeRes, baseRes, coldRes = loadResult{}, loadResult{}, loadResult{}
		for range rounds {
			r, err := runLoad(baseClient, baseline.URL, fx.paths, requestsPerRound, workers)
			if err != nil {
				b.Fatal(err)
			}
			baseRes.add(r)
			if r, err = runLoad(edgeClient, edge.URL, fx.paths, requestsPerRound, workers); err != nil {
				b.Fatal(err)
			}
			edgeRes.add(r)
		}
		r, err := runLoad(coldClient, cold.URL, fx.paths, coldRequests, workers)
		if err != nil {
			b.Fatal(err)
		}
		coldRes.add(r)
	}
	b.StopTimer()
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(edgeRes.perSecond(), "edge_req/s")
	b.ReportMetric(baseRes.perSecond(), "fileserver_req/s")
	b.ReportMetric(edgeRes.perSecond()/baseRes.perSecond(), "edge/fileserver")
	b.ReportMetric(ms(edgeRes.percentile(0.50)), "edge_p50_ms")
	b.ReportMetric(ms(edgeRes.percentile(0.99)), "edge_p99_ms")
	b.ReportMetric(ms(baseRes.percentile(0.50)), "fileserver_p50_ms")
	b.ReportMetric(ms(baseRes.percentile(0.99)), "fileserver_p99_ms")
	b.ReportMetric(coldRes.perSecond(), "cold_req/s")
	b.ReportMetric(ms(coldRes.percentile(0.50)), "cold_p50_ms")
	b.ReportMetric(ms(coldRes.percentile(0.99)), "cold_p99_ms")
	b.Logf("%d workers, %d files of 1-100 KiB: edge %.0f req/s (p50 %.2f ms, p99 %.2f ms), http.FileServer %.0f req/s (p50 %.2f ms, p99 %.2f ms), ratio %.2f; cold edge from MinIO %.0f req/s (p50 %.2f ms, p99 %.2f ms)",
		workers, len(fx.paths),
		edgeRes.perSecond(), ms(edgeRes.percentile(0.5)), ms(edgeRes.percentile(0.99)),
		baseRes.perSecond(), ms(baseRes.percentile(0.5)), ms(baseRes.percentile(0.99)),
		edgeRes.perSecond()/baseRes.perSecond(),
		coldRes.perSecond(), ms(coldRes.percentile(0.5)), ms(coldRes.percentile(0.99)))
}
