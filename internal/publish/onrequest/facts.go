package onrequest

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/edgeflow/edgeflow/internal/objectstore"
	"github.com/edgeflow/edgeflow/internal/publish/catalog"
	"github.com/edgeflow/edgeflow/internal/publish/metadata"
	"github.com/edgeflow/edgeflow/internal/publish/registry"
	"github.com/edgeflow/edgeflow/internal/publish/versions"
)

// facts are what deciding on a package's versions needs besides what is
// published: its catalog entry, what its source lists, and the rules the
// update check applies. They are kept for a TTL, positive or negative, so
// one listing a TTL answers every version asked for of the package.
type facts struct {
	pkg       catalog.Package
	listing   map[string]registry.Dist
	available []string // the listing's versions
	rules     versions.Rules
	// missing is set when the source says the package does not exist.
	missing bool
	// err is set when the facts could not be read (a registry or store
	// failure); kept a short while so a flood does not repeat it.
	err     error
	expires time.Time
	cost    int64
}

// catalogSnapshot is the catalog's autoupdating entries by name, read
// whole once a TTL: a request for a name not in it costs a map lookup.
type catalogSnapshot struct {
	packages map[string]catalog.Package
	err      error
	expires  time.Time
}

// factsCache holds the catalog snapshot and every package's facts, the
// latter in an LRU bounded by their estimated size.
type factsCache struct {
	cfg    *Config
	flight singleflight.Group

	mu      sync.Mutex
	catalog *catalogSnapshot
	budget  int64
	used    int64
	order   *list.List // of *factsEntry, most recent first
	entries map[string]*list.Element
}

type factsEntry struct {
	name  string
	facts *facts
}

func newFactsCache(cfg *Config) *factsCache {
	return &factsCache{cfg: cfg, budget: cfg.CacheBytes, order: list.New(), entries: map[string]*list.Element{}}
}

// entry returns the catalog entry of name, if the catalog has one that
// updates automatically.
func (c *factsCache) entry(name string) (catalog.Package, bool, error) {
	c.mu.Lock()
	snap := c.catalog
	c.mu.Unlock()
	if snap == nil || !c.cfg.Now().Before(snap.expires) {
		v, _, _ := c.flight.Do("\x00catalog", func() (any, error) { return c.loadCatalog(), nil })
		snap = v.(*catalogSnapshot)
	}
	if snap.err != nil {
		return catalog.Package{}, false, snap.err
	}
	pkg, ok := snap.packages[name]
	return pkg, ok, nil
}

func (c *factsCache) loadCatalog() *catalogSnapshot {
	// Entries that do not load are left out: the update check reports them.
	pkgs, err := catalog.Load(c.cfg.CatalogDir)
	snap := &catalogSnapshot{packages: make(map[string]catalog.Package, len(pkgs)), expires: c.cfg.Now().Add(c.cfg.ListingTTL)}
	for _, p := range pkgs {
		if p.Updatable() {
			snap.packages[p.Name] = p
		}
	}
	if len(pkgs) == 0 && err != nil {
		snap.err, snap.expires = fmt.Errorf("read the catalog %s: %w", c.cfg.CatalogDir, err), c.cfg.Now().Add(c.cfg.ErrorTTL)
	}
	c.mu.Lock()
	c.catalog = snap
	c.mu.Unlock()
	return snap
}

// get returns the facts of pkg: cached while fresh, else read once for
// every request that waits for them.
func (c *factsCache) get(pkg catalog.Package) *facts {
	now := c.cfg.Now()
	c.mu.Lock()
	if el, ok := c.entries[pkg.Name]; ok {
		f := el.Value.(*factsEntry).facts
		if now.Before(f.expires) {
			c.order.MoveToFront(el)
			c.mu.Unlock()
			return f
		}
	}
	c.mu.Unlock()
	v, _, _ := c.flight.Do(pkg.Name, func() (any, error) {
		f := c.read(pkg)
		c.put(pkg.Name, f)
		return f, nil
	})
	return v.(*facts)
}

// read asks the package's source for its versions and the metadata bucket
// for its rejection markers and import window, as CheckPackages does.
func (c *factsCache) read(pkg catalog.Package) *facts {
	cfg := c.cfg
	ctx, cancel := context.WithTimeout(context.Background(), cfg.LookupTimeout)
	defer cancel()
	f := &facts{pkg: pkg, expires: cfg.Now().Add(cfg.ListingTTL)}
	fail := func(err error) *facts {
		f.err, f.expires = err, cfg.Now().Add(cfg.ErrorTTL)
		return f
	}
	var listing *registry.Listing
	var err error
	if pkg.Autoupdate.Source == catalog.SourceGit {
		listing, err = cfg.GitHub.Tags(ctx, pkg.Autoupdate.Target, "")
	} else {
		listing, err = cfg.NPM.Versions(ctx, pkg.Autoupdate.Target, "")
	}
	cfg.metrics.listing(err)
	switch {
	case errors.Is(err, registry.ErrNotFound):
		f.missing = true
		return f
	case err != nil:
		return fail(err)
	}
	rejected, err := metadata.RejectedVersions(ctx, cfg.Store, cfg.MetaBucket, pkg.Name, pkg.Selection())
	if err != nil {
		return fail(err)
	}
	var window *versions.Window
	var w versions.Window
	switch _, err := objectstore.GetJSON(ctx, cfg.Store, cfg.MetaBucket, metadata.ImportWindowKey(pkg.Name), &w); {
	case err == nil:
		window = &w
	case !errors.Is(err, objectstore.ErrNotFound):
		return fail(err)
	}
	f.listing = listing.Versions
	f.rules = versions.Rules{Ignore: pkg.Autoupdate.IgnoreVersions, Rejected: rejected, FirstImport: cfg.FirstImport, Window: window}
	f.available = make([]string, 0, len(f.listing))
	for v, d := range f.listing {
		f.available = append(f.available, v)
		f.cost += int64(len(v)*2+len(d.Tarball)+len(d.Integrity)+len(d.Shasum)) + 96
	}
	return f
}

// put stores f under name and evicts the least recently used facts past
// the budget.
func (c *factsCache) put(name string, f *facts) {
	f.cost += 512 + int64(len(name))
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.entries[name]; ok {
		c.used -= el.Value.(*factsEntry).facts.cost
		c.order.Remove(el)
		delete(c.entries, name)
	}
	if f.cost > c.budget {
		return
	}
	c.entries[name] = c.order.PushFront(&factsEntry{name: name, facts: f})
	c.used += f.cost
	for c.used > c.budget {
		oldest := c.order.Back()
		e := oldest.Value.(*factsEntry)
		c.order.Remove(oldest)
		delete(c.entries, e.name)
		c.used -= e.facts.cost
	}
}
