package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	"golang.org/x/sync/errgroup"

	publishacts "github.com/edgeflow/edgeflow/activities/publish"
	"github.com/edgeflow/edgeflow/internal/objectstore"
	"github.com/edgeflow/edgeflow/internal/publish/catalog"
	"github.com/edgeflow/edgeflow/internal/publish/metadata"
	"github.com/edgeflow/edgeflow/internal/publish/registry"
	"github.com/edgeflow/edgeflow/internal/publish/registry/registrytest"
	"github.com/edgeflow/edgeflow/internal/publish/versions"
	"github.com/edgeflow/edgeflow/workflows/publish/contract"
)

// fullCatalogSize is about the number of auto-updated libraries of the real
// cdnjs catalog (5,880 in a 6,200-file catalog).
const fullCatalogSize = 5900

// syntheticEntry is a catalog file shaped like the real ones: a quarter of
// the libraries come from git tags (written as git+https URLs), the rest
// from npm; a fileMap of a few globs under dist.
func syntheticEntry(i int) (catalog.Package, string) {
	name := fmt.Sprintf("scale-lib-%04d", i)
	p := catalog.Package{
		Name: name, Description: "A synthetic library shaped like a real catalog entry", License: "MIT",
		Keywords: []string{"scale", "benchmark", fmt.Sprintf("group-%d", i%40)}, Homepage: "https://example.com/" + name,
		Repository: &catalog.Repository{Type: "git", URL: "git+https://github.com/scale/" + name + ".git"},
		Authors:    []catalog.Author{{Name: "Bench"}}, Filename: name + ".min.js",
		Autoupdate: catalog.Autoupdate{Source: catalog.SourceNPM, Target: name,
			FileMap: []catalog.FileMapEntry{{BasePath: "dist", Files: []string{"*.min.js", "*.css", "!(*.map)*.js"}}}},
	}
	target := name
	if i%4 == 0 {
		p.Autoupdate.Source, p.Autoupdate.Target = catalog.SourceGit, "git+https://github.com/scale/"+name+".git"
		target = "scale/" + name
	}
	return p, target
}

func scaleTarball(name, version string) []byte {
	return registrytest.NPMTarball(
		registrytest.Entry{Name: "package.json", Body: `{"name":"` + name + `","version":"` + version + `"}`},
		registrytest.Entry{Name: "dist/" + name + ".min.js", Body: "var " + "v=" + `"` + version + `";`},
		registrytest.Entry{Name: "dist/" + name + ".css", Body: ".x{color:red}"},
	)
}

// BenchmarkCheckFullCatalog checks a catalog the size of the real one
// (5,900 auto-updated libraries) against a local registry: once when nothing
// changed (every listing a conditional request answered 304), then with 1%
// of the libraries having a new version, measured until every one of them is
// visible (listed in its package document). It reports seconds and registry
// requests per second for both.
func BenchmarkCheckFullCatalog(b *testing.B) {
	if env == nil {
		b.Skip("needs the dev server and MinIO (not started with -short)")
	}
	setUpStack(b)
	ctx := context.Background()
	dir := b.TempDir()
	reg := registrytest.New()
	b.Cleanup(reg.Close)
	pkgs := make([]catalog.Package, fullCatalogSize)
	targets := make([]string, fullCatalogSize)
	for i := range pkgs {
		pkgs[i], targets[i] = syntheticEntry(i)
		data, _ := json.MarshalIndent(pkgs[i], "", "  ")
		path := catalog.FilePath(dir, pkgs[i].Name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			b.Fatal(err)
		}
		for _, v := range []string{"1.0.0", "1.1.0"} {
			reg.Add(targets[i], v, scaleTarball(pkgs[i].Name, v))
		}
	}
	pub := *acts
	pub.CatalogDir = dir
	pub.NPM = &registry.NPM{BaseURL: reg.URL, Client: acts.HTTP}
	pub.GitHub = &registry.GitHub{BaseURL: reg.URL, Client: acts.HTTP}
	seed(b, ctx, &pub, pkgs)
	startPools(b, &pub, nil)

	for i := 0; i < b.N; i++ {
		// Nothing new: every listing is a 304, nothing is offered.
		before := reg.NotModified.Load() + reg.Documents.Load()
		start := time.Now()
		stats := runCheck(b, ctx, fmt.Sprintf("scale-nothing-%d-%d", i, time.Now().UnixNano()))
		secs := time.Since(start).Seconds()
		requests := reg.NotModified.Load() + reg.Documents.Load() - before
		if stats.Checked != fullCatalogSize || stats.NewVersions != 0 || stats.NotModified != fullCatalogSize || len(stats.Problems) > 0 {
			b.Fatalf("check of an unchanged catalog: %+v", stats)
		}
		b.ReportMetric(secs, "nothing-new-s")
		b.ReportMetric(float64(requests)/secs, "nothing-new-req/s")

		// 1% new: one library in a hundred has a new version.
		version := fmt.Sprintf("2.%d.0", i)
		var fresh []string
		for j := 0; j < fullCatalogSize; j += 100 {
			reg.Add(targets[j], version, scaleTarball(pkgs[j].Name, version))
			fresh = append(fresh, pkgs[j].Name)
		}
		before = reg.NotModified.Load() + reg.Documents.Load()
		start = time.Now()
		stats = runCheck(b, ctx, fmt.Sprintf("scale-one-percent-%d-%d", i, time.Now().UnixNano()))
		checked := time.Since(start).Seconds()
		requests = reg.NotModified.Load() + reg.Documents.Load() - before
		if stats.NewVersions != len(fresh) {
			b.Fatalf("check with 1%% new: %+v; want %d new versions", stats, len(fresh))
		}
		waitVisible(b, ctx, fresh, version, 10*time.Minute)
		b.ReportMetric(checked, "1%-new-check-s")
		b.ReportMetric(float64(requests)/checked, "1%-new-req/s")
		b.ReportMetric(time.Since(start).Seconds(), "1%-new-all-visible-s")
	}
}

// seed puts the catalog in the state a long-running deployment has: every
// version published (package documents), every listing cached with its
// ETag, every import window kept.
func seed(b *testing.B, ctx context.Context, pub *publishacts.Publish, pkgs []catalog.Package) {
	b.Helper()
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(32)
	at := time.Now().UTC()
	for _, p := range pkgs {
		g.Go(func() error {
			var listing *registry.Listing
			var err error
			if p.Autoupdate.Source == catalog.SourceGit {
				listing, err = pub.GitHub.Tags(gctx, p.Autoupdate.Target, "")
			} else {
				listing, err = pub.NPM.Versions(gctx, p.Autoupdate.Target, "")
			}
			if err != nil {
				return err
			}
			cache := registry.CachedListing{ETag: listing.ETag, Versions: listing.Versions}
			if err := objectstore.PutJSON(gctx, env.Store, buckets.Meta, metadata.RegistryCacheKey(p.Name), cache); err != nil {
				return err
			}
			var doc metadata.Package
			for v := range listing.Versions {
				doc.AddVersion(p, v, at)
			}
			if err := objectstore.PutJSON(gctx, env.Store, buckets.Meta, metadata.PackageKey(p.Name), doc); err != nil {
				return err
			}
			return objectstore.PutJSON(gctx, env.Store, buckets.Meta, metadata.ImportWindowKey(p.Name), versions.Window{Floor: "1.0.0", Seen: "1.1.0"})
		})
	}
	if err := g.Wait(); err != nil {
		b.Fatal(err)
	}
}

// runCheck runs one scheduled check (it does not wait for the versions it
// hands to lanes) and returns its stats.
func runCheck(b *testing.B, ctx context.Context, id string) contract.UpdatesStats {
	b.Helper()
	run, err := env.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: contract.TaskQueue},
		contract.WorkflowTypePackageUpdates, contract.UpdatesInput{})
	if err != nil {
		b.Fatal(err)
	}
	var stats contract.UpdatesStats
	if err := run.Get(ctx, &stats); err != nil {
		b.Fatal(err)
	}
	return stats
}

// waitVisible polls until every package document lists version.
func waitVisible(b *testing.B, ctx context.Context, names []string, version string, within time.Duration) {
	b.Helper()
	deadline := time.Now().Add(within)
	pending := slices.Clone(names)
	for len(pending) > 0 {
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d new versions not visible within %s (first: %s)", len(pending), len(names), within, pending[0])
		}
		next := pending[:0]
		for _, n := range pending {
			var doc metadata.Package
			if _, err := objectstore.GetJSON(ctx, env.Store, buckets.Meta, metadata.PackageKey(n), &doc); err != nil || !slices.Contains(doc.Versions, version) {
				next = append(next, n)
			}
		}
		pending = next
		if len(pending) > 0 {
			time.Sleep(500 * time.Millisecond)
		}
	}
}
