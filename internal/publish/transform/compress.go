package transform

import (
	"bytes"
	"crypto/sha512"
	"encoding/base64"
	"fmt"
	"io"
	"sync"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/gzip"
)

// Compression settings. They determine output bytes, so Fingerprint names them.
const (
	brotliQuality = 11
	// brotliMaxWindowBits is the library's default window (4 MiB). Smaller
	// inputs get the smallest window that holds them, as the brotli command
	// line tool does: the output is the same size and, on code, the speed is
	// the same (BenchmarkBrotli11Window22), but a pooled writer's match finder
	// and ring buffer are sized by its window, so writers kept for small
	// files stay small.
	brotliMaxWindowBits = 22
	brotliMinWindowBits = 10
	gzipLevel           = 9
)

// SRI returns the Subresource Integrity value of data: "sha512-" followed by
// the standard base64 encoding of its SHA-512 digest.
func SRI(data []byte) string {
	sum := sha512.Sum512(data)
	return "sha512-" + base64.StdEncoding.EncodeToString(sum[:])
}

// brotliWindowBits is the smallest window that holds n bytes, within the
// format's limits (the window is 2^bits - 16 bytes).
func brotliWindowBits(n int) int {
	bits := brotliMinWindowBits
	for bits < brotliMaxWindowBits && (1<<bits)-16 < n {
		bits++
	}
	return bits
}

// brotliWriters reuses quality-11 writers, one pool per window size: a writer
// owns a binary-tree match finder sized by its window plus ring buffers,
// which a fresh writer allocates and zeroes on every call.
var brotliWriters [brotliMaxWindowBits + 1]sync.Pool

// Brotli compresses data at quality 11 with a window fitted to its size.
func Brotli(data []byte) ([]byte, error) {
	var out bytes.Buffer
	out.Grow(len(data)/3 + 64)
	bits := brotliWindowBits(len(data))
	w, _ := brotliWriters[bits].Get().(*brotli.Writer)
	if w == nil {
		w = brotli.NewWriterOptions(&out, brotli.WriterOptions{Quality: brotliQuality, LGWin: bits})
	} else {
		w.Reset(&out)
	}
	if _, err := w.Write(data); err != nil {
		return nil, fmt.Errorf("brotli: %w", err)
	}
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("brotli: %w", err)
	}
	// Only writers that finished cleanly go back; a failed one is dropped.
	brotliWriters[bits].Put(w)
	return out.Bytes(), nil
}

// gzipWriters reuses level-9 writers and their deflate state (~1 MiB each).
var gzipWriters = sync.Pool{
	New: func() any {
		w, err := gzip.NewWriterLevel(nil, gzipLevel)
		if err != nil {
			panic(err) // gzipLevel is a valid constant; this cannot happen
		}
		return w
	},
}

// Gzip compresses data at level 9. The header is fixed: no file name, no
// comment, modification time 0 and OS byte 255 ("unknown", set by the library
// whatever the host), so equal input always gives byte-identical output.
func Gzip(data []byte) ([]byte, error) {
	var out bytes.Buffer
	out.Grow(len(data)/3 + 64)
	w := gzipWriters.Get().(*gzip.Writer)
	// Reset also clears Header (Name, Comment, ModTime, Extra, OS back to 255).
	w.Reset(&out)
	if _, err := w.Write(data); err != nil {
		return nil, fmt.Errorf("gzip: %w", err)
	}
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("gzip: %w", err)
	}
	gzipWriters.Put(w)
	return out.Bytes(), nil
}

// SRIOf hashes everything r yields (sha512, as SRI) and counts it: the
// identity of a file too large to hold in memory at once.
func SRIOf(r io.Reader) (string, int64, error) {
	h := sha512.New()
	n, err := io.Copy(h, r)
	if err != nil {
		return "", n, err
	}
	return "sha512-" + base64.StdEncoding.EncodeToString(h.Sum(nil)), n, nil
}
