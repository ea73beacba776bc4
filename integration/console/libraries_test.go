package console

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/worker"

	publishacts "github.com/edgeflow/edgeflow/activities/publish"
	"github.com/edgeflow/edgeflow/internal/console"
	"github.com/edgeflow/edgeflow/internal/objectstore"
	"github.com/edgeflow/edgeflow/internal/publish/catalog"
	"github.com/edgeflow/edgeflow/internal/publish/metadata"
	"github.com/edgeflow/edgeflow/internal/publish/pubclient"
	"github.com/edgeflow/edgeflow/internal/publish/registry"
	"github.com/edgeflow/edgeflow/internal/publish/registry/registrytest"
	"github.com/edgeflow/edgeflow/internal/publish/tarx"
	"github.com/edgeflow/edgeflow/internal/publish/transform"
	"github.com/edgeflow/edgeflow/internal/testenv"
	publishwf "github.com/edgeflow/edgeflow/workflows/publish"
	"github.com/edgeflow/edgeflow/workflows/publish/contract"
)

// The libraries of TestLibrariesAPI (the browser test has its own).
const (
	demoLib = "it-demo"
	idleLib = "it-idle"
)

var consoleBuckets = metadata.Buckets{Files: "it-console-files", Mirror: "it-console-mirror", Meta: "it-console-meta",
	MirrorMeta: "it-console-mirror-meta", Incoming: "it-console-incoming"}

// publishStack is a catalog, the local registry, both publish pools in
// this process and what the console reads them with.
type publishStack struct {
	catalogDir string
	libs       pubclient.Libraries
}

// startPublishStack's catalog has two libraries; its local npm registry
// has demoLib's releases (a hostile one among them, and a prerelease the
// catalog ignores) and nothing of idleLib's.
func startPublishStack(t *testing.T, demoLib, idleLib string) publishStack {
	t.Helper()
	testenv.Require(t, env)
	ctx := context.Background()
	dir := t.TempDir()
	for _, p := range []catalog.Package{
		{Name: demoLib, Description: "a demo library", License: "MIT", Filename: "demo.min.js",
			Autoupdate: catalog.Autoupdate{Source: "npm", Target: demoLib, IgnoreVersions: []string{"*beta*"},
				FileMap: []catalog.FileMapEntry{{BasePath: "dist", Files: []string{"**/*.js"}}}}},
		{Name: idleLib, Description: "nothing released yet", License: "MIT",
			Autoupdate: catalog.Autoupdate{Source: "npm", Target: idleLib,
				FileMap: []catalog.FileMapEntry{{BasePath: "dist", Files: []string{"**/*.js"}}}}},
	} {
		data, _ := json.Marshal(p)
		path := catalog.FilePath(dir, p.Name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	npm := registrytest.New()
	t.Cleanup(npm.Close)
	for _, v := range []string{"1.0.0", "1.1.0", "2.0.0-beta.1"} {
		npm.Add(demoLib, v, registrytest.NPMTarball(registrytest.Entry{Name: "dist/demo.js", Body: fmt.Sprintf("export const version = %q;\n", v)}))
	}
	npm.Add(demoLib, "1.2.0", registrytest.NPMTarball(registrytest.Entry{Name: "dist/a.js", Body: "a"},
		registrytest.Entry{Name: "dist/evil.js", Link: "../../../etc/passwd"}))

	b := consoleBuckets
	if err := objectstore.EnsureBuckets(ctx, env.Store, b.Files, b.Mirror, b.Meta, b.MirrorMeta, b.Incoming); err != nil {
		t.Fatal(err)
	}
	stores := publishacts.Stores{Primary: env.Store, Mirror: env.Store, Buckets: b, IOParallel: 8}
	pub := &publishacts.Publish{Stores: stores, CatalogDir: dir,
		NPM: &registry.NPM{BaseURL: npm.URL, Client: http.DefaultClient}, GitHub: &registry.GitHub{BaseURL: npm.URL},
		HTTP: http.DefaultClient, Extract: tarx.DefaultLimits, FirstImport: 10}
	pool := worker.New(env.Client, contract.TaskQueue, worker.Options{})
	publishwf.Register(pool)
	publishacts.RegisterPublish(pool, pub)
	compress := worker.New(env.Client, contract.CompressTaskQueue, worker.Options{MaxConcurrentActivityExecutionSize: 2})
	publishacts.RegisterCompress(compress, &publishacts.Compress{Stores: stores, CPU: transform.NewLimiter(1)})
	for _, w := range []worker.Worker{pool, compress} {
		if err := w.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(w.Stop)
	}
	// Cleanups run last first: the libraries' runs end while the pools run.
	t.Cleanup(func() { noRunOpen(t, demoLib, idleLib) })
	return publishStack{catalogDir: dir, libs: pubclient.Libraries{Store: env.Store, Meta: b.Meta, CatalogDir: dir}}
}

// noRunOpen waits until no run of the libraries is open (a lane ends a
// moment after the check that waited for it).
func noRunOpen(t *testing.T, names ...string) {
	t.Helper()
	query := fmt.Sprintf("%s IN ('%s') AND ExecutionStatus = 'Running'", contract.PackageKey.GetName(), strings.Join(names, "', '"))
	testenv.Eventually(t, time.Minute, 200*time.Millisecond, "the libraries' runs end", func() (bool, string) {
		resp, err := env.Client.ListWorkflow(context.Background(), &workflowservice.ListWorkflowExecutionsRequest{Query: query})
		if err != nil {
			return false, err.Error()
		}
		return len(resp.GetExecutions()) == 0, fmt.Sprintf("%d open", len(resp.GetExecutions()))
	})
}

// TestLibrariesAPI lists the catalog and shows a library's versions as a
// check over the API publishes them from the local registry: published
// from the package document, the hostile release rejected with the
// marker's reason, a version the source lacks failed with the run's error,
// the ignored prerelease skipped with its rule.
func TestLibrariesAPI(t *testing.T) {
	a := start(t)
	ps := startPublishStack(t, demoLib, idleLib)
	tokens, err := console.ParseTokens([]string{"admin:" + rwSecret, "viewer:" + roSecret + ":ro"}, "test")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(console.New(console.Options{Temporal: env.Client, Tokens: tokens, Libraries: ps.libs,
		Log: slog.New(slog.NewTextHandler(&bytes.Buffer{}, nil))}).Handler())
	t.Cleanup(srv.Close)
	a.srv = srv

	a.fails(a.do("GET", "/api/v1/libraries", "", ""), 401, "Authorization")
	a.fails(a.do("GET", "/api/v1/libraries/"+demoLib, "", ""), 401, "Authorization")
	a.fails(a.do("GET", "/api/v1/libraries?per_page=0", roSecret, ""), 400, "per_page")
	a.fails(a.do("GET", "/api/v1/libraries?page=x", roSecret, ""), 400, "page")
	a.fails(a.do("GET", "/api/v1/libraries/it-nope", roSecret, ""), 404, `"it-nope"`)
	a.fails(a.do("GET", "/api/v1/libraries/it%20lib", roSecret, ""), 400, "name")

	var list []pubclient.Library
	r := a.do("GET", "/api/v1/libraries", roSecret, "")
	a.ok(r, 200, &list)
	if len(list) != 2 || list[0].Name != demoLib || list[1].Name != idleLib || list[0].State != pubclient.StateNotPublished || list[0].LatestVersion != "" {
		t.Fatalf("before any check: %+v", list)
	}
	if ri := r.env.ResultInfo; ri == nil || *ri != (console.ResultInfo{Page: 1, PerPage: 25, Count: 2, TotalCount: 2}) {
		t.Errorf("result_info %+v", ri)
	}
	r = a.do("GET", "/api/v1/libraries?page=2&per_page=1", roSecret, "")
	a.ok(r, 200, &list)
	if len(list) != 1 || list[0].Name != idleLib || *r.env.ResultInfo != (console.ResultInfo{Page: 2, PerPage: 1, Count: 1, TotalCount: 2}) {
		t.Errorf("page 2 of 1: %+v %+v", list, r.env.ResultInfo)
	}

	// Publish: a check of it-demo, and a version its source does not have.
	a.fails(a.do("POST", "/api/v1/libraries/"+demoLib+"/publish", roSecret, ""), 403, "read-only")
	a.ok(a.do("POST", "/api/v1/libraries/"+demoLib+"/publish", rwSecret, ""), 202, nil)
	a.ok(a.do("POST", "/api/v1/libraries/"+demoLib+"/publish", rwSecret, `{"version":"9.9.9"}`), 202, nil)

	want := map[string]string{"1.0.0": pubclient.StatePublished, "1.1.0": pubclient.StatePublished, "1.2.0": pubclient.StateRejected,
		"9.9.9": pubclient.StateFailed, "2.0.0-beta.1": pubclient.StateSkipped}
	var d pubclient.LibraryDetail
	testenv.Eventually(t, 2*time.Minute, 300*time.Millisecond, "it-demo's versions settle", func() (bool, string) {
		a.ok(a.do("GET", "/api/v1/libraries/"+demoLib, roSecret, ""), 200, &d)
		got := map[string]string{}
		for _, v := range d.Versions {
			got[v.Version] = v.State
		}
		return fmt.Sprint(got) == fmt.Sprint(want) && d.State == pubclient.StatePublished, fmt.Sprintf("state %s, versions %v", d.State, got)
	})
	if d.LatestVersion != "1.1.0" || d.LastCheck == nil || d.UpdatedAt == nil || d.WorkflowID != contract.PackageUpdatesWorkflowID(demoLib) {
		t.Errorf("it-demo: %+v", d.Library)
	}
	order := []string{}
	for _, v := range d.Versions {
		order = append(order, v.Version)
		switch v.State {
		case pubclient.StateRejected:
			if v.Type != contract.ErrBadArchive || v.Reason == "" || v.At == nil {
				t.Errorf("the hostile release: %+v", v)
			}
		case pubclient.StateFailed:
			if v.Type != "" || !bytes.Contains([]byte(v.Reason), []byte("no version 9.9.9")) || v.RunID == "" || v.WorkflowID != contract.PublishVersionWorkflowID(demoLib, "9.9.9") {
				t.Errorf("the missing version: %+v", v)
			}
		case pubclient.StateSkipped:
			if v.Rule != "ignoreVersions: *beta*" {
				t.Errorf("the prerelease: %+v", v)
			}
		case pubclient.StatePublished:
			if v.RunID == "" {
				t.Errorf("%s has no run: %+v", v.Version, v)
			}
		}
	}
	if fmt.Sprint(order) != "[9.9.9 2.0.0-beta.1 1.2.0 1.1.0 1.0.0]" {
		t.Errorf("versions in order %v, want newest first", order)
	}
	a.ok(a.do("GET", "/api/v1/libraries", roSecret, ""), 200, &list)
	if list[0].LatestVersion != "1.1.0" || list[0].State != pubclient.StatePublished || list[0].LastCheck == nil || list[1].State != pubclient.StateNotPublished {
		t.Errorf("after the check: %+v", list)
	}
}
