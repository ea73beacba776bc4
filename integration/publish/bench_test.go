package integration

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/edgeflow/edgeflow/internal/objectstore"
	"github.com/edgeflow/edgeflow/internal/publish/benchdata"
	"github.com/edgeflow/edgeflow/internal/publish/catalog"
	"github.com/edgeflow/edgeflow/internal/publish/metadata"
	"github.com/edgeflow/edgeflow/internal/publish/registry/registrytest"
	"github.com/edgeflow/edgeflow/internal/publish/transform"
	"github.com/edgeflow/edgeflow/workflows/publish/contract"
)

// The publish benchmarks run on the same dev server and MinIO as the tests.
// Each compares the durable pipeline with a baseline measured in the same run.

func benchPackage(name string) catalog.Package {
	p := demoPackage(name)
	p.Filename = "js/element/element-0000.js"
	p.Autoupdate.FileMap = []catalog.FileMapEntry{{BasePath: "", Files: []string{"**/*.@(js|css)"}}}
	return p
}

func tarballOf(files map[string][]byte) []byte {
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	entries := make([]registrytest.Entry, len(paths))
	for i, p := range paths {
		entries[i] = registrytest.Entry{Name: p, Body: string(files[p])}
	}
	return registrytest.NPMTarball(entries...)
}

// baselinePublish is the same work with no Temporal: a plain worker pool on
// all cores does minify + brotli + gzip + SRI per file and the same writes to
// the primary and the mirror bucket. It returns the summed per-file CPU time.
func baselinePublish(ctx context.Context, prefix string, files map[string][]byte) (time.Duration, error) {
	var cpu atomic.Int64
	limiter := transform.NewLimiter(0)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(16)
	for path, data := range files {
		g.Go(func() error {
			var outs []transform.Output
			var err error
			if e := limiter.Do(gctx, func() {
				start := time.Now()
				outs, _, err = transform.File(path, data, transform.Options{MinifyJS: true, MinifyCSS: true}, nil)
				cpu.Add(int64(time.Since(start)))
			}); e != nil {
				return e
			}
			if err != nil {
				return err
			}
			w, wctx := errgroup.WithContext(gctx)
			for _, o := range outs {
				key := prefix + o.Path
				put := func(bucket, key string, b []byte) {
					w.Go(func() error {
						return objectstore.PutBytes(wctx, env.Store, bucket, key, b, objectstore.PutOptions{Metadata: objectstore.Metadata{ContentType: o.ContentType}})
					})
				}
				for _, bucket := range []string{buckets.Files, buckets.Mirror} {
					put(bucket, key, o.Data)
					if o.Brotli != nil {
						put(bucket, key+".br", o.Brotli)
					}
					if o.Gzip != nil {
						put(bucket, key+".gz", o.Gzip)
					}
				}
			}
			return w.Wait()
		})
	}
	err := g.Wait()
	return time.Duration(cpu.Load()), err
}

var benchSeq atomic.Int64

// BenchmarkPublish1000Files publishes a generated 1,000-file, ~20 MB package
// end to end and compares it with the baseline (target ≤ 1.25×), then
// publishes its next version with 5% of the files changed (target ≤ 0.15× of
// the first: reuse at work).
func BenchmarkPublish1000Files(b *testing.B) {
	startWorkersB(b)
	ctx := context.Background()
	files := benchdata.Package(7, 1000, 20<<20)
	next := benchdata.NextVersion(files, 0.05, 8)
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		name := fmt.Sprintf("bench%d", benchSeq.Add(1))
		pkg := benchPackage(name)
		npm.Add(name, "1.0.0", tarballOf(files))
		npm.Add(name, "1.1.0", tarballOf(next))
		b.StartTimer()

		start := time.Now()
		cpu, err := baselinePublish(ctx, "baseline/"+name+"/", files)
		if err != nil {
			b.Fatal(err)
		}
		base := time.Since(start)

		start = time.Now()
		out := publishB(b, pkg, "1.0.0")
		first := time.Since(start)

		start = time.Now()
		var secondVisible time.Duration
		out2 := publishWatching(b, pkg, "1.1.0", func() { secondVisible = time.Since(start) })
		second := time.Since(start)

		b.ReportMetric(float64(benchdata.Total(files))/1e6, "MB")
		b.ReportMetric(base.Seconds(), "baseline-s")
		b.ReportMetric(first.Seconds(), "pipeline-s")
		b.ReportMetric(first.Seconds()/base.Seconds(), "pipeline/baseline")
		b.ReportMetric(cpu.Seconds(), "process-cpu-s")
		b.ReportMetric(float64(out.Processing.CPUMillis)/1000, "pipeline-cpu-s")
		b.ReportMetric(secondVisible.Seconds(), "next-visible-s")
		b.ReportMetric(secondVisible.Seconds()/first.Seconds(), "next-visible/first")
		b.ReportMetric(second.Seconds(), "next-complete-s")
		b.ReportMetric(float64(out2.Result.Copies), "next-copies")
		b.ReportMetric(out2.Result.ReuseRate, "reuse-rate")
	}
}

// BenchmarkPublish20FilesVisible measures a small release from workflow start
// to its version document being readable (target ≤ 3 s).
func BenchmarkPublish20FilesVisible(b *testing.B) {
	startWorkersB(b)
	files := benchdata.Package(11, 20, 200<<10)
	var total time.Duration
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		name := fmt.Sprintf("small%d", benchSeq.Add(1))
		npm.Add(name, "1.0.0", tarballOf(files))
		b.StartTimer()
		start := time.Now()
		publishWatching(b, benchPackage(name), "1.0.0", func() { total += time.Since(start) })
	}
	b.ReportMetric(total.Seconds()/float64(b.N), "start-to-visible-s")
}

func startWorkersB(b *testing.B) {
	b.Helper()
	if env == nil {
		b.Skip("needs the dev server and MinIO (not started with -short)")
	}
	startWorkers(b)
}

func publishB(b *testing.B, pkg catalog.Package, version string) *contract.PublishOutput {
	out, err := publishOnce(context.Background(), pkg, version)
	if err != nil {
		b.Fatal(err)
	}
	return out
}

// publishWatching publishes a version and calls visible as soon as the
// package document lists it (the commit point: the edge serves it from then on).
func publishWatching(b *testing.B, pkg catalog.Package, version string, visible func()) *contract.PublishOutput {
	type result struct {
		out *contract.PublishOutput
		err error
	}
	done := make(chan result, 1)
	go func() { out, err := publishOnce(context.Background(), pkg, version); done <- result{out, err} }()
	seen := false
	for {
		if !seen {
			var doc metadata.Package
			if _, err := objectstore.GetJSON(context.Background(), env.Store, buckets.Meta, metadata.PackageKey(pkg.Name), &doc); err == nil && slices.Contains(doc.Versions, version) {
				seen = true
				visible()
			} else if err != nil && !errors.Is(err, objectstore.ErrNotFound) {
				b.Fatal(err)
			}
		}
		select {
		case r := <-done:
			if r.err != nil {
				b.Fatal(r.err)
			}
			if !seen {
				visible()
			}
			return r.out
		case <-time.After(5 * time.Millisecond):
		}
	}
}
