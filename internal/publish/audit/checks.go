package audit

import (
	"bytes"
	"fmt"
	"io"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/gzip"

	"github.com/edgeflow/edgeflow/internal/publish/metadata"
	"github.com/edgeflow/edgeflow/internal/publish/transform"
)

// Right reports whether data is the file as recorded: its size and SRI.
func Right(f metadata.File, data []byte) bool {
	return int64(len(data)) == f.Size && transform.SRI(data) == f.SRI
}

// CheckFile says what is wrong with a stored file ("" when nothing): found
// is false when the object is missing.
func CheckFile(f metadata.File, data []byte, found bool) string {
	switch {
	case !found:
		return KindMissing
	case int64(len(data)) != f.Size:
		return KindSize
	case transform.SRI(data) != f.SRI:
		return KindSRI
	}
	return ""
}

// Twins are the precompressed representations a file's document records,
// by suffix.
func Twins(f metadata.File) []string {
	var out []string
	if f.BrotliSize > 0 {
		out = append(out, metadata.BrotliSuffix)
	}
	if f.GzipSize > 0 {
		out = append(out, metadata.GzipSuffix)
	}
	return out
}

// CheckTwin says what is wrong with a stored .br or .gz twin ("" when
// nothing): it must decode to exactly the file's recorded bytes. right,
// when the store's file was found right, is those bytes: a comparison then
// replaces a second hash. The decoder reads at most one byte past the
// recorded size, so a twin that inflates to far more costs no more than a
// right one.
func CheckTwin(f metadata.File, suffix string, data []byte, found bool, right []byte) (kind, detail string) {
	if !found {
		return KindEncoding, "missing"
	}
	decoded, err := Decode(suffix, data, f.Size)
	switch {
	case err != nil:
		return KindEncoding, err.Error()
	case right != nil && !bytes.Equal(decoded, right):
		return KindEncoding, "does not decode to the recorded bytes"
	case right == nil && !Right(f, decoded):
		return KindEncoding, "does not decode to the recorded bytes"
	}
	return "", ""
}

// Decode decodes a twin, reading at most limit+1 decoded bytes.
func Decode(suffix string, data []byte, limit int64) ([]byte, error) {
	var r io.Reader
	switch suffix {
	case metadata.BrotliSuffix:
		r = brotli.NewReader(bytes.NewReader(data))
	case metadata.GzipSuffix:
		zr, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			return nil, fmt.Errorf("gzip: %w", err)
		}
		r = zr
	default:
		return nil, fmt.Errorf("no decoder for %q", suffix)
	}
	out, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", suffix, err)
	}
	return out, nil
}

// Encode makes a twin of file f from its right bytes, as publishing did:
// at the level its version document records (brotli 11 and gzip 9 where it
// records none, the levels of every file before they stepped down with
// size), so the twin is byte for byte the one published.
func Encode(f metadata.File, suffix string, data []byte) ([]byte, error) {
	levels := transform.LegacyLevels
	if f.BrotliLevel > 0 {
		levels.Brotli = f.BrotliLevel
	}
	if f.GzipLevel > 0 {
		levels.Gzip = f.GzipLevel
	}
	if suffix == metadata.BrotliSuffix {
		return transform.BrotliAt(data, levels.Brotli)
	}
	return transform.GzipAt(data, levels.Gzip)
}
