package transform

import (
	"fmt"
	"math"
	"strings"
)

// Levels is how one file is compressed: a brotli quality and a gzip level.
// The zero Levels is a file stored as is, without twins.
type Levels struct {
	Brotli int `json:"brotli"`
	Gzip   int `json:"gzip"`
}

// LegacyLevels are the levels every file had before they stepped down with
// size: a version document that records none was written with these.
var LegacyLevels = Levels{Brotli: 11, Gzip: 9}

// levelSteps step compression down with size, so that compressing one file
// (brotli and gzip, on one core) stays within MaxFileCompressSeconds. At
// the slowest speeds, in MB per CPU second, that BenchmarkCompressionLevels
// measured on this project's 2-core test machine (docs/benchmarks.md), on
// generated and real source maps and library code — brotli 11 at 0.28, 9
// at 1.55, 5 at 8.8, 3 at 27.9; gzip 9 at 8.3, 6 at 60.6, 5 at 76.9 — each
// step's largest file takes: 4 MiB at 11/9 16 s, 32 MiB at 9/9 26 s, 256
// MiB at 5/6 35 s, 1 GiB (MaxFileSizeLimit) at 3/5 53 s
// (TestLevelStepsKeepTheBound). brotli 10 (0.56) would take 60 s for 32
// MiB: no step uses it. They determine output bytes, so Fingerprint names
// them; changing them changes the fingerprint.
var levelSteps = []struct {
	upTo   int64
	levels Levels
}{
	{4 << 20, Levels{Brotli: 11, Gzip: 9}},
	{32 << 20, Levels{Brotli: 9, Gzip: 9}},
	{256 << 20, Levels{Brotli: 5, Gzip: 6}},
	{math.MaxInt64, Levels{Brotli: 3, Gzip: 5}},
}

// MaxFileCompressSeconds is the bound levelSteps keep: the CPU seconds, on
// one core, that brotli and gzip of the largest file of any step take at
// that step's levels, for files up to MaxFileSizeLimit.
const MaxFileCompressSeconds = 60

// LevelsFor is the compression of a file of size bytes.
func LevelsFor(size int64) Levels {
	for _, s := range levelSteps {
		if size <= s.upTo {
			return s.levels
		}
	}
	return levelSteps[len(levelSteps)-1].levels
}

// levelTable names levelSteps for Fingerprint, e.g.
// "11/9<=4Mi,9/9<=32Mi,5/6<=256Mi,3/5".
func levelTable() string {
	parts := make([]string, len(levelSteps))
	for i, s := range levelSteps {
		parts[i] = fmt.Sprintf("%d/%d", s.levels.Brotli, s.levels.Gzip)
		if s.upTo != math.MaxInt64 {
			parts[i] += fmt.Sprintf("<=%dMi", s.upTo>>20)
		}
	}
	return strings.Join(parts, ",")
}

// Size limits of a library's files.
const (
	// DefaultMaxFileSize is the catalog-wide limit: a larger file is
	// stored as is (no minified twin, no brotli or gzip) and listed as
	// skipped with its reason.
	DefaultMaxFileSize = 512 << 20
	// MaxFileSizeLimit is the largest limit a catalog entry may set: files
	// up to it compress within MaxFileCompressSeconds at the last step.
	MaxFileSizeLimit = 1 << 30
	// MaxMinifySize bounds the files that get a minified twin: the
	// minifiers hold the whole file, a copy and the output in memory.
	MaxMinifySize = 16 << 20
)

// maxFileSize is the limit opts set, or the default.
func (opts Options) maxFileSize() int64 {
	if opts.MaxFileSize > 0 {
		return opts.MaxFileSize
	}
	return DefaultMaxFileSize
}

// Plan is what processing does to one file of a size: the levels it is
// compressed at (zero: stored as is), whether a minified twin may be made,
// and, for a file over the library's limit, why it is stored as is (the
// version document lists it as skipped with that reason).
type Plan struct {
	Levels     Levels
	MayMinify  bool
	SkipReason string
}

// PlanFor decides how the file at path, of size bytes, is processed.
func (opts Options) PlanFor(path string, size int64) Plan {
	switch limit := opts.maxFileSize(); {
	case size > limit:
		return Plan{SkipReason: fmt.Sprintf("over the library's size limit (%s): stored as is, without a minified twin, brotli or gzip", FormatSize(limit))}
	case !Compressible(path):
		return Plan{}
	}
	return Plan{Levels: LevelsFor(size), MayMinify: size <= MaxMinifySize}
}

// NotMinifiedReason is the skip reason of a file that would get a minified
// twin but for its size (over MaxMinifySize).
var NotMinifiedReason = fmt.Sprintf("not minified: over the minifier's %s bound (the minifier holds the whole file)", FormatSize(MaxMinifySize))

// FormatSize writes a byte count the way limits are spoken of: "512 MiB",
// "1 GiB", "1500 bytes".
func FormatSize(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}
