package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/andybalholm/brotli"

	"github.com/edgeflow/edgeflow/internal/devstack"
	"github.com/edgeflow/edgeflow/internal/objectstore"
	"github.com/edgeflow/edgeflow/internal/publish/catalog"
	"github.com/edgeflow/edgeflow/internal/publish/edge"
	"github.com/edgeflow/edgeflow/internal/publish/metadata"
	"github.com/edgeflow/edgeflow/internal/publish/registry/registrytest"
	"github.com/edgeflow/edgeflow/internal/publish/transform"
	"github.com/edgeflow/edgeflow/workflows/publish/contract"
)

// realEntry is a library's entry from the real cdnjs catalog (a copy kept
// in the repository).
func realEntry(t *testing.T, name string) catalog.Package {
	t.Helper()
	root, err := devstack.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	p, err := catalog.Find(filepath.Join(root, "internal", "publish", "catalog", "testdata", "cdnjs"), name)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

type auditFound struct{ Version, File, Store, Kind string }

// runAudit runs the starter's audit of one package and decodes its JSON.
func runAudit(t *testing.T, name string, args ...string) (contract.AuditStats, int) {
	t.Helper()
	stdout, stderr, code := runStarter(t, "publish", append([]string{"audit", "--package", name, "--json"}, args...)...)
	var keys map[string]json.RawMessage
	if err := json.Unmarshal([]byte(stdout), &keys); err != nil {
		t.Fatalf("audit %v: not one JSON document (%v): %s %s", args, err, stdout, stderr)
	}
	for _, k := range []string{"checked", "problems", "repaired"} {
		if _, ok := keys[k]; !ok {
			t.Errorf("audit --json has no %q: %s", k, stdout)
		}
	}
	var st contract.AuditStats
	if err := json.Unmarshal([]byte(stdout), &st); err != nil {
		t.Fatal(err)
	}
	return st, code
}

func foundOf(st contract.AuditStats) []auditFound {
	var out []auditFound
	for _, p := range st.Problems {
		out = append(out, auditFound{p.Version, p.File, p.Store, p.Kind})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].File != out[j].File {
			return out[i].File < out[j].File
		}
		return out[i].Store < out[j].Store
	})
	return out
}

// TestAuditFindsAndRepairsEveryBreakage publishes ButterCMS (its entry
// from the real cdnjs catalog) from a local registry, breaks it in every
// way the audit looks for, and shows the starter's audit finding each, a
// repairing audit repairing each, a third finding nothing, and the edge
// serving the recorded bytes.
func TestAuditFindsAndRepairsEveryBreakage(t *testing.T) {
	startWorkers(t)
	ctx := testContext(t)
	pkg := realEntry(t, "ButterCMS")
	const version = "1.2.16"
	npm.Add(pkg.Autoupdate.Target, version, registrytest.NPMTarball(
		registrytest.Entry{Name: "package.json", Body: `{"name":"buttercms","version":"1.2.16"}`},
		registrytest.Entry{Name: "dist/butter.js", Body: "/*! butter */\nvar Butter = function (token) { this.token = token; this.version = '1.2.16'; };\n"},
		registrytest.Entry{Name: "dist/butter.min.js", Body: "var Butter=function(t){this.token=t,this.version='1.2.16'};\n"},
		registrytest.Entry{Name: "dist/butter-lite.js", Body: "/*! butter lite */\nvar ButterLite = function (token) {\n  return { token: token, lite: true };\n};\n"},
	))
	if _, out, err := runPublish(t, contract.VersionRef{PackageRef: contract.PackageRef{Name: pkg.Name, Package: &pkg}, Version: version}, nil); err != nil || out.Result == nil {
		t.Fatalf("publish: %+v, %v", out, err)
	}
	doc := getVersion(t, pkg.Name, version)
	key := func(path string) string { return metadata.FileKey(pkg.Name, version, path) }
	recorded := map[string]metadata.File{}
	for _, f := range doc.Files {
		recorded[f.Path] = f
	}
	if _, ok := recorded["butter-lite.min.js"]; !ok || recorded["butter-lite.min.js"].BrotliSize == 0 {
		t.Fatalf("files %+v: want a generated butter-lite.min.js with a .br", doc.Files)
	}

	// Break it: each way on one file (or document).
	minJS := getObject(t, buckets.Mirror, key("butter.min.js"))
	if err := env.Store.Delete(ctx, buckets.Mirror, key("butter.js")); err != nil {
		t.Fatal(err)
	}
	lite := getObject(t, buckets.Files, key("butter-lite.js"))
	putObject(t, buckets.Files, key("butter-lite.js"), lite[:len(lite)/2])
	putObject(t, buckets.Mirror, key("butter.min.js"), bytes.ToUpper(minJS))
	if err := env.Store.Delete(ctx, buckets.Files, key("butter-lite.min.js")+".br"); err != nil {
		t.Fatal(err)
	}
	if err := env.Store.Delete(ctx, buckets.MirrorMeta, metadata.VersionKey(pkg.Name, version)); err != nil {
		t.Fatal(err)
	}
	want := []auditFound{
		{version, "", "mirror", "versionDocument"},
		{version, "butter-lite.js", "primary", "size"},
		{version, "butter-lite.min.js.br", "primary", "encoding"},
		{version, "butter.js", "mirror", "missing"},
		{version, "butter.min.js", "mirror", "sri"},
	}

	st, code := runAudit(t, pkg.Name)
	if got := foundOf(st); code != 1 || !equalFound(got, want) || st.Unrepaired != len(want) || st.Repaired != 0 {
		t.Fatalf("audit without --repair: exit %d, %d unrepaired\n got %v\nwant %v", code, st.Unrepaired, got, want)
	}
	if st.Checked != len(doc.Files) {
		t.Errorf("checked %d files, the version has %d", st.Checked, len(doc.Files))
	}
	st, code = runAudit(t, pkg.Name, "--repair")
	if got := foundOf(st); code != 0 || !equalFound(got, want) || st.Repaired != len(want) || st.Unrepaired != 0 {
		t.Fatalf("audit --repair: exit %d, %d repaired, %d not\n got %v\nwant %v", code, st.Repaired, st.Unrepaired, got, want)
	}
	st, code = runAudit(t, pkg.Name, "--repair")
	if code != 0 || len(st.Problems) != 0 || st.Checked != len(doc.Files) {
		t.Fatalf("second audit: exit %d, %d checked, found %v", code, st.Checked, foundOf(st))
	}
	run := env.Client.GetWorkflow(ctx, contract.AuditCatalogWorkflowID(pkg.Name), "")
	replay(t, run)

	// Both stores hold the recorded bytes again, and the edge serves them.
	for _, f := range doc.Files {
		for _, bucket := range []string{buckets.Files, buckets.Mirror} {
			if data := getObject(t, bucket, key(f.Path)); transform.SRI(data) != f.SRI {
				t.Errorf("%s/%s: not the recorded bytes", bucket, f.Path)
			}
		}
	}
	srv := httptest.NewServer(edge.New(edge.Config{Primary: env.Store, Mirror: env.Store, Buckets: buckets}))
	defer srv.Close()
	for _, f := range doc.Files {
		for _, enc := range []string{"identity", "br"} {
			body := fetchFromEdge(t, srv.URL+"/ajax/libs/"+pkg.Name+"/"+version+"/"+f.Path, enc)
			if transform.SRI(body) != f.SRI || int64(len(body)) != f.Size {
				t.Errorf("the edge serves %s (%s) with another SRI than recorded", f.Path, enc)
			}
		}
	}
}

func equalFound(a, b []auditFound) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func getObject(t *testing.T, bucket, key string) []byte {
	t.Helper()
	data, _, err := objectstore.ReadAll(context.Background(), env.Store, bucket, key)
	if err != nil {
		t.Fatalf("%s/%s: %v", bucket, key, err)
	}
	return data
}

func putObject(t *testing.T, bucket, key string, data []byte) {
	t.Helper()
	if err := objectstore.PutBytes(context.Background(), env.Store, bucket, key, data, objectstore.PutOptions{}); err != nil {
		t.Fatal(err)
	}
}

// fetchFromEdge gets a file in one encoding and returns its decoded bytes.
func fetchFromEdge(t *testing.T, url, encoding string) []byte {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Accept-Encoding", encoding)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: %s", url, resp.Status)
	}
	var r io.Reader = resp.Body
	if strings.Contains(resp.Header.Get("Content-Encoding"), "br") {
		r = brotli.NewReader(resp.Body)
	}
	data, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return data
}
