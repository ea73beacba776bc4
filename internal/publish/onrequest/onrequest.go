// Package onrequest publishes a catalog library's version on its first
// request: the edge asks it about a version it does not have, and it
// decides, by the update check's own rules (versions.Rules), whether the
// version would be published, starts its PublishVersion (one per version,
// however many requests and edges ask) and waits for it as long as the
// request may.
//
// It is bounded so that a crawler inventing versions costs little: only
// catalog libraries are looked up, a package's listing answers every
// version asked of it for a TTL, refusals start nothing, and starts are
// limited per library and in all.
package onrequest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/edgeflow/edgeflow/internal/objectstore"
	"github.com/edgeflow/edgeflow/internal/publish/metadata"
	"github.com/edgeflow/edgeflow/internal/publish/pubclient"
	"github.com/edgeflow/edgeflow/internal/publish/registry"
	"github.com/edgeflow/edgeflow/internal/publish/versions"
)

// Config configures a Publisher. Zero durations and limits get the
// defaults below.
type Config struct {
	// CatalogDir is the catalog the workers publish from (their CATALOG_DIR).
	CatalogDir string
	// NPM and GitHub list a package's versions, as the workers' do.
	NPM    *registry.NPM
	GitHub *registry.GitHub
	// Store and MetaBucket hold the package documents, rejection markers
	// and import windows (the primary store and Publish's Meta bucket).
	Store      objectstore.Store
	MetaBucket string
	// Temporal starts and watches the PublishVersion runs.
	Temporal client.Client
	// FirstImport is the workers' FIRST_IMPORT.
	FirstImport int
	// ListingTTL is how long a package's listing, rejection markers and
	// window, the catalog, and a failed or skipped version's outcome are
	// used before they are read again.
	ListingTTL time.Duration
	// ErrorTTL is how long a failure to read them is remembered.
	ErrorTTL time.Duration
	// LookupTimeout bounds reading one package's facts.
	LookupTimeout time.Duration
	// PerLibrary and Total bound the publishes requests start, per minute.
	PerLibrary, Total int
	// CacheBytes bounds the listings kept in memory.
	CacheBytes int64
	// WatchTimeout is how long a started version is watched for every
	// request that asks for it; after that, a request starts watching anew.
	WatchTimeout time.Duration
	// RetryAfter is what a request told "not ready yet" should wait.
	RetryAfter time.Duration
	Logger     *slog.Logger
	Now        func() time.Time

	metrics *requestMetrics
}

// Defaults of Config.
const (
	DefaultListingTTL    = time.Minute
	DefaultErrorTTL      = 5 * time.Second
	DefaultLookupTimeout = 10 * time.Second
	DefaultPerLibrary    = 10
	DefaultTotal         = 60
	DefaultCacheBytes    = 16 << 20
	DefaultWatchTimeout  = 10 * time.Minute
	DefaultRetryAfter    = 5 * time.Second
)

// Kind is what a request's answer is.
type Kind int

const (
	// NotApplicable: not a request this package answers (no catalog entry
	// that updates automatically, not an exact version); answer as if
	// there were no publishing on request.
	NotApplicable Kind = iota
	// Published: the version is published now; read its metadata again.
	Published
	// Refused: the catalog's rules or the package's source say the version
	// will not be published; Reason says why.
	Refused
	// NotReady: not published yet, or not now (a limit, an outage); try
	// again after RetryAfter.
	NotReady
)

func (k Kind) String() string {
	return [...]string{"not-applicable", "published", "refused", "not-ready"}[k]
}

// Answer is the outcome of a request for a version not published.
type Answer struct {
	Kind       Kind
	Reason     string
	RetryAfter time.Duration
}

// Publisher answers requests for versions not published. It is safe for
// concurrent use.
type Publisher struct {
	cfg     Config
	facts   *factsCache
	limiter *limiter
	watches *watches
	// onPublished is called once per version a watch saw published, before
	// the requests waiting for it are answered.
	onPublished func(name, version string)
}

// New returns a Publisher. It reads nothing until asked.
func New(cfg Config) (*Publisher, error) {
	if cfg.CatalogDir == "" || cfg.Temporal == nil || cfg.Store == nil || cfg.MetaBucket == "" {
		return nil, errors.New("onrequest: a catalog directory, a Temporal client, a store and a metadata bucket are required")
	}
	if cfg.NPM == nil {
		cfg.NPM = &registry.NPM{}
	}
	if cfg.GitHub == nil {
		cfg.GitHub = &registry.GitHub{}
	}
	setDefault(&cfg.FirstImport, versions.DefaultFirstImport)
	setDefault(&cfg.ListingTTL, DefaultListingTTL)
	setDefault(&cfg.ErrorTTL, DefaultErrorTTL)
	setDefault(&cfg.LookupTimeout, DefaultLookupTimeout)
	setDefault(&cfg.PerLibrary, DefaultPerLibrary)
	setDefault(&cfg.Total, DefaultTotal)
	setDefault(&cfg.CacheBytes, DefaultCacheBytes)
	setDefault(&cfg.WatchTimeout, DefaultWatchTimeout)
	setDefault(&cfg.RetryAfter, DefaultRetryAfter)
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	cfg.metrics = newMetrics()
	p := &Publisher{cfg: cfg, limiter: newLimiter(cfg.PerLibrary, cfg.Total, cfg.Now), watches: newWatches()}
	p.facts = newFactsCache(&p.cfg)
	return p, nil
}

func setDefault[T int | int64 | time.Duration](v *T, def T) {
	if *v <= 0 {
		*v = def
	}
}

// OnPublished sets what is called once for each version a request saw
// published, before the requests waiting for it are answered (the edge
// forgets its cached package document there).
func (p *Publisher) OnPublished(f func(name, version string)) { p.onPublished = f }

// Request answers a request for name@version, which the caller does not
// find published (published is what its package document lists, nil when
// there is none). It starts the version's publish when the rules allow
// and waits for it until ctx ends.
func (p *Publisher) Request(ctx context.Context, name, version string, published map[string]bool) Answer {
	a := p.request(ctx, name, version, published)
	p.cfg.metrics.answer(a)
	return a
}

func (p *Publisher) request(ctx context.Context, name, version string, published map[string]bool) Answer {
	if !pubclient.ValidVersion(version) {
		return Answer{Kind: NotApplicable}
	}
	pkg, inCatalog, err := p.facts.entry(name)
	if err != nil {
		p.cfg.Logger.Error("the catalog could not be read; versions are not published on request", "error", err)
		return Answer{Kind: NotApplicable}
	}
	if !inCatalog {
		return Answer{Kind: NotApplicable}
	}
	key := name + "@" + version
	if w := p.watches.find(key, p.cfg.Now()); w != nil {
		return p.await(ctx, w, name, version)
	}
	f := p.facts.get(pkg)
	switch {
	case f.err != nil:
		p.cfg.Logger.Warn("a package's versions could not be listed", "package", name, "error", f.err)
		return Answer{Kind: NotReady, RetryAfter: p.cfg.ErrorTTL, Reason: "the package's source could not be asked; try again shortly"}
	case f.missing:
		return Answer{Kind: Refused, Reason: fmt.Sprintf("the package's source has no package %s", pkg.Autoupdate.Target)}
	}
	if reason := f.rules.Refusal(version, f.available, published); reason != "" {
		return Answer{Kind: Refused, Reason: reason}
	}
	if len(published) == 0 && f.rules.Window == nil {
		return p.firstImport(ctx, name, version)
	}
	w, limited := p.watches.startOrJoin(key, p.cfg.Now(), p.limiter.take, name, func(w *watch) {
		go p.watch(w, name, version, f.listing[version], p.startBy(ctx))
	})
	if w == nil {
		return limitedAnswer(limited)
	}
	return p.await(ctx, w, name, version)
}

func limitedAnswer(retryAfter time.Duration) Answer {
	return Answer{Kind: NotReady, RetryAfter: retryAfter, Reason: "too many versions are being published on request; try again later"}
}

// startBy is when a start made for the request of ctx must be accepted:
// the request's deadline.
func (p *Publisher) startBy(ctx context.Context) time.Time {
	if deadline, ok := ctx.Deadline(); ok {
		return deadline
	}
	return p.cfg.Now().Add(p.cfg.LookupTimeout)
}

// await waits for the watch's outcome until ctx ends.
func (p *Publisher) await(ctx context.Context, w *watch, name, version string) Answer {
	select {
	case <-w.done:
		return w.answer
	case <-ctx.Done():
		return Answer{Kind: NotReady, RetryAfter: p.cfg.RetryAfter, Reason: fmt.Sprintf("%s@%s is being published; try again shortly", name, version)}
	}
}

// listed reads the package document afresh: whether it lists version.
func (p *Publisher) listed(ctx context.Context, name, version string) (bool, error) {
	var doc metadata.Package
	_, err := objectstore.GetJSON(ctx, p.cfg.Store, p.cfg.MetaBucket, metadata.PackageKey(name), &doc)
	switch {
	case errors.Is(err, objectstore.ErrNotFound):
		return false, nil
	case err != nil:
		return false, err
	}
	return doc.Published()[version], nil
}
