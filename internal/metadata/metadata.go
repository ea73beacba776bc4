// Package metadata defines what the publish pipeline writes and the edge reads:
// where every object lives in the buckets and the JSON documents that describe
// packages and versions. A version becomes visible only when its version
// document and the package document listing it are written (the commit point).
package metadata

import (
	"strings"
	"time"

	"github.com/edgeflow/edgeflow/internal/catalog"
)

// Buckets names the buckets of the CDN. Files and Mirror hold the same file
// objects (the mirror on another store in production); Meta holds the JSON
// documents; MirrorMeta, on the mirror's store, holds copies of the documents
// the edge reads (version, package and search index), so the edge can serve
// while the primary store is down; Incoming holds original tarballs and
// staging data of runs.
type Buckets struct {
	Files      string `json:"files"`
	Mirror     string `json:"mirror"`
	Meta       string `json:"meta"`
	MirrorMeta string `json:"mirrorMeta"`
	Incoming   string `json:"incoming"`
}

// DefaultBuckets are the bucket names used when none are configured.
var DefaultBuckets = Buckets{Files: "cdn-files", Mirror: "cdn-mirror", Meta: "cdn-meta", MirrorMeta: "cdn-mirror-meta", Incoming: "cdn-incoming"}

// Precompressed representations are stored beside the original with these suffixes.
const (
	BrotliSuffix = ".br"
	GzipSuffix   = ".gz"
)

// FileKey is the object key of a published file (in Files and Mirror).
func FileKey(name, version, path string) string {
	return name + "/" + version + "/" + strings.TrimPrefix(path, "/")
}

// PackageKey is the Meta (and MirrorMeta) key of a package document.
func PackageKey(name string) string { return "packages/" + name + ".json" }

// VersionKey is the Meta (and MirrorMeta) key of a version document.
func VersionKey(name, version string) string { return "versions/" + name + "/" + version + ".json" }

// VersionPrefix is the Meta prefix under which all version documents of a package live.
func VersionPrefix(name string) string { return "versions/" + name + "/" }

// SearchIndexKey is the Meta (and MirrorMeta) key of the search index (all libraries, compact).
const SearchIndexKey = "index/libraries.json"

// TarballKey is the Incoming key where the original release archive is kept.
func TarballKey(name, version string) string {
	return "tarballs/" + name + "/" + name + "-" + version + ".tgz"
}

// StagingPrefix is the Incoming prefix of one run's staging data (plan, batches, results).
func StagingPrefix(name, version string) string { return "staging/" + name + "/" + version + "/" }

// Package is the package document: the catalog fields plus the published
// versions (ascending semver order) and the latest stable one.
type Package struct {
	catalog.Package
	Versions  []string  `json:"versions"`
	Latest    string    `json:"latest"`
	UpdatedAt time.Time `json:"updatedAt"`
}

// Version is the version document: every published file of one version.
type Version struct {
	Name        string    `json:"name"`
	Version     string    `json:"version"`
	Files       []File    `json:"files"` // sorted by Path
	PublishedAt time.Time `json:"publishedAt"`
	// Processing fingerprints the tools and options that produced derived
	// files; outputs are reused across versions only when it matches.
	Processing string `json:"processing"`
	Stats      Stats  `json:"stats"`
}

// File describes one published file. BrotliSize/GzipSize are zero when no
// precompressed representation is stored (already-compressed formats).
type File struct {
	Path        string `json:"path"`
	Size        int64  `json:"size"`
	SRI         string `json:"sri"`
	ContentType string `json:"contentType"`
	BrotliSize  int64  `json:"brotliSize,omitempty"`
	GzipSize    int64  `json:"gzipSize,omitempty"`
	// MinifiedFrom is set on a generated minified twin: the path of its source.
	MinifiedFrom string `json:"minifiedFrom,omitempty"`
	// StoredAt is the object key (in Files and Mirror) of bytes an earlier
	// version already stored, when this file reuses them; its precompressed
	// representations sit beside it. Empty means FileKey of this version. A
	// reused file is servable from there the moment the version is committed;
	// the copy to this version's own key is made after the commit.
	StoredAt string `json:"storedAt,omitempty"`
}

// Key is the object key the file's bytes are read from.
func (f File) Key(name, version string) string {
	if f.StoredAt != "" {
		return f.StoredAt
	}
	return FileKey(name, version, f.Path)
}

// Stats summarises the work a publish did.
type Stats struct {
	SourceFiles   int   `json:"sourceFiles"`
	Files         int   `json:"files"`
	Bytes         int64 `json:"bytes"`
	ReusedFiles   int   `json:"reusedFiles"`
	Processed     int   `json:"processedFiles"`
	MinifyFailed  int   `json:"minifyFailed"`
	SkippedFiles  int   `json:"skippedFiles"`
	ProcessMillis int64 `json:"processMillis"`
}

// ReuseRate is the share of source files whose outputs were reused.
func (s Stats) ReuseRate() float64 {
	if s.SourceFiles == 0 {
		return 0
	}
	return float64(s.ReusedFiles) / float64(s.SourceFiles)
}

// Lookup returns the file at path, if the version has it.
func (v *Version) Lookup(path string) (File, bool) {
	lo, hi := 0, len(v.Files)
	for lo < hi {
		mid := (lo + hi) / 2
		if v.Files[mid].Path < path {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	if lo < len(v.Files) && v.Files[lo].Path == path {
		return v.Files[lo], true
	}
	return File{}, false
}

// IndexEntry is one library in the search index.
type IndexEntry struct {
	Name        string   `json:"name"`
	Latest      string   `json:"latest"`
	Filename    string   `json:"filename,omitempty"`
	Description string   `json:"description,omitempty"`
	Keywords    []string `json:"keywords,omitempty"`
	Homepage    string   `json:"homepage,omitempty"`
	License     string   `json:"license,omitempty"`
	SRI         string   `json:"sri,omitempty"` // SRI of the latest default file
}

// Index is the search index document, entries sorted by name.
type Index struct {
	Libraries []IndexEntry `json:"libraries"`
	UpdatedAt time.Time    `json:"updatedAt"`
}
