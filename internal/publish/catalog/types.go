// Package catalog reads and validates the library catalog: one JSON file per
// library in the cdnjs package format, at <catalog>/<first letter>/<name>.json.
package catalog

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
)

// Package is one library's catalog entry, field for field the cdnjs format.
type Package struct {
	Name        string      `json:"name"`
	Description string      `json:"description,omitempty"`
	Keywords    []string    `json:"keywords,omitempty"`
	License     string      `json:"license,omitempty"`
	Homepage    string      `json:"homepage,omitempty"`
	Repository  *Repository `json:"repository,omitempty"`
	Authors     []Author    `json:"authors,omitempty"`
	Filename    string      `json:"filename,omitempty"`
	// Autoupdate is zero for a library cdnjs keeps but never updates: its
	// entry loads and its published versions stay served.
	Autoupdate   Autoupdate    `json:"autoupdate,omitzero"`
	Optimization *Optimization `json:"optimization,omitempty"`
	// MaxFileSize overrides, for this library, the catalog-wide limit on
	// the files Publish processes (512 MiB unless the publish pool sets
	// another): a larger file is stored as is, without a minified twin,
	// brotli or gzip, and listed as skipped. In bytes, 1 to
	// MaxFileSizeLimit. An edgeflow field: cdnjs's format has none.
	MaxFileSize *int64 `json:"maxFileSize,omitempty"`
}

// Limits of the maxFileSize field (transform's, which processes the files).
const (
	// DefaultMaxFileSize is the catalog-wide limit unless the publish pool
	// is given another.
	DefaultMaxFileSize = 512 << 20
	// MaxFileSizeLimit is the largest maxFileSize: files up to it compress
	// within the bound the compression levels keep (docs/publish.md).
	MaxFileSizeLimit = 1 << 30
)

// FileSizeLimit is the library's own maxFileSize, or 0 when it has none
// (the catalog-wide limit holds).
func (p *Package) FileSizeLimit() int64 {
	if p.MaxFileSize == nil {
		return 0
	}
	return *p.MaxFileSize
}

// Updatable reports whether the library has an autoupdate block: one
// without is kept in the catalog and never checked for new versions.
func (p *Package) Updatable() bool { return !p.Autoupdate.IsZero() }

// Repository is where the library's source lives.
type Repository struct {
	Type      string `json:"type,omitempty"`
	URL       string `json:"url,omitempty"`
	Directory string `json:"directory,omitempty"`
}

// Author credits one author of the library.
type Author struct {
	Name  string `json:"name,omitempty"`
	Email string `json:"email,omitempty"`
	URL   string `json:"url,omitempty"`
}

// Source names where new versions are found.
const (
	SourceNPM = "npm"
	SourceGit = "git"
)

// Autoupdate says where versions come from and which files of each are published.
type Autoupdate struct {
	Source         string         `json:"source"`
	Target         string         `json:"target"`
	FileMap        []FileMapEntry `json:"fileMap,omitempty"`
	IgnoreVersions []string       `json:"ignoreVersions,omitempty"`
	// ExcludeFromSearch keeps the library out of the search index (cdnjs
	// sets it on font families published as hundreds of near-identical
	// libraries); its files and API entry are served as usual.
	ExcludeFromSearch bool `json:"excludeFromSearch,omitempty"`
}

// IsZero reports an absent autoupdate block.
func (a Autoupdate) IsZero() bool {
	return a.Source == "" && a.Target == "" && a.FileMap == nil && a.IgnoreVersions == nil && !a.ExcludeFromSearch
}

// FileMapEntry selects files under BasePath by glob; BasePath is stripped from
// the published path.
type FileMapEntry struct {
	BasePath string   `json:"basePath"`
	Files    []string `json:"files"`
}

// Optimization switches minification per file type; each defaults to
// true. PNG and JPG are cdnjs's image switches: read and kept, but images
// are published as shipped here, so they change nothing.
type Optimization struct {
	JS  *bool `json:"js,omitempty"`
	CSS *bool `json:"css,omitempty"`
	PNG *bool `json:"png,omitempty"`
	JPG *bool `json:"jpg,omitempty"`
}

// MinifyJS reports whether JavaScript files get a minified twin.
func (p *Package) MinifyJS() bool {
	return p.Optimization == nil || p.Optimization.JS == nil || *p.Optimization.JS
}

// MinifyCSS reports whether CSS files get a minified twin.
func (p *Package) MinifyCSS() bool {
	return p.Optimization == nil || p.Optimization.CSS == nil || *p.Optimization.CSS
}

// Selection fingerprints what decides which files of a release are
// selected (the fileMap): a rejection for a reason that depends on it is
// cleared by a catalog fix.
func (p *Package) Selection() string {
	data, _ := json.Marshal(p.Autoupdate.FileMap) // plain strings: cannot fail
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:8])
}
