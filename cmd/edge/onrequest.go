package main

import (
	"log/slog"
	"net/http"
	"time"

	"github.com/spf13/pflag"
	"go.temporal.io/sdk/client"

	"github.com/edgeflow/edgeflow/internal/cli"
	"github.com/edgeflow/edgeflow/internal/config"
	"github.com/edgeflow/edgeflow/internal/objectstore"
	"github.com/edgeflow/edgeflow/internal/publish/edge"
	"github.com/edgeflow/edgeflow/internal/publish/onrequest"
	"github.com/edgeflow/edgeflow/internal/publish/registry"
)

// onRequestSettings are the flags of publishing on first request: off
// unless a catalog is given, and then the edge is a Temporal client too.
type onRequestSettings struct {
	temporal          config.Temporal
	catalogDir        string
	npmURL, githubURL string
	firstImport       int
	wait, listingTTL  time.Duration
	perLibrary, total int
}

func (o *onRequestSettings) register(fs *pflag.FlagSet) {
	fs.StringVar(&o.catalogDir, "catalog", config.Env("EDGE_CATALOG_DIR", ""), "the workers' catalog: a version of one of its libraries that is not published yet but is upstream and passes the catalog's rules is published on its first request; empty: off, such a request is a 404 and Temporal is not needed (env EDGE_CATALOG_DIR)")
	fs.DurationVar(&o.wait, "wait-for-publish", config.EnvDuration("EDGE_WAIT_FOR_PUBLISH", edge.DefaultWaitForPublish), "how long a first request waits for its version's publish before a 503 with Retry-After (env EDGE_WAIT_FOR_PUBLISH)")
	fs.IntVar(&o.perLibrary, "on-request-per-library", config.EnvInt("EDGE_ON_REQUEST_PER_LIBRARY", onrequest.DefaultPerLibrary), "publishes first requests may start per library per minute, per edge (env EDGE_ON_REQUEST_PER_LIBRARY)")
	fs.IntVar(&o.total, "on-request-total", config.EnvInt("EDGE_ON_REQUEST_TOTAL", onrequest.DefaultTotal), "publishes first requests may start per minute in all, per edge (env EDGE_ON_REQUEST_TOTAL)")
	fs.DurationVar(&o.listingTTL, "registry-ttl", config.EnvDuration("EDGE_REGISTRY_TTL", onrequest.DefaultListingTTL), "how long a package's version listing (and the catalog) answers first requests before it is read again (env EDGE_REGISTRY_TTL)")
	fs.StringVar(&o.npmURL, "npm-registry", config.Env("NPM_REGISTRY", registry.DefaultNPMURL), "npm registry base URL, as the workers' (env NPM_REGISTRY)")
	fs.StringVar(&o.githubURL, "github-api", config.Env("GITHUB_API", "https://api.github.com"), "GitHub API base URL, as the workers' (env GITHUB_API; token from GITHUB_TOKEN)")
	fs.IntVar(&o.firstImport, "first-import", config.EnvInt("FIRST_IMPORT", 10), "versions a package new to the catalog takes, as the workers' (env FIRST_IMPORT)")
	// The connection flags, without their one-letter forms: the edge's
	// flags are also spelled with one dash (-addr), and "-n" would take
	// "-nope" for a namespace instead of refusing it.
	temporalFlags := pflag.NewFlagSet("temporal", pflag.ContinueOnError)
	o.temporal.RegisterFlags(temporalFlags)
	temporalFlags.VisitAll(func(f *pflag.Flag) {
		f.Shorthand = ""
		fs.AddFlag(f)
	})
}

// check refuses settings that cannot work: a wait the server's write
// deadline would cut short, limits that allow nothing.
func (o *onRequestSettings) check(writeTimeout time.Duration) error {
	if o.catalogDir == "" {
		return nil
	}
	switch {
	case o.wait <= 0 || o.wait >= writeTimeout:
		return cli.Fail(cli.ExitUsage, "edge: --wait-for-publish must be above 0 and below --write-timeout (got %v and %v)", o.wait, writeTimeout)
	case o.perLibrary <= 0 || o.total <= 0:
		return cli.Fail(cli.ExitUsage, "edge: --on-request-per-library and --on-request-total must be above 0 (got %d and %d)", o.perLibrary, o.total)
	case o.listingTTL <= 0:
		return cli.Fail(cli.ExitUsage, "edge: --registry-ttl must be above 0 (got %v)", o.listingTTL)
	}
	return nil
}

// build returns the publisher, or nil when off. Its Temporal client
// connects lazily: the edge serves while Temporal is down, and a first
// request then gets a 503 within its wait.
func (o *onRequestSettings) build(primary objectstore.Store, metaBucket string, logger *slog.Logger) (edge.OnRequest, func(), error) {
	if o.catalogDir == "" {
		return nil, func() {}, nil
	}
	opts, err := o.temporal.Options(logger)
	if err != nil {
		return nil, nil, cli.Fail(cli.ExitUsage, "edge: %v", err)
	}
	tc, err := client.NewLazyClient(opts)
	if err != nil {
		return nil, nil, cli.Fail(cli.ExitUsage, "edge: Temporal client: %v", err)
	}
	httpClient := &http.Client{Timeout: 30 * time.Second}
	p, err := onrequest.New(onrequest.Config{
		CatalogDir: o.catalogDir,
		NPM:        &registry.NPM{BaseURL: o.npmURL, Client: httpClient},
		GitHub:     &registry.GitHub{BaseURL: o.githubURL, Token: config.Env("GITHUB_TOKEN", ""), Client: httpClient},
		Store:      primary, MetaBucket: metaBucket, Temporal: tc,
		FirstImport: o.firstImport, ListingTTL: o.listingTTL,
		PerLibrary: o.perLibrary, Total: o.total,
		Logger: logger.With("part", "on-request"),
	})
	if err != nil {
		tc.Close()
		return nil, nil, err
	}
	logger.Info("publishing catalog versions on first request", "catalog", o.catalogDir, "temporal", opts.HostPort,
		"wait", o.wait, "per_library_per_minute", o.perLibrary, "total_per_minute", o.total)
	return p, tc.Close, nil
}
