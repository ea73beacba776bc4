// Package rebuild writes Publish's metadata for files that are already in
// the files bucket but were never published by the pipeline: a catalog
// imported byte for byte from an older CDN. Every version document is built
// from the stored bytes (the SRI is the hash of what the edge will serve,
// never of a re-processed file), then the package document lists the version
// (the commit point, as for a publish), then the search index; each document
// the edge reads is copied to the mirror's metadata bucket, as Commit does.
package rebuild

import (
	"context"
	"errors"
	"fmt"
	"path"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/edgeflow/edgeflow/internal/objectstore"
	"github.com/edgeflow/edgeflow/internal/publish/catalog"
	"github.com/edgeflow/edgeflow/internal/publish/metadata"
	"github.com/edgeflow/edgeflow/internal/publish/transform"
	"github.com/edgeflow/edgeflow/internal/publish/versions"
)

// Processing is the fingerprint of imported versions: no processing of ours
// produced their files, so nothing is reused from or for them.
const Processing = "imported"

// Stores are Publish's stores and buckets.
type Stores struct {
	Primary, Mirror objectstore.Store
	Buckets         metadata.Buckets
}

// Options tune a rebuild.
type Options struct {
	// Catalog returns a package's catalog entry; a package the catalog does
	// not know gets an entry with its name only.
	Catalog func(name string) (catalog.Package, bool)
	// After resumes after this package name (a retried rebuild).
	After string
	// Parallel bounds the files hashed at once; 0 means 16.
	Parallel int
	// Now stamps the documents; time.Now when nil.
	Now func() time.Time
	// Done is called after each package with its name and the running totals.
	Done func(name string, s Summary)
}

// Summary counts what a rebuild did.
type Summary struct {
	Packages int   `json:"packages"`
	Versions int   `json:"versions"`
	Files    int   `json:"files"`
	Bytes    int64 `json:"bytes"`
	// AlreadyPublished are versions that had a version document: left as is.
	AlreadyPublished int `json:"alreadyPublished"`
	// Skipped lists the first folders that are not name/version of a
	// package (with why).
	Skipped []string `json:"skipped,omitempty"`
}

const maxSkipped = 20

func (s *Summary) skip(format string, args ...any) {
	if len(s.Skipped) < maxSkipped {
		s.Skipped = append(s.Skipped, fmt.Sprintf(format, args...))
	}
}

// Run rebuilds the metadata of every version in the files bucket that has
// no version document yet, package by package in name order. It is
// idempotent: run again (or retried), it finds the documents it wrote and
// leaves them.
func Run(ctx context.Context, s Stores, o Options) (Summary, error) {
	if o.Parallel <= 0 {
		o.Parallel = 16
	}
	if o.Now == nil {
		o.Now = func() time.Time { return time.Now().UTC() }
	}
	var sum Summary
	names, err := folders(ctx, s.Primary, s.Buckets.Files, "", o.After)
	if err != nil {
		return sum, err
	}
	for _, name := range names {
		if err := rebuildPackage(ctx, s, o, name, &sum); err != nil {
			return sum, fmt.Errorf("package %s: %w", name, err)
		}
		if o.Done != nil {
			o.Done(name, sum)
		}
	}
	return sum, nil
}

// folders lists the "folders" (common prefixes) under prefix, after after,
// without their trailing slash and the prefix.
func folders(ctx context.Context, s objectstore.Store, bucket, prefix, after string) ([]string, error) {
	var out []string
	opts := objectstore.ListOptions{Prefix: prefix, Delimiter: "/"}
	if after != "" {
		opts.StartAfter = prefix + after + "/\uffff"
	}
	for {
		page, err := s.List(ctx, bucket, opts)
		if err != nil {
			return nil, err
		}
		for _, p := range page.CommonPrefixes {
			out = append(out, strings.TrimSuffix(strings.TrimPrefix(p, prefix), "/"))
		}
		if page.NextToken == "" {
			return out, nil
		}
		opts.ContinuationToken, opts.StartAfter = page.NextToken, ""
	}
}

func rebuildPackage(ctx context.Context, s Stores, o Options, name string, sum *Summary) error {
	if !packageName.MatchString(name) {
		sum.skip("%s/: not a package name", name)
		return nil
	}
	vs, err := folders(ctx, s.Primary, s.Buckets.Files, name+"/", "")
	if err != nil {
		return err
	}
	entry, ok := o.Catalog(name)
	if !ok {
		entry = catalog.Package{Name: name}
	}
	added := 0
	for _, v := range vs {
		if versions.Latest([]string{v}) != v {
			sum.skip("%s/%s/: not a version", name, v)
			continue
		}
		var existing metadata.Version
		_, err := objectstore.GetJSON(ctx, s.Primary, s.Buckets.Meta, metadata.VersionKey(name, v), &existing)
		if err == nil {
			sum.AlreadyPublished++
			continue
		}
		if !errors.Is(err, objectstore.ErrNoSuchKey) {
			return err
		}
		doc, err := versionDocument(ctx, s, o, name, v)
		if err != nil {
			return fmt.Errorf("version %s: %w", v, err)
		}
		if len(doc.Files) == 0 {
			sum.skip("%s/%s/: no files", name, v)
			continue
		}
		if err := objectstore.PutJSON(ctx, s.Primary, s.Buckets.Meta, metadata.VersionKey(name, v), doc); err != nil {
			return err
		}
		if err := objectstore.Replicate(ctx, s.Primary, s.Buckets.Meta, s.Mirror, s.Buckets.MirrorMeta, metadata.VersionKey(name, v)); err != nil {
			return err
		}
		// The commit point: the package document lists the version.
		if _, err := objectstore.UpdateJSON(ctx, s.Primary, s.Buckets.Meta, metadata.PackageKey(name),
			func(p *metadata.Package, _ bool) (bool, error) {
				p.AddVersion(entry, v, o.Now())
				return true, nil
			}); err != nil {
			return err
		}
		if err := objectstore.Replicate(ctx, s.Primary, s.Buckets.Meta, s.Mirror, s.Buckets.MirrorMeta, metadata.PackageKey(name)); err != nil {
			return err
		}
		sum.Versions++
		sum.Files += doc.Stats.Files
		sum.Bytes += doc.Stats.Bytes
		added++
	}
	if added == 0 {
		return nil
	}
	sum.Packages++
	return updateIndex(ctx, s, o, name)
}

// versionDocument lists a version's stored files and hashes each one.
// Precompressed twins (.br, .gz beside their original) are sizes of the
// original, not files of their own.
func versionDocument(ctx context.Context, s Stores, o Options, name, version string) (*metadata.Version, error) {
	prefix := metadata.FileKey(name, version, "")
	sizes := map[string]int64{}
	for obj, err := range objectstore.Objects(ctx, s.Primary, s.Buckets.Files, prefix) {
		if err != nil {
			return nil, err
		}
		sizes[strings.TrimPrefix(obj.Key, prefix)] = obj.Size
	}
	var paths []string
	for p := range sizes {
		if base, twin := twinOf(p); twin {
			if _, ok := sizes[base]; ok {
				continue
			}
		}
		paths = append(paths, p)
	}
	sort.Strings(paths)
	files := make([]metadata.File, len(paths))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(o.Parallel)
	var mu sync.Mutex
	var total int64
	for i, p := range paths {
		g.Go(func() error {
			body, _, err := s.Primary.Get(gctx, s.Buckets.Files, prefix+p)
			if err != nil {
				return err
			}
			defer body.Close()
			sri, n, err := transform.SRIOf(body)
			if err != nil {
				return fmt.Errorf("read %s: %w", prefix+p, err)
			}
			f := metadata.File{Path: p, Size: n, SRI: sri, ContentType: transform.ContentType(p)}
			if size, ok := sizes[p+metadata.BrotliSuffix]; ok {
				f.BrotliSize = size
			}
			if size, ok := sizes[p+metadata.GzipSuffix]; ok {
				f.GzipSize = size
			}
			files[i] = f
			mu.Lock()
			total += n
			mu.Unlock()
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return &metadata.Version{Name: name, Version: version, Files: files, PublishedAt: o.Now(), Processing: Processing,
		Stats: metadata.Stats{SourceFiles: len(files), Files: len(files), Bytes: total}}, nil
}

// packageName is what a package folder looks like (an npm name without
// scope, or a cdnjs name).
var packageName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// twinOf reports whether p is a precompressed twin and of which path.
func twinOf(p string) (string, bool) {
	for _, suffix := range []string{metadata.BrotliSuffix, metadata.GzipSuffix} {
		if strings.HasSuffix(p, suffix) && path.Base(p) != suffix {
			return strings.TrimSuffix(p, suffix), true
		}
	}
	return "", false
}

// updateIndex puts the package's entry in the search index, from its
// package document and latest version as they are now.
func updateIndex(ctx context.Context, s Stores, o Options, name string) error {
	_, err := objectstore.UpdateJSON(ctx, s.Primary, s.Buckets.Meta, metadata.SearchIndexKey,
		func(ix *metadata.Index, _ bool) (bool, error) {
			var p metadata.Package
			if _, err := objectstore.GetJSON(ctx, s.Primary, s.Buckets.Meta, metadata.PackageKey(name), &p); err != nil {
				return false, err
			}
			var latest *metadata.Version
			var v metadata.Version
			switch _, err := objectstore.GetJSON(ctx, s.Primary, s.Buckets.Meta, metadata.VersionKey(name, p.Latest), &v); {
			case err == nil:
				latest = &v
			case !errors.Is(err, objectstore.ErrNotFound):
				return false, err
			}
			return ix.Put(&p, latest, o.Now()), nil
		})
	if err != nil {
		return err
	}
	return objectstore.Replicate(ctx, s.Primary, s.Buckets.Meta, s.Mirror, s.Buckets.MirrorMeta, metadata.SearchIndexKey)
}
