package edge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/edgeflow/edgeflow/internal/objectstore"
	"github.com/edgeflow/edgeflow/internal/publish/metadata"
)

// packageInfo is a package document plus what the edge derives from it once.
type packageInfo struct {
	doc       *metadata.Package
	published map[string]bool // doc.Versions as a set
}

// hasVersion reports whether the package document lists version. Together
// with an existing version document this is what "published" means.
func (p *packageInfo) hasVersion(version string) bool { return p.published[version] }

// metaReader reads the metadata documents through caches.
type metaReader struct {
	source   *metaSource
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

func newMetaReader(source *metaSource, ttl, negativeTTL, fetchTimeout time.Duration, log *slog.Logger, now func() time.Time) *metaReader {
	return &metaReader{
		source: source,
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
	if info, found, ok := m.packages.peek(name); ok {
		return info, found, nil
	}
	return m.packages.get(name, m.fetchPackage(name))
}

// CachedPackage is Package when the document is cached, fresh or not (a
// stale one is refreshed in the background, as Package does); ok is false,
// and nothing is read, when it is not.
func (m *metaReader) CachedPackage(name string) (info *packageInfo, found, ok bool) {
	if info, found, ok := m.packages.peek(name); ok {
		return info, found, true
	}
	return m.packages.cached(name, m.fetchPackage)
}

// missRevalidateAfter is how old a cached package document may be before a
// request for a version it does not list reads it again: a version
// published a moment ago is served within seconds rather than after the
// package TTL, and requests for versions that do not exist, however many,
// read each package document at most once per this period.
const missRevalidateAfter = 2 * time.Second

// PackageListing returns pkg, or the package document read afresh when pkg
// does not list version and was read over missRevalidateAfter ago.
func (m *metaReader) PackageListing(pkg *packageInfo, version string) *packageInfo {
	if pkg.hasVersion(version) {
		return pkg
	}
	name := pkg.doc.Name
	fresh, found, ok := m.packages.revalidate(name, missRevalidateAfter, m.fetchPackage(name))
	if !ok || !found || fresh == nil {
		return pkg
	}
	return fresh
}

func (m *metaReader) fetchPackage(name string) func(context.Context) (*packageInfo, error) {
	return func(ctx context.Context) (*packageInfo, error) {
		var doc metadata.Package
		bucket, err := m.source.getJSON(ctx, metadata.PackageKey(name), &doc)
		if err != nil {
			return nil, err
		}
		if doc.Name != name {
			return nil, fmt.Errorf("package document %s/%s names %q", bucket, metadata.PackageKey(name), doc.Name)
		}
		info := &packageInfo{doc: &doc, published: make(map[string]bool, len(doc.Versions))}
		for _, v := range doc.Versions {
			info.published[v] = true
		}
		return info, nil
	}
}

// forgetPackage drops the cached package document of name: a version was
// just published.
func (m *metaReader) forgetPackage(name string) { m.packages.forget(name) }

// Version returns the version document of name@version if that version is
// published: its document exists and pkg lists it.
func (m *metaReader) Version(pkg *packageInfo, version string) (*metadata.Version, bool, error) {
	if !pkg.hasVersion(version) {
		return nil, false, nil
	}
	name := pkg.doc.Name
	return m.versions.get(name+"@"+version, func(ctx context.Context) (*metadata.Version, error) {
		var doc metadata.Version
		bucket, err := m.source.getJSON(ctx, metadata.VersionKey(name, version), &doc)
		if err != nil {
			return nil, err
		}
		if doc.Name != name || doc.Version != version {
			return nil, fmt.Errorf("version document %s/%s describes %s@%s", bucket, metadata.VersionKey(name, version), doc.Name, doc.Version)
		}
		return &doc, nil
	})
}

// Index returns the search index: its shards, over the single document
// written before the index was sharded (a shard's entry wins); an index
// that does not exist yet is empty.
func (m *metaReader) Index() (*searchIndex, error) {
	ix, found, err := m.index.get("index", func(ctx context.Context) (*searchIndex, error) {
		keys := []string{metadata.SearchIndexKey}
		for i := range metadata.SearchShards {
			keys = append(keys, metadata.SearchShardKey(i))
		}
		docs := make([]metadata.Index, len(keys))
		errs := make([]error, len(keys))
		var wg sync.WaitGroup
		for i, key := range keys { // all at once: each may wait out a stalled primary
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, errs[i] = m.source.getJSON(ctx, key, &docs[i])
			}()
		}
		wg.Wait()
		loaded, failed := 0, []error(nil)
		for i, err := range errs {
			switch {
			case err == nil:
				loaded++
			case errors.Is(err, objectstore.ErrNotFound):
			default:
				// A shard that cannot be read now (the primary down and the
				// mirror without it) leaves its libraries out of search for
				// a while rather than failing every search.
				failed = append(failed, fmt.Errorf("%s: %w", keys[i], err))
				docs[i] = metadata.Index{}
			}
		}
		switch {
		case loaded == 0 && len(failed) > 0:
			return nil, errors.Join(failed...)
		case loaded == 0:
			return nil, objectstore.ErrNotFound
		case len(failed) > 0:
			m.source.log.Warn("search index shards unreadable; searching without them", "unreadable", len(failed), "first", failed[0])
		}
		byName := map[string]metadata.IndexEntry{}
		for _, doc := range docs { // the legacy document first: shards win
			for _, e := range doc.Libraries {
				byName[e.Name] = e
			}
		}
		entries := make([]metadata.IndexEntry, 0, len(byName))
		for _, e := range byName {
			entries = append(entries, e)
		}
		return newSearchIndex(entries), nil
	})
	if err != nil {
		return nil, err
	}
	if !found {
		return newSearchIndex(nil), nil
	}
	return ix, nil
}

// metaSource is where metadata documents come from: the primary's Meta
// bucket, or, when the primary fails, the copies the pipeline keeps in the
// mirror's MirrorMeta bucket. The primary is the authority on what exists: a
// document it answers is missing is not looked for on the mirror, and one
// the mirror lacks is an error, not a not-found that would be cached, since
// the mirror may lag behind or predate the copying. While the primary's
// breaker is open (files and metadata share it), the mirror is asked first
// and the primary only when the mirror has no copy.
type metaSource struct {
	primary, mirror store
	health          *primaryHealth
	log             *slog.Logger
}

// getJSON decodes the document under key into v and returns the bucket it
// was read from.
func (m *metaSource) getJSON(ctx context.Context, key string, v any) (bucket string, err error) {
	data, from, err := m.read(ctx, key)
	if err != nil {
		return "", err
	}
	if err := json.Unmarshal(data, v); err != nil {
		return "", fmt.Errorf("decode %s/%s from the %s store: %w", from.bucket, key, from.name, err)
	}
	return from.bucket, nil
}

// read returns the bytes of the document under key and the store that had them.
func (m *metaSource) read(ctx context.Context, key string) ([]byte, store, error) {
	first, second := m.primary, m.mirror
	if !m.health.available() {
		first, second = m.mirror, m.primary
	}
	data, firstErr := m.fetch(ctx, first, key)
	if firstErr == nil || (first.primary && errors.Is(firstErr, objectstore.ErrNotFound)) {
		return data, first, firstErr
	}
	if ctx.Err() != nil {
		// Out of time for the other store. Not the mirror's not-found: only
		// the primary may say a document does not exist.
		return nil, first, fmt.Errorf("read %s: %w (%s store: %v)", key, ctx.Err(), first.name, firstErr)
	}
	m.noteFailure(first, second, key, firstErr)
	data, secondErr := m.fetch(ctx, second, key)
	if secondErr == nil || (second.primary && errors.Is(secondErr, objectstore.ErrNotFound)) {
		return data, second, secondErr
	}
	if second.primary {
		m.health.failed()
	}
	primaryErr, mirrorErr := firstErr, secondErr
	if second.primary {
		primaryErr, mirrorErr = secondErr, firstErr
	}
	// The mirror's error is text only: its not-found must not make this a
	// not-found (cached as a 404) when the primary did not say so.
	return nil, second, fmt.Errorf("%w: primary: %w; mirror: %v", errBothStoresFailed, primaryErr, mirrorErr)
}

func (m *metaSource) fetch(ctx context.Context, st store, key string) ([]byte, error) {
	fctx, cancel := context.WithTimeout(ctx, st.timeout)
	defer cancel()
	data, _, err := objectstore.ReadAll(fctx, st.store, st.bucket, key)
	if err == nil && !st.primary {
		m.log.Info("metadata served from the mirror", "key", key)
	}
	return data, err
}

// noteFailure logs a read that the other store is now asked for and trips
// the primary's breaker when the primary itself failed.
func (m *metaSource) noteFailure(failed, next store, key string, err error) {
	if failed.primary {
		m.health.failed()
	}
	m.log.Warn("metadata read failed; trying the other store", "store", failed.name, "next", next.name, "key", key, "error", err)
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
