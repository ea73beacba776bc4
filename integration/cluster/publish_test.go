//go:build cluster

package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/edgeflow/edgeflow/internal/publish/benchdata"
	"github.com/edgeflow/edgeflow/internal/publish/catalog"
	"github.com/edgeflow/edgeflow/internal/publish/registry/registrytest"
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
		npm.Add(name, publishVersion, tarballOf(files))
		entries = append(entries, samplePackage(name, files))
		// The check reads the workers' catalog (CATALOG_DIR) for each one.
		writeCatalogEntry(t, filepath.Join(dir, "catalog"), entries[i])
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
			if status, _, _ := versionAssets(cl.Edges[0], n, publishVersion); status == http.StatusOK {
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
			var a assets
			eventually(t, 2*time.Minute, name+" listed on "+edge, func() (bool, string) {
				status, got, err := versionAssets(edge, name, publishVersion)
				f.operations++
				a = got
				return status == http.StatusOK && err == nil, fmt.Sprintf("%d %v", status, err)
			})
			for _, path := range a.Files {
				f.operations++
				body, err := fetchFile(edge, name, publishVersion, path)
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

func samplePackage(name string, files map[string][]byte) catalog.Package {
	first := ""
	for p := range files {
		if first == "" || p < first {
			first = p
		}
	}
	return catalog.Package{
		Name: name, Description: "a library the cluster test publishes", License: "MIT", Filename: first,
		Keywords: []string{"cluster"},
		Autoupdate: catalog.Autoupdate{Source: "npm", Target: name,
			FileMap: []catalog.FileMapEntry{{BasePath: "", Files: []string{"**/*.@(js|css)"}}}},
	}
}

func writeCatalogEntry(t *testing.T, dir string, p catalog.Package) {
	t.Helper()
	data, _ := json.MarshalIndent(p, "", "  ")
	path := catalog.FilePath(dir, p.Name)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func tarballOf(files map[string][]byte) []byte {
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	entries := make([]registrytest.Entry, len(paths))
	for i, p := range paths {
		entries[i] = registrytest.Entry{Name: p, Body: string(files[p])}
	}
	return registrytest.NPMTarball(entries...)
}

type assets struct {
	Files []string          `json:"files"`
	SRI   map[string]string `json:"sri"`
}

var edgeClient = &http.Client{Timeout: 30 * time.Second}

func versionAssets(edge, name, version string) (int, assets, error) {
	var a assets
	resp, err := edgeClient.Get(edge + "/libraries/" + name + "/" + version)
	if err != nil {
		return 0, a, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return resp.StatusCode, a, fmt.Errorf("the edge answered %d: %s", resp.StatusCode, bytes.TrimSpace(body))
	}
	if err := json.NewDecoder(resp.Body).Decode(&a); err != nil {
		return resp.StatusCode, a, err
	}
	if len(a.Files) == 0 {
		return resp.StatusCode, a, fmt.Errorf("listed with no files")
	}
	return resp.StatusCode, a, nil
}

// fetchFile gets a file from the edge, unencoded.
func fetchFile(edge, name, version, path string) ([]byte, error) {
	req, _ := http.NewRequest(http.MethodGet, edge+"/ajax/libs/"+name+"/"+version+"/"+(&url.URL{Path: path}).EscapedPath(), nil)
	req.Header.Set("Accept-Encoding", "identity")
	resp, err := edgeClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("status %d", resp.StatusCode)
	}
	return body, nil
}
