package process

import (
	"bytes"
	"crypto/sha512"
	"encoding/base64"
	"fmt"
	"sync"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/gzip"
)

// Compression settings. They determine output bytes, so Fingerprint names them.
const (
	brotliQuality = 11
	// brotliWindowBits is the library's default window (0 in WriterOptions
	// means 22); spelled out so the fingerprint states it.
	brotliWindowBits = 22
	gzipLevel        = 9
)

// SRI returns the Subresource Integrity value of data: "sha512-" followed by
// the standard base64 encoding of its SHA-512 digest.
func SRI(data []byte) string {
	sum := sha512.Sum512(data)
	return "sha512-" + base64.StdEncoding.EncodeToString(sum[:])
}

// brotliWriters reuses quality-11 writers: each one owns a binary-tree match
// finder of 2×2^22 uint32 (32 MiB) plus ring buffers, which a fresh writer
// allocates and zeroes on every call — most of the cost for small files.
var brotliWriters = sync.Pool{
	New: func() any {
		return brotli.NewWriterOptions(nil, brotli.WriterOptions{Quality: brotliQuality, LGWin: brotliWindowBits})
	},
}

// Brotli compresses data at quality 11 with the default 4 MiB window.
func Brotli(data []byte) ([]byte, error) {
	var out bytes.Buffer
	out.Grow(len(data)/3 + 64)
	w := brotliWriters.Get().(*brotli.Writer)
	w.Reset(&out)
	if _, err := w.Write(data); err != nil {
		return nil, fmt.Errorf("brotli: %w", err)
	}
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("brotli: %w", err)
	}
	// Only writers that finished cleanly go back; a failed one is dropped.
	brotliWriters.Put(w)
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
