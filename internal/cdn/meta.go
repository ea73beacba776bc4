package cdn

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/edgeflow/edgeflow/internal/metadata"
	"github.com/edgeflow/edgeflow/internal/objectstore"
)

// packageInfo is a package document plus what the edge derives from it once.
type packageInfo struct {
	doc       *metadata.Package
	published map[string]bool // doc.Versions as a set
}

// hasVersion reports whether the package document lists version. Together
// with an existing version document this is what "published" means.
func (p *packageInfo) hasVersion(version string) bool { return p.published[version] }

// metaReader reads the metadata documents of the Meta bucket through caches.
type metaReader struct {
	store    *objectstore.Store
	bucket   string
	packages *docCache[*packageInfo]
	versions *docCache[*metadata.Version]
	index    *docCache[*searchIndex]
}

// Budgets of the metadata caches, in estimated bytes of memory.
const (
	packageCacheBudget = 32 << 20
	versionCacheBudget = 96 << 20
	indexCacheBudget   = 1 << 40 // one entry; bounded by the catalog itself
	// metaErrorBackoff is how long a stale document is served after a failed
	// refresh before the next attempt.
	metaErrorBackoff = 2 * time.Second
)

func newMetaReader(store *objectstore.Store, bucket string, ttl, negativeTTL, fetchTimeout time.Duration, log *slog.Logger, now func() time.Time) *metaReader {
	return &metaReader{
		store:  store,
		bucket: bucket,
		packages: &docCache[*packageInfo]{
			kind: "package", entries: newLRU[string, *docEntry[*packageInfo]](packageCacheBudget),
			ttl: ttl, negativeTTL: negativeTTL, errorBackoff: metaErrorBackoff, fetchTimeout: fetchTimeout,
			cost: packageCost, log: log, now: now,
		},
		versions: &docCache[*metadata.Version]{
			// Version documents never change once published: no expiry.
			kind: "version", entries: newLRU[string, *docEntry[*metadata.Version]](versionCacheBudget),
			ttl: 0, negativeTTL: negativeTTL, errorBackoff: metaErrorBackoff, fetchTimeout: fetchTimeout,
			cost: versionCost, log: log, now: now,
		},
		index: &docCache[*searchIndex]{
			kind: "index", entries: newLRU[string, *docEntry[*searchIndex]](indexCacheBudget),
			ttl: ttl, negativeTTL: negativeTTL, errorBackoff: metaErrorBackoff, fetchTimeout: fetchTimeout,
			cost: func(*searchIndex) int64 { return 1 }, log: log, now: now,
		},
	}
}

// Package returns the package document of name; found is false when the
// library does not exist.
func (m *metaReader) Package(name string) (*packageInfo, bool, error) {
	return m.packages.get(name, func(ctx context.Context) (*packageInfo, error) {
		var doc metadata.Package
		if _, err := m.store.GetJSON(ctx, m.bucket, metadata.PackageKey(name), &doc); err != nil {
			return nil, err
		}
		if doc.Name != name {
			return nil, fmt.Errorf("package document %s/%s names %q", m.bucket, metadata.PackageKey(name), doc.Name)
		}
		info := &packageInfo{doc: &doc, published: make(map[string]bool, len(doc.Versions))}
		for _, v := range doc.Versions {
			info.published[v] = true
		}
		return info, nil
	})
}

// Version returns the version document of name@version if that version is
// published: its document exists and pkg lists it.
func (m *metaReader) Version(pkg *packageInfo, version string) (*metadata.Version, bool, error) {
	if !pkg.hasVersion(version) {
		return nil, false, nil
	}
	name := pkg.doc.Name
	return m.versions.get(name+"@"+version, func(ctx context.Context) (*metadata.Version, error) {
		var doc metadata.Version
		if _, err := m.store.GetJSON(ctx, m.bucket, metadata.VersionKey(name, version), &doc); err != nil {
			return nil, err
		}
		if doc.Name != name || doc.Version != version {
			return nil, fmt.Errorf("version document %s/%s describes %s@%s", m.bucket, metadata.VersionKey(name, version), doc.Name, doc.Version)
		}
		return &doc, nil
	})
}

// Index returns the search index; an index that does not exist yet is empty.
func (m *metaReader) Index() (*searchIndex, error) {
	ix, found, err := m.index.get("index", func(ctx context.Context) (*searchIndex, error) {
		var doc metadata.Index
		if _, err := m.store.GetJSON(ctx, m.bucket, metadata.SearchIndexKey, &doc); err != nil {
			return nil, err
		}
		return newSearchIndex(doc.Libraries), nil
	})
	if err != nil {
		return nil, err
	}
	if !found {
		return newSearchIndex(nil), nil
	}
	return ix, nil
}

func packageCost(p *packageInfo) int64 {
	d := p.doc
	n := 1024 + len(d.Description) + len(d.Homepage)
	for _, k := range d.Keywords {
		n += len(k) + 16
	}
	return int64(n + len(d.Versions)*96) // the slice and the set
}

func versionCost(v *metadata.Version) int64 {
	n := 256
	for _, f := range v.Files {
		n += len(f.Path) + len(f.SRI) + len(f.ContentType) + len(f.MinifiedFrom) + 112
	}
	return int64(n)
}
