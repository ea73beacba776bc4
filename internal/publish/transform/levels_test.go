package transform

import (
	"bytes"
	"context"
	"crypto/sha512"
	"encoding/base64"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/edgeflow/edgeflow/internal/publish/benchdata"
)

func TestLevelsStepDownWithSize(t *testing.T) {
	for _, c := range []struct {
		size int64
		want Levels
	}{
		{0, Levels{11, 9}}, {100 << 10, Levels{11, 9}}, {4 << 20, Levels{11, 9}},
		{4<<20 + 1, Levels{9, 9}}, {32 << 20, Levels{9, 9}},
		{32<<20 + 1, Levels{5, 6}}, {200 << 20, Levels{5, 6}}, {256 << 20, Levels{5, 6}},
		{256<<20 + 1, Levels{3, 5}}, {MaxFileSizeLimit, Levels{3, 5}},
	} {
		if got := LevelsFor(c.size); got != c.want {
			t.Errorf("LevelsFor(%d) = %+v, want %+v", c.size, got, c.want)
		}
	}
}

// The bound the steps keep, at the slowest speeds (MB per CPU second)
// measured on this machine (BenchmarkCompressionLevels, docs/benchmarks.md):
// a step added or moved without new measurements fails here.
func TestLevelStepsKeepTheBound(t *testing.T) {
	slowestMBps := map[string]float64{"br11": 0.28, "br9": 1.55, "br5": 8.8, "br3": 27.9, "gz9": 8.3, "gz6": 60.6, "gz5": 76.9}
	prev := int64(0)
	for _, s := range levelSteps {
		largest := min(s.upTo, MaxFileSizeLimit)
		br, ok1 := slowestMBps["br"+strconv.Itoa(s.levels.Brotli)]
		gz, ok2 := slowestMBps["gz"+strconv.Itoa(s.levels.Gzip)]
		if !ok1 || !ok2 {
			t.Fatalf("no measured speed for %+v: run BenchmarkCompressionLevels", s.levels)
		}
		mb := float64(largest) / 1e6
		secs := mb/br + mb/gz
		t.Logf("up to %d MiB at %d/%d: %.1f s", largest>>20, s.levels.Brotli, s.levels.Gzip, secs)
		if secs > MaxFileCompressSeconds {
			t.Errorf("a %d-byte file at %+v takes %.0f s of one core, over the %d s bound", largest, s.levels, secs, MaxFileCompressSeconds)
		}
		if s.upTo <= prev {
			t.Errorf("steps out of order at %d", s.upTo)
		}
		prev = s.upTo
	}
	if last := levelSteps[len(levelSteps)-1].upTo; last < MaxFileSizeLimit {
		t.Errorf("the last step ends at %d, below MaxFileSizeLimit", last)
	}
}

func TestPlanFor(t *testing.T) {
	opts := Options{MinifyJS: true, MinifyCSS: true, MaxFileSize: 100 << 20}
	if p := opts.PlanFor("dist/app.js.map", 200<<20); p.Levels != (Levels{}) || p.MayMinify ||
		p.SkipReason != "over the library's size limit (100 MiB): stored as is, without a minified twin, brotli or gzip" {
		t.Errorf("over the limit: %+v", p)
	}
	if p := opts.PlanFor("fonts/icons.woff2", 1<<20); p.Levels != (Levels{}) || p.SkipReason != "" {
		t.Errorf("woff2: %+v", p)
	}
	if p := opts.PlanFor("dist/app.js", 20<<20); p.Levels != (Levels{9, 9}) || p.MayMinify || p.SkipReason != "" {
		t.Errorf("a 20 MiB script: %+v", p)
	}
	if p := opts.PlanFor("dist/app.js", 1<<20); p.Levels != LegacyLevels || !p.MayMinify {
		t.Errorf("a 1 MiB script: %+v", p)
	}
	if p := (Options{}).PlanFor("a.map", DefaultMaxFileSize+1); p.SkipReason == "" || !strings.Contains(p.SkipReason, "512 MiB") {
		t.Errorf("the default limit: %+v", p)
	}
	if (Options{MinifyJS: true}).WantsTwin("big.js", MaxMinifySize+1, nil) {
		t.Error("a twin wanted of a script over MaxMinifySize")
	}
}

// File stores a file over the library's limit as is: no twins, no
// minified twin, its SRI that of its bytes.
func TestFileOverTheLimitIsStoredAsIs(t *testing.T) {
	data := benchdata.JS(3, 40<<10)
	outs, _, err := File("lib.js", data, Options{MinifyJS: true, MaxFileSize: 10 << 10}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(outs) != 1 || outs[0].Brotli != nil || outs[0].Gzip != nil || outs[0].Levels != (Levels{}) || outs[0].SRI != SRI(data) {
		t.Errorf("outputs %+v", outs)
	}
}

// Stream's twins are byte for byte File's, though it feeds the
// compressors a chunk at a time and File all at once; its SRI is the
// sha512 of the bytes and its size theirs.
func TestStreamMatchesFile(t *testing.T) {
	for _, size := range []int{100 << 10, 4<<20 + 300<<10} { // brotli 11, then 9
		data := benchdata.JS(uint64(size), size)
		outs, _, err := File("dist/big.css.map", data, Options{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Stream(context.Background(), "dist/big.css.map", bytes.NewReader(data), int64(len(data)), Options{}, t.TempDir(), nil)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha512.Sum512(data)
		if got.SRI != "sha512-"+base64.StdEncoding.EncodeToString(sum[:]) || got.Size != int64(len(data)) || got.ContentType != outs[0].ContentType {
			t.Errorf("%d bytes: streamed %+v", len(data), got)
		}
		if got.Levels != LevelsFor(int64(len(data))) || got.Levels != outs[0].Levels {
			t.Errorf("%d bytes: levels %+v, File's %+v", len(data), got.Levels, outs[0].Levels)
		}
		for _, twin := range []struct {
			file string
			size int64
			want []byte
		}{{got.BrotliFile, got.BrotliSize, outs[0].Brotli}, {got.GzipFile, got.GzipSize, outs[0].Gzip}} {
			b, err := os.ReadFile(twin.file)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(b, twin.want) || int64(len(b)) != twin.size {
				t.Errorf("%d bytes: streamed twin %s (%d bytes) differs from File's (%d bytes)", len(data), twin.file, len(b), len(twin.want))
			}
		}
		got.Remove()
		if _, err := os.Stat(got.BrotliFile); err == nil {
			t.Error("Remove left the brotli twin")
		}
	}
}

// Types that do not compress, and files over the limit, are hashed and
// stored as is: no twin files.
func TestStreamStoresAsIs(t *testing.T) {
	data := bytes.Repeat([]byte("wOF2 not really a font "), 10_000)
	for _, c := range []struct {
		path string
		opts Options
	}{{"fonts/a.woff2", Options{}}, {"img/a.png", Options{}}, {"a.js", Options{MaxFileSize: 1000}}} {
		dir := t.TempDir()
		got, err := Stream(context.Background(), c.path, bytes.NewReader(data), int64(len(data)), c.opts, dir, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got.BrotliFile != "" || got.GzipFile != "" || got.Levels != (Levels{}) || got.SRI != SRI(data) {
			t.Errorf("%s: %+v", c.path, got)
		}
		if left, _ := os.ReadDir(dir); len(left) != 0 {
			t.Errorf("%s: files left in the scratch folder: %v", c.path, left)
		}
	}
}

// A source that ends before the size it was announced at is an error,
// and no twin file is left.
func TestStreamShortSource(t *testing.T) {
	dir := t.TempDir()
	if _, err := Stream(context.Background(), "a.js", strings.NewReader("var a;"), 100, Options{}, dir, nil); err == nil || !strings.Contains(err.Error(), "read 6 bytes, expected 100") {
		t.Errorf("short source: %v", err)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("files left: %v", left)
	}
}

// Stream holds no copy of the file: its heap while it streams a 96 MiB
// file (the compressors' state, one read buffer, and the garbage brotli
// makes per write, which the collector keeps at about as much again) stays
// under half the file.
func TestStreamHoldsAFractionOfTheFile(t *testing.T) {
	if testing.Short() {
		t.Skip("compresses 96 MiB")
	}
	const size = 96 << 20
	src := io.LimitReader(repeating(benchdata.JS(9, 64<<10)), size)
	runtime.GC()
	var base runtime.MemStats
	runtime.ReadMemStats(&base)
	var peak atomic.Uint64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			if m.HeapAlloc > peak.Load() {
				peak.Store(m.HeapAlloc)
			}
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	got, err := Stream(context.Background(), "big.js", src, size, Options{}, t.TempDir(), nil)
	close(stop)
	<-sampled
	if err != nil {
		t.Fatal(err)
	}
	defer got.Remove()
	grew := int64(peak.Load()) - int64(base.HeapAlloc)
	if grew > size/2 {
		t.Errorf("streaming %d bytes grew the heap by %d bytes at its peak", size, grew)
		return
	}
	t.Logf("streaming %d bytes grew the heap by %d bytes at its peak", size, grew)
}

// repeating reads b over and over.
type repeatReader struct {
	b   []byte
	off int
}

func repeating(b []byte) io.Reader { return &repeatReader{b: b} }

func (r *repeatReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		k := copy(p[n:], r.b[r.off:])
		n += k
		r.off = (r.off + k) % len(r.b)
	}
	return n, nil
}
