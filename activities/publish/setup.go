// Package publish holds Publish's activities: thin adapters from Temporal to
// the logic in internal/publish, one struct per worker pool, each holding
// only what its pool needs. Publish serves the publish queue (catalog
// checks, staging, commits); Compress serves the compress queue (per-file
// CPU work).
package publish

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/worker"

	"github.com/edgeflow/edgeflow/internal/config"
	"github.com/edgeflow/edgeflow/internal/objectstore"
	"github.com/edgeflow/edgeflow/internal/publish/catalog"
	"github.com/edgeflow/edgeflow/internal/publish/metadata"
	"github.com/edgeflow/edgeflow/internal/publish/plan"
	"github.com/edgeflow/edgeflow/internal/publish/registry"
	"github.com/edgeflow/edgeflow/internal/publish/tarx"
	"github.com/edgeflow/edgeflow/internal/publish/transform"
	"github.com/edgeflow/edgeflow/workflows/publish/contract"
)

// Stores are the buckets both pools read and write.
type Stores struct {
	Primary, Mirror objectstore.Store
	Buckets         metadata.Buckets
	IOParallel      int // concurrent object-store requests per activity; 0 means 32
}

func (s *Stores) ioParallel() int {
	if s.IOParallel > 0 {
		return s.IOParallel
	}
	return 32
}

// Publish is the publish pool's activities: it reads the catalog and the
// registries, stages versions and commits them.
type Publish struct {
	Stores
	CatalogDir string
	NPM        *registry.NPM
	GitHub     *registry.GitHub
	// Changes is the npm registry's changes feed the follower reads; nil:
	// FollowRegistry refuses.
	Changes *registry.Changes
	HTTP    *http.Client // for archive downloads
	Extract tarx.Limits
	// MaxTarballBytes bounds a release archive as downloaded; 0 means
	// registry.DefaultMaxTarballBytes.
	MaxTarballBytes int64
	// StallTimeout ends a staging attempt that made no progress for that
	// long; 0 means the activity's heartbeat timeout.
	StallTimeout time.Duration
	Batch        plan.BatchLimits // zero: plan.DefaultBatchLimits
	// MaxFileSize is the catalog-wide limit on the files processed (a
	// library's maxFileSize overrides it): a larger file is stored as is
	// and listed as skipped. 0 means catalog.DefaultMaxFileSize.
	MaxFileSize int64
	FirstImport int              // versions imported for a package new to the catalog; 0 means 10
	Now         func() time.Time // for document timestamps; time.Now when nil
	TempDir     string           // scratch space for archives; os.TempDir when empty
	metrics     *publishMetrics  // set by RegisterPublish
}

// Compress is the compress pool's activity: minify, compress and hash.
type Compress struct {
	Stores
	CPU *transform.Limiter // bounds concurrent compressions in this process
	// TempDir holds a streamed file and its twins while they are stored;
	// os.TempDir when empty.
	TempDir string
	// Process replaces transform.File (tests); nil means transform.File.
	Process func(path string, data []byte, opts transform.Options, shipped func(string) bool) ([]transform.Output, []string, error) `json:"-"`
	metrics *compressMetrics                                                                                                        // set by RegisterCompress
}

// RegisterPublish registers the publish pool's activities under the
// contract's names, the names the workflows schedule and histories hold:
// renaming a Go method then cannot strand a run in flight.
func RegisterPublish(r worker.ActivityRegistry, a *Publish) {
	a.metrics = newPublishMetrics()
	register(r, publishActivities(a))
}

// RegisterCompress registers the compress pool's activities: processing
// batches and auditing packages.
func RegisterCompress(r worker.ActivityRegistry, c *Compress) {
	c.metrics = newCompressMetrics()
	newAuditMetrics()
	register(r, compressActivities(c))
}

// namedActivity is one row of a pool's registration table.
type namedActivity struct {
	name string
	fn   any
}

func publishActivities(a *Publish) []namedActivity {
	return []namedActivity{
		{contract.ListCatalogActivity, a.ListCatalog},
		{contract.CheckPackagesActivity, a.CheckPackages},
		{contract.StageVersionActivity, a.StageVersion},
		{contract.CommitActivity, a.Commit},
		{contract.MaterializeActivity, a.Materialize},
		{contract.FindBatchResultsActivity, a.FindBatchResults},
		{contract.RebuildMetadataActivity, a.RebuildMetadata},
		{contract.ListPublishedActivity, a.ListPublished},
		{contract.FetchOriginalActivity, a.FetchOriginal},
		{contract.FollowRegistryActivity, a.FollowRegistry},
	}
}

func compressActivities(c *Compress) []namedActivity {
	return []namedActivity{
		{contract.CompressBatchActivity, c.CompressBatch},
		{contract.AuditPackageActivity, c.AuditPackage},
	}
}

func register(r worker.ActivityRegistry, table []namedActivity) {
	for _, act := range table {
		r.RegisterActivityWithOptions(act.fn, activity.RegisterOptions{Name: act.name})
	}
}

func (a *Publish) now() time.Time {
	if a.Now != nil {
		return a.Now()
	}
	return time.Now().UTC()
}

// StorageFlags are the store settings every pool takes.
type StorageFlags struct {
	Storage    config.Storage
	IOParallel int
}

func (f *StorageFlags) register(fs *pflag.FlagSet) {
	f.Storage.RegisterFlags(fs)
	fs.IntVar(&f.IOParallel, "io-parallel", config.EnvInt("IO_PARALLEL", 32), "concurrent object-store requests per activity (env IO_PARALLEL)")
}

// open connects to the stores, creating the missing buckets of this pool.
func (f *StorageFlags) open(ctx context.Context) (Stores, error) {
	primary, mirror, err := f.Storage.Open()
	if err != nil {
		return Stores{}, err
	}
	b := f.Storage.Buckets
	if err := objectstore.EnsureBuckets(ctx, primary, b.Files, b.Meta, b.Incoming); err != nil {
		return Stores{}, err
	}
	if err := objectstore.EnsureBuckets(ctx, mirror, b.Mirror, b.MirrorMeta); err != nil {
		return Stores{}, err
	}
	return Stores{Primary: primary, Mirror: mirror, Buckets: b, IOParallel: f.IOParallel}, nil
}

// PublishConfig is the flag set of the publish pool.
type PublishConfig struct {
	StorageFlags
	CatalogDir  string
	NPMURL      string
	ChangesURL  string
	GitHubURL   string
	FirstImport int
	// TarballHosts are hosts, beside the registries', that archive
	// downloads may be redirected to.
	TarballHosts string
	// MaxFileSize is the catalog-wide file size limit, in bytes.
	MaxFileSize int64
}

// RegisterFlags adds the publish pool's flags to fs.
func (c *PublishConfig) RegisterFlags(fs *pflag.FlagSet) {
	c.StorageFlags.register(fs)
	fs.StringVar(&c.CatalogDir, "catalog", config.Env("CATALOG_DIR", "catalog"), "catalog directory (env CATALOG_DIR)")
	fs.StringVar(&c.NPMURL, "npm-registry", config.Env("NPM_REGISTRY", registry.DefaultNPMURL), "npm registry base URL (env NPM_REGISTRY)")
	fs.StringVar(&c.ChangesURL, "npm-changes", config.Env("NPM_CHANGES_URL", registry.DefaultChangesURL), "the npm registry's changes feed the follower reads (env NPM_CHANGES_URL)")
	fs.StringVar(&c.GitHubURL, "github-api", config.Env("GITHUB_API", "https://api.github.com"), "GitHub API base URL (env GITHUB_API; token from GITHUB_TOKEN)")
	fs.IntVar(&c.FirstImport, "first-import", config.EnvInt("FIRST_IMPORT", 10), "versions imported for a package new to the catalog (env FIRST_IMPORT)")
	fs.StringVar(&c.TarballHosts, "tarball-hosts", config.Env("TARBALL_HOSTS", DefaultTarballHosts), "comma-separated hosts, beside the registries', that archive downloads may be redirected to (env TARBALL_HOSTS)")
	fs.Int64Var(&c.MaxFileSize, "max-file-size", int64(config.EnvInt("MAX_FILE_SIZE", catalog.DefaultMaxFileSize)),
		"catalog-wide limit, in bytes, on the files compressed: a larger one is stored as is and listed as skipped; a library's maxFileSize overrides it (env MAX_FILE_SIZE)")
}

// Build connects to the stores and returns the publish pool's activities.
func (c *PublishConfig) Build(ctx context.Context) (*Publish, error) {
	if c.MaxFileSize < 1 || c.MaxFileSize > catalog.MaxFileSizeLimit {
		return nil, fmt.Errorf("--max-file-size (MAX_FILE_SIZE): %d is not a usable limit: give bytes from 1 to %d (1 GiB)", c.MaxFileSize, catalog.MaxFileSizeLimit)
	}
	stores, err := c.open(ctx)
	if err != nil {
		return nil, err
	}
	// Redirects are followed only to the registries and the declared
	// tarball hosts: a registry document cannot send the worker elsewhere.
	hosts := append([]string{c.NPMURL, c.GitHubURL}, strings.Split(c.TarballHosts, ",")...)
	httpClient := &http.Client{Timeout: 10 * time.Minute, CheckRedirect: registry.RedirectPolicy(hosts...)}
	return &Publish{
		Stores:     stores,
		CatalogDir: c.CatalogDir,
		NPM:        &registry.NPM{BaseURL: c.NPMURL, Client: httpClient},
		GitHub:     &registry.GitHub{BaseURL: c.GitHubURL, Token: config.Env("GITHUB_TOKEN", ""), Client: httpClient},
		// A long-poll is bounded by its own wait, not the downloads' timeout.
		Changes:     &registry.Changes{URL: c.ChangesURL, Client: &http.Client{CheckRedirect: registry.RedirectPolicy(c.ChangesURL)}},
		HTTP:        httpClient,
		Extract:     tarx.DefaultLimits,
		FirstImport: c.FirstImport,
		MaxFileSize: c.MaxFileSize,
	}, nil
}

// DefaultTarballHosts is where GitHub redirects archive downloads.
const DefaultTarballHosts = "codeload.github.com"

// CompressConfig is the flag set of the compress pool.
type CompressConfig struct {
	StorageFlags
	CPUs int
}

// RegisterFlags adds the compress pool's flags to fs.
func (c *CompressConfig) RegisterFlags(fs *pflag.FlagSet) {
	c.StorageFlags.register(fs)
	fs.IntVar(&c.CPUs, "cpus", config.EnvInt("COMPRESS_CPUS", 0), "concurrent compressions per process; 0 = all cores (env COMPRESS_CPUS)")
}

// Build connects to the stores and returns the compress pool's activity.
func (c *CompressConfig) Build(ctx context.Context) (*Compress, error) {
	stores, err := c.open(ctx)
	if err != nil {
		return nil, err
	}
	return &Compress{Stores: stores, CPU: transform.NewLimiter(c.CPUs)}, nil
}
