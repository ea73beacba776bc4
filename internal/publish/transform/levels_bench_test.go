package transform

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/edgeflow/edgeflow/internal/publish/benchdata"
)

// BenchmarkCompressionLevels measures brotli and gzip throughput (MB/s of
// input, one core) at each level, on a generated source map and generated
// library code, or on the file EDGEFLOW_BENCH_FILE names (a real bundle or
// source map). levelSteps are chosen from these numbers (docs/benchmarks.md):
//
//	go test ./internal/publish/transform -run '^$' -bench CompressionLevels -benchtime 1x
func BenchmarkCompressionLevels(b *testing.B) {
	const size = 4 << 20
	var sourceMap bytes.Buffer
	if err := benchdata.SourceMap(&sourceMap, 1, size); err != nil {
		b.Fatal(err)
	}
	inputs := []struct {
		name string
		data []byte
	}{{"sourcemap", sourceMap.Bytes()}, {"js", benchdata.JS(1, size)}}
	if path := os.Getenv("EDGEFLOW_BENCH_FILE"); path != "" {
		data, err := os.ReadFile(path)
		if err != nil {
			b.Fatal(err)
		}
		inputs = []struct {
			name string
			data []byte
		}{{"file", data}}
	}
	for _, in := range inputs {
		for _, q := range []int{11, 10, 9, 7, 5, 4, 3} {
			b.Run(fmt.Sprintf("%s/br%d", in.name, q), func(b *testing.B) {
				benchLevel(b, in.data, func(w io.Writer) (io.WriteCloser, func(), error) {
					bw, done, err := newBrotliWriter(w, q, int64(len(in.data)))
					return bw, done, err
				})
			})
		}
		for _, l := range []int{9, 6, 5, 4} {
			b.Run(fmt.Sprintf("%s/gz%d", in.name, l), func(b *testing.B) {
				benchLevel(b, in.data, func(w io.Writer) (io.WriteCloser, func(), error) {
					gw, done, err := newGzipWriter(w, l)
					return gw, done, err
				})
			})
		}
	}
}

// benchLevel reports, besides wall-clock MB/s, MB per CPU second of the
// process (cpuMB/s): on a loaded machine the wall clock counts other
// processes' time too, and the levels' bound is in seconds of one core.
func benchLevel(b *testing.B, data []byte, open func(io.Writer) (io.WriteCloser, func(), error)) {
	b.SetBytes(int64(len(data)))
	var out int64
	cpuBefore := cpuTime()
	for b.Loop() {
		var c countingWriter
		w, done, err := open(&c)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := w.Write(data); err != nil {
			b.Fatal(err)
		}
		if err := w.Close(); err != nil {
			b.Fatal(err)
		}
		done()
		out = c.n
	}
	cpu := cpuTime() - cpuBefore
	b.ReportMetric(float64(out)/float64(len(data)), "ratio")
	b.ReportMetric(float64(len(data))*float64(b.N)/1e6/cpu.Seconds(), "cpuMB/s")
}

// cpuTime is the CPU time this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

type countingWriter struct{ n int64 }

func (c *countingWriter) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }
