package transform

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/gzip"
)

// benchSizes: a typical unminified library file, and a small module file, where
// per-call setup (allocating the quality-11 match finder) dominates.
var benchSizes = []int{100 << 10, 4 << 10}

func benchCorpus(size int) []byte { return generateJSCorpus(size, 42) }

func benchEach(b *testing.B, fn func(b *testing.B, input []byte)) {
	for _, size := range benchSizes {
		input := benchCorpus(size)
		b.Run(fmt.Sprintf("%dKiB", size>>10), func(b *testing.B) {
			b.SetBytes(int64(len(input)))
			b.ReportAllocs()
			fn(b, input)
		})
	}
}

func BenchmarkBrotli11(b *testing.B) {
	benchEach(b, func(b *testing.B, input []byte) {
		for b.Loop() {
			if _, err := Brotli(input); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkBrotli11Unpooled is the baseline that shows what pooling saves.
func BenchmarkBrotli11Unpooled(b *testing.B) {
	benchEach(b, func(b *testing.B, input []byte) {
		for b.Loop() {
			var out bytes.Buffer
			w := brotli.NewWriterLevel(&out, LegacyLevels.Brotli)
			if _, err := w.Write(input); err != nil {
				b.Fatal(err)
			}
			if err := w.Close(); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkBrotli11Window22 is the window this package used before fitting
// it to the input: a pooled writer with the library's default 4 MiB window.
func BenchmarkBrotli11Window22(b *testing.B) {
	w := brotli.NewWriterOptions(nil, brotli.WriterOptions{Quality: LegacyLevels.Brotli, LGWin: brotliMaxWindowBits})
	benchEach(b, func(b *testing.B, input []byte) {
		for b.Loop() {
			var out bytes.Buffer
			w.Reset(&out)
			if _, err := w.Write(input); err != nil {
				b.Fatal(err)
			}
			if err := w.Close(); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkGzip9(b *testing.B) {
	benchEach(b, func(b *testing.B, input []byte) {
		for b.Loop() {
			if _, err := Gzip(input); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkGzip9Unpooled is the baseline that shows what pooling saves.
func BenchmarkGzip9Unpooled(b *testing.B) {
	benchEach(b, func(b *testing.B, input []byte) {
		for b.Loop() {
			var out bytes.Buffer
			w, err := gzip.NewWriterLevel(&out, LegacyLevels.Gzip)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := w.Write(input); err != nil {
				b.Fatal(err)
			}
			if err := w.Close(); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkMinifyJS(b *testing.B) {
	benchEach(b, func(b *testing.B, input []byte) {
		for b.Loop() {
			if _, err := Minify("bench.js", input); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkTransformFile measures the whole per-file job for a .js source:
// SRI, brotli and gzip of the original, minify, and the same for the twin.
// Throughput is relative to the source size.
func BenchmarkTransformFile(b *testing.B) {
	benchEach(b, func(b *testing.B, input []byte) {
		for b.Loop() {
			outs, warnings, err := File("dist/bench.js", input, Options{MinifyJS: true, MinifyCSS: true}, nil)
			if err != nil || len(warnings) != 0 || len(outs) != 2 {
				b.Fatalf("outs %d, warnings %v, err %v", len(outs), warnings, err)
			}
		}
	})
}
