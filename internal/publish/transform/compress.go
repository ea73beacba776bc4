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

// Brotli windows. brotliMaxWindowBits is the library's default window (4
// MiB). Smaller inputs get the smallest window that holds them, as the
// brotli command line tool does: the output is the same size and, on code,
// the speed is the same (BenchmarkBrotli11Window22), but a pooled writer's
// match finder and ring buffer are sized by its window, so writers kept for
// small files stay small. Larger inputs keep 4 MiB: a writer's memory stays
// bounded whatever the file's size. They determine output bytes, so
// Fingerprint names them.
const (
	brotliMaxWindowBits = 22
	brotliMinWindowBits = 10
)

// SRI returns the Subresource Integrity value of data: "sha512-" followed by
// the standard base64 encoding of its SHA-512 digest.
func SRI(data []byte) string {
	sum := sha512.Sum512(data)
	return "sha512-" + base64.StdEncoding.EncodeToString(sum[:])
}

// brotliWindowBits is the smallest window that holds n bytes, within the
// format's limits (the window is 2^bits - 16 bytes).
func brotliWindowBits(n int64) int {
	bits := brotliMinWindowBits
	for bits < brotliMaxWindowBits && (1<<bits)-16 < n {
		bits++
	}
	return bits
}

// brotliWriters reuses writers, one pool per quality and window size: a
// writer owns a match finder sized by its window plus ring buffers, which a
// fresh writer allocates and zeroes on every call.
var brotliWriters [12][brotliMaxWindowBits + 1]sync.Pool

// newBrotliWriter is a writer at quality for an input of size bytes, to w;
// put it back with putBrotliWriter once it closed cleanly.
func newBrotliWriter(w io.Writer, quality int, size int64) (*brotli.Writer, func(), error) {
	if quality < 0 || quality > 11 {
		return nil, nil, fmt.Errorf("brotli: quality %d outside 0..11", quality)
	}
	bits := brotliWindowBits(size)
	pool := &brotliWriters[quality][bits]
	bw, _ := pool.Get().(*brotli.Writer)
	if bw == nil {
		bw = brotli.NewWriterOptions(w, brotli.WriterOptions{Quality: quality, LGWin: bits})
	} else {
		bw.Reset(w)
	}
	return bw, func() { pool.Put(bw) }, nil
}

// Brotli compresses data at the quality LevelsFor picks for its size, with
// a window fitted to it.
func Brotli(data []byte) ([]byte, error) {
	return BrotliAt(data, LevelsFor(int64(len(data))).Brotli)
}

// BrotliAt compresses data at quality with a window fitted to its size.
// Below quality 10 the encoder's output depends on how its input is cut
// into writes, so data is written in streamChunk pieces, as Stream writes
// a file it reads: a file gives the same twin in memory, streamed, and
// when an audit makes it again.
func BrotliAt(data []byte, quality int) ([]byte, error) {
	var out bytes.Buffer
	out.Grow(len(data)/3 + 64)
	w, done, err := newBrotliWriter(&out, quality, int64(len(data)))
	if err != nil {
		return nil, err
	}
	for rest := data; len(rest) > 0; {
		n := min(len(rest), streamChunk)
		if _, err := w.Write(rest[:n]); err != nil {
			return nil, fmt.Errorf("brotli: %w", err)
		}
		rest = rest[n:]
	}
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("brotli: %w", err)
	}
	// Only writers that finished cleanly go back; a failed one is dropped.
	done()
	return out.Bytes(), nil
}

// gzipWriters reuses writers and their deflate state (~1 MiB each), one
// pool per level.
var gzipWriters [10]sync.Pool

// newGzipWriter is a writer at level to w. The header is fixed: no file
// name, no comment, modification time 0 and OS byte 255 ("unknown", set by
// the library whatever the host), so equal input always gives
// byte-identical output. Put it back with the returned func once it closed
// cleanly.
func newGzipWriter(w io.Writer, level int) (*gzip.Writer, func(), error) {
	if level < 1 || level > 9 {
		return nil, nil, fmt.Errorf("gzip: level %d outside 1..9", level)
	}
	pool := &gzipWriters[level]
	gw, _ := pool.Get().(*gzip.Writer)
	if gw == nil {
		var err error
		if gw, err = gzip.NewWriterLevel(w, level); err != nil {
			return nil, nil, fmt.Errorf("gzip: %w", err)
		}
	} else {
		// Reset also clears Header (Name, Comment, ModTime, Extra, OS back to 255).
		gw.Reset(w)
	}
	return gw, func() { pool.Put(gw) }, nil
}

// Gzip compresses data at the level LevelsFor picks for its size.
func Gzip(data []byte) ([]byte, error) {
	return GzipAt(data, LevelsFor(int64(len(data))).Gzip)
}

// GzipAt compresses data at level.
func GzipAt(data []byte, level int) ([]byte, error) {
	var out bytes.Buffer
	out.Grow(len(data)/3 + 64)
	w, done, err := newGzipWriter(&out, level)
	if err != nil {
		return nil, err
	}
	if _, err := w.Write(data); err != nil {
		return nil, fmt.Errorf("gzip: %w", err)
	}
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("gzip: %w", err)
	}
	done()
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
