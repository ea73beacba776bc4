package activities

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/worker"

	"github.com/edgeflow/edgeflow/internal/config"
	"github.com/edgeflow/edgeflow/internal/objectstore"
	"github.com/edgeflow/edgeflow/internal/process"
	"github.com/edgeflow/edgeflow/internal/registry"
	"github.com/edgeflow/edgeflow/internal/tarx"
)

// PublishConfig is the flag set of the publish activities.
type PublishConfig struct {
	Storage     config.Storage
	CatalogDir  string
	NPMURL      string
	GitHubURL   string
	FirstImport int
	CPUs        int
	IOParallel  int
}

// RegisterFlags adds the publish flags to fs.
func (c *PublishConfig) RegisterFlags(fs *flag.FlagSet) {
	c.Storage.RegisterFlags(fs)
	fs.StringVar(&c.CatalogDir, "catalog", config.Env("CATALOG_DIR", "catalog"), "catalog directory (env CATALOG_DIR)")
	fs.StringVar(&c.NPMURL, "npm-registry", config.Env("NPM_REGISTRY", "https://registry.npmjs.org"), "npm registry base URL (env NPM_REGISTRY)")
	fs.StringVar(&c.GitHubURL, "github-api", config.Env("GITHUB_API", "https://api.github.com"), "GitHub API base URL (env GITHUB_API; token from GITHUB_TOKEN)")
	fs.IntVar(&c.FirstImport, "first-import", config.EnvInt("FIRST_IMPORT", 10), "versions imported for a package new to the catalog (env FIRST_IMPORT)")
	fs.IntVar(&c.CPUs, "cpus", config.EnvInt("COMPRESS_CPUS", 0), "concurrent compressions per process; 0 = all cores (env COMPRESS_CPUS)")
	fs.IntVar(&c.IOParallel, "io-parallel", config.EnvInt("IO_PARALLEL", 32), "concurrent object-store requests per activity (env IO_PARALLEL)")
}

// Build connects to the stores (creating missing buckets) and returns the activities.
func (c *PublishConfig) Build(ctx context.Context) (*Publish, error) {
	primary, mirror, err := c.Storage.Open()
	if err != nil {
		return nil, err
	}
	b := c.Storage.Buckets
	if err := objectstore.EnsureBuckets(ctx, primary, b.Files, b.Meta, b.Incoming); err != nil {
		return nil, err
	}
	if err := objectstore.EnsureBuckets(ctx, mirror, b.Mirror, b.MirrorMeta); err != nil {
		return nil, err
	}
	httpClient := &http.Client{Timeout: 10 * time.Minute}
	return &Publish{
		Primary: primary, Mirror: mirror, Buckets: b, CatalogDir: c.CatalogDir,
		NPM:         &registry.NPM{BaseURL: c.NPMURL, Client: httpClient},
		GitHub:      &registry.GitHub{BaseURL: c.GitHubURL, Token: config.Env("GITHUB_TOKEN", ""), Client: httpClient},
		HTTP:        httpClient,
		Extract:     tarx.DefaultLimits,
		FirstImport: c.FirstImport,
		CPU:         process.NewLimiter(c.CPUs),
		IOParallel:  c.IOParallel,
	}, nil
}

// RegisterPipeline registers the network-bound publish activities.
func (a *Publish) RegisterPipeline(w worker.Registry) {
	for name, fn := range map[string]any{
		"ListCatalog": a.ListCatalog, "CheckPackages": a.CheckPackages, "Download": a.Download, "Commit": a.Commit, "Materialize": a.Materialize,
		"FindBatchResults": a.FindBatchResults,
	} {
		w.RegisterActivityWithOptions(fn, activity.RegisterOptions{Name: name})
	}
}

// RegisterCompress registers the CPU-bound activity of the compress pool.
func (a *Publish) RegisterCompress(w worker.Registry) {
	w.RegisterActivityWithOptions(a.ProcessBatch, activity.RegisterOptions{Name: "ProcessBatch"})
}

// String names the stores without secrets, for logs.
func (a *Publish) String() string {
	return fmt.Sprintf("primary %s, mirror %s, buckets %+v", a.Primary, a.Mirror, a.Buckets)
}
