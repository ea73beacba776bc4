package publish

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync/atomic"
	"time"

	"go.temporal.io/sdk/temporal"
	"golang.org/x/sync/errgroup"

	"github.com/edgeflow/edgeflow/internal/heartbeat"
	"github.com/edgeflow/edgeflow/internal/objectstore"
	"github.com/edgeflow/edgeflow/internal/publish/catalog"
	"github.com/edgeflow/edgeflow/internal/publish/metadata"
	"github.com/edgeflow/edgeflow/internal/publish/registry"
	"github.com/edgeflow/edgeflow/internal/publish/versions"
	"github.com/edgeflow/edgeflow/workflows/publish/contract"
)

// ListCatalog returns the names of the catalog's entries, sorted. An entry
// that does not load is listed too: the check that loads it reports what is
// wrong, so one broken file neither hides the others nor goes unnoticed.
func (a *Publish) ListCatalog(ctx context.Context) ([]string, error) {
	return catalog.Names(a.CatalogDir)
}

// CheckPackages finds the versions of each package that are not yet
// published, not ignored and not rejected. A package that cannot be checked
// gets a Problem; the others are still checked.
func (a *Publish) CheckPackages(ctx context.Context, refs []contract.PackageRef) ([]contract.PackageCheck, error) {
	out := make([]contract.PackageCheck, len(refs))
	var done atomic.Int64
	// A slow listing (many tag pages, a rate limit) must not look like a dead worker.
	defer heartbeat.Every(ctx, 10*time.Second, func() any { return done.Load() })()
	var g errgroup.Group
	g.SetLimit(8)
	for i, ref := range refs {
		g.Go(func() error {
			out[i] = a.checkPackage(ctx, ref)
			done.Add(1)
			return nil
		})
	}
	_ = g.Wait() // every check reports through its Problem
	return out, nil
}

func (a *Publish) checkPackage(ctx context.Context, ref contract.PackageRef) contract.PackageCheck {
	res := contract.PackageCheck{Name: ref.Name}
	pkg, err := a.loadPackage(ref)
	if err != nil {
		res.Problem = err.Error()
		return res
	}
	listing, notModified, err := a.listVersions(ctx, pkg)
	if err != nil {
		res.Problem = err.Error()
		return res
	}
	res.NotModified = notModified
	published := map[string]bool{}
	var doc metadata.Package
	if _, err := objectstore.GetJSON(ctx, a.Primary, a.Buckets.Meta, metadata.PackageKey(pkg.Name), &doc); err == nil {
		published = doc.Published()
	} else if !errors.Is(err, objectstore.ErrNotFound) {
		res.Problem = err.Error()
		return res
	}
	rejected, err := a.rejectedVersions(ctx, pkg)
	if err != nil {
		res.Problem = err.Error()
		return res
	}
	available := make([]string, 0, len(listing))
	for v := range listing {
		available = append(available, v)
	}
	var window *versions.Window
	var w versions.Window
	switch _, err := objectstore.GetJSON(ctx, a.Primary, a.Buckets.Meta, metadata.ImportWindowKey(pkg.Name), &w); {
	case err == nil:
		window = &w
	case !errors.Is(err, objectstore.ErrNotFound):
		res.Problem = err.Error()
		return res
	}
	rules := versions.Rules{Ignore: pkg.Autoupdate.IgnoreVersions, Rejected: rejected, FirstImport: a.firstImport(), Window: window}
	offered, decided := rules.Offer(available, published)
	if decided != nil {
		// The first import's window holds for every later check.
		if err := objectstore.PutJSON(ctx, a.Primary, a.Buckets.Meta, metadata.ImportWindowKey(pkg.Name), decided); err != nil {
			res.Problem = err.Error()
			return res
		}
	}
	for _, v := range offered {
		d := contract.Dist(listing[v])
		res.NewVersions = append(res.NewVersions, contract.NewVersion{Version: v, Dist: &d})
	}
	return res
}

// loadPackage returns the catalog entry a starter sent, or reads it from the
// workers' catalog; either way it must be valid.
func (a *Publish) loadPackage(ref contract.PackageRef) (catalog.Package, error) {
	if ref.Package != nil {
		return a.sentPackage(ref)
	}
	if a.CatalogDir == "" {
		return catalog.Package{}, temporal.NewNonRetryableApplicationError("no catalog configured on the worker and none sent", contract.ErrInvalidPackage, nil)
	}
	pkg, err := catalog.Find(a.CatalogDir, ref.Name)
	if err != nil {
		return catalog.Package{}, temporal.NewNonRetryableApplicationError(err.Error(), contract.ErrInvalidPackage, nil)
	}
	return pkg, nil
}

// sentPackage checks a package definition a starter sent (--catalog). It
// may publish a library the workers' catalog does not have, as often as its
// author likes, but never replace the reviewed entry of one it has (nor
// one whose name differs only in case): that is refused, unless the
// definition is the reviewed one unchanged.
func (a *Publish) sentPackage(ref contract.PackageRef) (catalog.Package, error) {
	sent := *ref.Package
	refuse := func(format string, args ...any) (catalog.Package, error) {
		return catalog.Package{}, temporal.NewNonRetryableApplicationError(fmt.Sprintf(format, args...), contract.ErrInvalidPackage, nil)
	}
	if sent.Name != ref.Name {
		return refuse("the package sent is named %q, not %q", sent.Name, ref.Name)
	}
	if err := catalog.Check(sent); err != nil {
		return refuse("%v", err)
	}
	if a.CatalogDir == "" {
		return sent, nil
	}
	holder, held, err := catalog.Holder(a.CatalogDir, sent.Name)
	switch {
	case err != nil:
		return catalog.Package{}, fmt.Errorf("read the workers' catalog: %w", err)
	case !held:
		return sent, nil
	}
	if reviewed, err := catalog.Find(a.CatalogDir, holder); err == nil && holder == sent.Name && reflect.DeepEqual(reviewed, sent) {
		return reviewed, nil
	}
	return refuse("%s is in the workers' catalog (as %s): a definition sent by a starter cannot replace its reviewed entry; publish it without --catalog, or change the catalog", sent.Name, holder)
}

// rejectedVersions returns the versions the package's rejection markers
// still hold for, with their reasons (metadata.RejectedVersions, which the
// console and the edge read too).
func (a *Publish) rejectedVersions(ctx context.Context, pkg catalog.Package) (map[string]string, error) {
	return metadata.RejectedVersions(ctx, a.Primary, a.Buckets.Meta, pkg.Name, pkg.Selection())
}

// firstImport is how many versions a package new to the catalog takes.
func (a *Publish) firstImport() int {
	if a.FirstImport <= 0 {
		return versions.DefaultFirstImport
	}
	return a.FirstImport
}

// listVersions asks the package's source for its versions with the cached
// ETag, falling back to the cached listing on 304.
func (a *Publish) listVersions(ctx context.Context, pkg catalog.Package) (map[string]registry.Dist, bool, error) {
	var cache registry.CachedListing
	key := metadata.RegistryCacheKey(pkg.Name)
	if _, err := objectstore.GetJSON(ctx, a.Primary, a.Buckets.Meta, key, &cache); err != nil && !errors.Is(err, objectstore.ErrNotFound) {
		return nil, false, err
	}
	list := func(etag string) (*registry.Listing, error) {
		if pkg.Autoupdate.Source == catalog.SourceGit {
			return a.GitHub.Tags(ctx, pkg.Autoupdate.Target, etag)
		}
		return a.NPM.Versions(ctx, pkg.Autoupdate.Target, etag)
	}
	listing, err := list(cache.ETag)
	if err != nil {
		return nil, false, err
	}
	if listing.NotModified && cache.Versions != nil {
		return cache.Versions, true, nil
	}
	if listing.NotModified {
		// A 304 without a cached listing (the cache was lost): ask unconditionally.
		if listing, err = list(""); err != nil {
			return nil, false, err
		}
		if listing.NotModified {
			return nil, false, fmt.Errorf("%s: the source answered 304 to an unconditional request", pkg.Name)
		}
	}
	cache = registry.CachedListing{ETag: listing.ETag, Versions: listing.Versions}
	if err := objectstore.PutJSON(ctx, a.Primary, a.Buckets.Meta, key, cache); err != nil {
		return nil, false, err
	}
	return listing.Versions, false, nil
}
