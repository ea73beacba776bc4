//go:build cluster

package cluster

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/edgeflow/edgeflow/integration/e2echeck"
	"github.com/edgeflow/edgeflow/internal/publish/benchdata"
	"github.com/edgeflow/edgeflow/internal/publish/catalog"
	"github.com/edgeflow/edgeflow/internal/publish/transform"
	"github.com/edgeflow/edgeflow/workflows/publish/contract"
)

const publishVersion = "1.0.0"

// publishedNames are the packages testPublish published, for testAdmit.
var publishedNames []string

// testPublish publishes sample packages from a local registry through the
// cluster's publish and compress pools, kills the history service with
// SIGKILL once the first version is out, stops a MinIO node for the rest
// of the run, then reads every version and every file from both edges.
func testPublish(t *testing.T) {
	f := &figures{product: "publish"}
	defer record(f)
	ctx := context.Background()
	const packages = 6
	var names []string
	var entries []catalog.Package
	for i := range packages {
		name := fmt.Sprintf("cluster-lib-%02d", i)
		names = append(names, name)
		files := benchdata.Package(uint64(500+i), 8, 32<<10)
		npm.Add(name, publishVersion, e2echeck.TarballOf(files))
		entries = append(entries, e2echeck.SamplePackage(name, "cluster", files))
		// The check reads the workers' catalog (CATALOG_DIR) for each one.
		if err := e2echeck.WriteCatalogEntry(filepath.Join(dir, "catalog"), entries[i]); err != nil {
			t.Fatal(err)
		}
	}
	id := fmt.Sprintf("cluster-updates-%d", time.Now().UnixNano())
	run, err := tc.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: contract.TaskQueue},
		contract.WorkflowTypePackageUpdates, contract.UpdatesInput{Only: names, Packages: entries, Wait: true})
	if err != nil {
		t.Fatal(err)
	}
	f.operations++
	say("publish: %s started for %d packages", id, packages)

	// Mid-publish: once one version is on an edge, the rest are still on
	// their way.
	eventually(t, 10*time.Minute, "a first version on an edge", func() (bool, string) {
		for _, n := range names {
			if status, _, _ := e2echeck.VersionAssets(cl.Edges[0], n, publishVersion); status == http.StatusOK {
				return true, ""
			}
		}
		return false, "none yet"
	})
	killTemporal(t, "history")
	f.faults++
	restart := stopMinIONode(t, 3)
	f.faults++
	var stats contract.UpdatesStats
	eventually(t, 15*time.Minute, "the publish run ends", func() (bool, string) {
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		err := run.Get(wctx, &stats)
		return err == nil, fmt.Sprint(err)
	})
	restart()
	say("publish: the run ended: %+v", stats)
	if stats.Published != packages || stats.Failed != 0 {
		t.Errorf("the run: %+v; want %d published, none failed", stats, packages)
		f.lost += int64(packages - stats.Published)
	}

	// Every version on both edges, every file as its SRI says.
	for _, edge := range cl.Edges {
		for _, name := range names {
			var a e2echeck.Assets
			eventually(t, 2*time.Minute, name+" listed on "+edge, func() (bool, string) {
				status, got, err := e2echeck.VersionAssets(edge, name, publishVersion)
				f.operations++
				a = got
				return status == http.StatusOK && err == nil, fmt.Sprintf("%d %v", status, err)
			})
			for _, path := range a.Files {
				f.operations++
				var body []byte
				err := e2echeck.Retry(ctx, e2echeck.StoreWait, "fetch "+path, func() (err error) {
					body, err = e2echeck.FetchFile(edge, name, publishVersion, path, "identity")
					return err
				})
				if err != nil || transform.SRI(body) != a.SRI[path] {
					t.Errorf("%s: %s@%s/%s: %v (or its bytes do not match its SRI)", edge, name, publishVersion, path, err)
					f.lost++
					continue
				}
				f.verified++
			}
		}
	}
	publishedNames = names
	say("publish: %d files read back from %d edges", f.verified, len(cl.Edges))
}
