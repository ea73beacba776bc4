// Package metadata defines what the publish pipeline writes and the edge reads:
// where every object lives in the buckets and the JSON documents that describe
// packages and versions. A version becomes visible only when its version
// document and the package document listing it are written (the commit point).
package metadata

import (
	"slices"
	"sort"
	"time"

	"github.com/edgeflow/edgeflow/internal/publish/catalog"
	"github.com/edgeflow/edgeflow/internal/publish/versions"
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

// Package is the package document: the catalog fields plus the published
// versions (ascending semver order) and the latest stable one.
type Package struct {
	catalog.Package
	Versions []string `json:"versions"`
	Latest   string   `json:"latest"`
	// Incomplete are listed versions whose commit has not finished all its
	// steps (the mirror's copies, the search index, Materialize): they are
	// served, and the next check runs them again to finish.
	Incomplete []string  `json:"incomplete,omitempty"`
	UpdatedAt  time.Time `json:"updatedAt"`
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
	// Skipped lists the selected files not processed as their type would
	// be, with why: over the library's size limit (stored as is, without
	// twins), or too large to minify. The API and the console show it.
	Skipped []SkippedFile `json:"skipped,omitempty"`
}

// SkippedFile is a file of a version whose processing was skipped, with why.
type SkippedFile struct {
	Path   string `json:"path"`
	Size   int64  `json:"size"`
	Reason string `json:"reason"`
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
	// BrotliLevel and GzipLevel are the levels the twins were made at
	// (they step down with size), so an audit that makes a twin again
	// makes the same bytes; zero in documents written before they were
	// recorded, when every twin was brotli 11 and gzip 9.
	BrotliLevel int `json:"brotliLevel,omitempty"`
	GzipLevel   int `json:"gzipLevel,omitempty"`
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

// AddVersion lists version in the package document (once), under the
// catalog entry it was published with, in semver order, and recomputes the
// latest stable version.
func (p *Package) AddVersion(entry catalog.Package, version string, at time.Time) {
	p.Package = entry
	if !slices.Contains(p.Versions, version) {
		p.Versions = append(p.Versions, version)
	}
	versions.Sort(p.Versions)
	p.Latest = versions.Latest(p.Versions)
	p.UpdatedAt = at
}

// Published is what the update check counts as published, by version: every
// listed version, true unless its commit stopped part way (such a version
// is offered again, so that its run finishes it).
func (p *Package) Published() map[string]bool {
	out := make(map[string]bool, len(p.Versions))
	for _, v := range p.Versions {
		out[v] = !slices.Contains(p.Incomplete, v)
	}
	return out
}

// MarkIncomplete records that version's commit has steps left to do.
func (p *Package) MarkIncomplete(version string) {
	if !slices.Contains(p.Incomplete, version) {
		p.Incomplete = append(p.Incomplete, version)
	}
}

// MarkComplete records that every step of version's commit is done; it
// reports whether that changed the document.
func (p *Package) MarkComplete(version string) bool {
	i := slices.Index(p.Incomplete, version)
	if i < 0 {
		return false
	}
	p.Incomplete = slices.Delete(p.Incomplete, i, i+1)
	if len(p.Incomplete) == 0 {
		p.Incomplete = nil
	}
	return true
}

// Withdraw takes version out of the package document, so the edge no
// longer serves it (an audit found it broken beyond repair); it reports
// whether the document listed it.
func (p *Package) Withdraw(version string, at time.Time) bool {
	i := slices.Index(p.Versions, version)
	if i < 0 {
		return false
	}
	p.Versions = slices.Delete(p.Versions, i, i+1)
	p.MarkComplete(version)
	p.Latest = versions.Latest(p.Versions)
	p.UpdatedAt = at
	return true
}

// EntryOf is the search index entry of a package; latest, when known, gives
// the SRI of its default file.
func EntryOf(p *Package, latest *Version) IndexEntry {
	e := IndexEntry{Name: p.Name, Latest: p.Latest, Filename: p.Filename, Description: p.Description,
		Keywords: p.Keywords, Homepage: p.Homepage, License: p.License}
	if latest != nil {
		if f, ok := latest.Lookup(p.Filename); ok {
			e.SRI = f.SRI
		}
	}
	return e
}

// Upsert puts e into the index in name order, replacing the entry of the same name.
func (ix *Index) Upsert(e IndexEntry, at time.Time) {
	i := sort.Search(len(ix.Libraries), func(i int) bool { return ix.Libraries[i].Name >= e.Name })
	if i < len(ix.Libraries) && ix.Libraries[i].Name == e.Name {
		ix.Libraries[i] = e
	} else {
		ix.Libraries = slices.Insert(ix.Libraries, i, e)
	}
	ix.UpdatedAt = at
}

// Put brings the index up to date with package p: its entry is upserted,
// or removed when the catalog keeps the library out of search
// (autoupdate.excludeFromSearch). It reports whether the index changed.
func (ix *Index) Put(p *Package, latest *Version, at time.Time) bool {
	if p.Autoupdate.ExcludeFromSearch {
		return ix.Remove(p.Name, at)
	}
	ix.Upsert(EntryOf(p, latest), at)
	return true
}

// Remove drops the entry of name, reporting whether there was one.
func (ix *Index) Remove(name string, at time.Time) bool {
	i := sort.Search(len(ix.Libraries), func(i int) bool { return ix.Libraries[i].Name >= name })
	if i == len(ix.Libraries) || ix.Libraries[i].Name != name {
		return false
	}
	ix.Libraries = slices.Delete(ix.Libraries, i, i+1)
	ix.UpdatedAt = at
	return true
}

// Rejection is the marker of a version that can never publish as the
// catalog stands (a hostile archive, no files selected): update checks skip
// it until an operator deletes the marker, or the catalog changes what it
// depends on.
type Rejection struct {
	Name    string    `json:"name"`
	Version string    `json:"version"`
	Type    string    `json:"type"`
	Reason  string    `json:"reason"`
	At      time.Time `json:"at"`
	// Selection is the package's fileMap fingerprint (catalog
	// Package.Selection) when the reason depends on it (no files selected,
	// two files to one path): a fileMap fix clears the rejection by itself.
	// Empty for reasons in the release itself.
	Selection string `json:"selection,omitempty"`
}

// Holds reports whether the rejection still applies to a package whose
// fileMap fingerprint is now selection.
func (r Rejection) Holds(selection string) bool {
	return r.Selection == "" || r.Selection == selection
}
