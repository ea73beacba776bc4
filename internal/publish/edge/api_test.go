package edge

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/edgeflow/edgeflow/internal/objectstore"
	"github.com/edgeflow/edgeflow/internal/publish/catalog"
	"github.com/edgeflow/edgeflow/internal/publish/metadata"
)

// getJSON fetches u and decodes the body into a generic map, keeping the key order.
func getJSON(t *testing.T, u string, header map[string]string) (response, map[string]any, []string) {
	t.Helper()
	resp := get(t, u, header)
	if ct := resp.Header.Get("Content-Type"); ct != "application/json; charset=utf-8" {
		t.Fatalf("%s: Content-Type %q (body %.100q)", u, ct, resp.body)
	}
	var obj map[string]any
	if err := json.Unmarshal(resp.body, &obj); err != nil {
		t.Fatalf("%s: body is not a JSON object: %v (%.200q)", u, err, resp.body)
	}
	return resp, obj, topLevelKeys(t, resp.body)
}

func topLevelKeys(t *testing.T, body []byte) []string {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(string(body)))
	if _, err := dec.Token(); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, tok.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	return keys
}

func keysOf(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func indexedNames(t *testing.T) []string {
	t.Helper()
	var ix metadata.Index
	if _, err := objectstore.GetJSON(context.Background(), testEnv.store, testEnv.buckets.Meta, metadata.SearchIndexKey, &ix); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ix.Libraries {
		names = append(names, e.Name)
	}
	return names
}

func TestAPILibrariesList(t *testing.T) {
	_, ts, _ := newTestEdge(t, nil)
	names := indexedNames(t)

	resp, body, keys := getJSON(t, ts.URL+"/libraries", map[string]string{"Host": "cdn.example.com", "X-Forwarded-Proto": "https"})
	if !reflect.DeepEqual(keys, []string{"results", "total", "available"}) {
		t.Errorf("top-level keys %v", keys)
	}
	if resp.Header.Get("Cache-Control") != "public, max-age=300" || resp.Header.Get("Access-Control-Allow-Origin") != "*" {
		t.Errorf("headers %v", resp.Header)
	}
	results := body["results"].([]any)
	if len(results) != len(names) || body["total"].(float64) != float64(len(names)) || body["available"].(float64) != float64(len(names)) {
		t.Fatalf("%d results, total %v, available %v; the index has %d", len(results), body["total"], body["available"], len(names))
	}
	var got []string
	for _, r := range results {
		got = append(got, r.(map[string]any)["name"].(string))
	}
	if !slices.IsSorted(got) || !reflect.DeepEqual(got, names) {
		t.Errorf("names %v, want %v sorted", got, names)
	}
	first := results[slices.Index(got, testLib)].(map[string]any)
	if !reflect.DeepEqual(keysOf(first), []string{"latest", "name"}) {
		t.Errorf("default fields %v, want name and latest", keysOf(first))
	}
	if first["latest"] != "https://cdn.example.com/ajax/libs/testlib/2.1.0/testlib.js" {
		t.Errorf("latest %v", first["latest"])
	}

	_, body, _ = getJSON(t, ts.URL+"/libraries?fields=version,description,sri,keywords,bogus&limit=2", nil)
	results = body["results"].([]any)
	if len(results) != 2 || body["total"].(float64) != 2 || body["available"].(float64) != float64(len(names)) {
		t.Fatalf("limit=2: %d results, total %v available %v", len(results), body["total"], body["available"])
	}
	want := []string{"description", "keywords", "latest", "name", "sri", "version"}
	for _, r := range results {
		if got := keysOf(r.(map[string]any)); !reflect.DeepEqual(got, want) {
			t.Errorf("fields %v, want %v", got, want)
		}
	}

	resp, body, _ = getJSON(t, ts.URL+"/libraries?search=tstlib&fields=version,sri", nil)
	results = body["results"].([]any)
	if len(results) == 0 || results[0].(map[string]any)["name"] != testLib {
		t.Fatalf("search with a typo: %s", resp.body)
	}
	top := results[0].(map[string]any)
	defaultFile, _ := testVersionDoc(t, testLib, testVersion).Lookup("testlib.js")
	if top["version"] != testVersion || top["sri"] != defaultFile.SRI {
		t.Errorf("search result %v", top)
	}
	if resp.Header.Get("Cache-Control") != "public, max-age=60" {
		t.Errorf("search Cache-Control %q", resp.Header.Get("Cache-Control"))
	}
	_, body, _ = getJSON(t, ts.URL+"/libraries?search=iconic&search_fields=name", nil)
	if n := len(body["results"].([]any)); n != 0 {
		t.Errorf("search_fields=name matched a description: %v", body["results"])
	}
	_, body, _ = getJSON(t, ts.URL+"/libraries?search=iconic&search_fields=description", nil)
	if r := body["results"].([]any); len(r) != 1 || r[0].(map[string]any)["name"] != "font-awesome" {
		t.Errorf("description search: %v", r)
	}
}

func TestAPILibrary(t *testing.T) {
	_, ts, _ := newTestEdge(t, nil)
	ver := testVersionDoc(t, testLib, testVersion)
	defaultFile, _ := ver.Lookup("testlib.js")

	resp, body, keys := getJSON(t, ts.URL+"/libraries/"+testLib, map[string]string{"Host": "cdn.test"})
	wantKeys := []string{"name", "latest", "sri", "description", "version", "filename", "homepage", "keywords", "repository",
		"license", "author", "authors", "autoupdate", "versions", "assets"}
	if !reflect.DeepEqual(keys, wantKeys) {
		t.Errorf("keys %v\nwant %v", keys, wantKeys)
	}
	checks := map[string]any{
		"name":        testLib,
		"latest":      "http://cdn.test/ajax/libs/testlib/2.1.0/testlib.js",
		"sri":         defaultFile.SRI,
		"version":     testVersion,
		"filename":    "testlib.js",
		"license":     "MIT",
		"author":      "Ada Tester",
		"description": testLibPackage.Description,
		"homepage":    testLibPackage.Homepage,
	}
	for k, v := range checks {
		if body[k] != v {
			t.Errorf("%s = %v, want %v", k, body[k], v)
		}
	}
	if got := body["versions"]; !reflect.DeepEqual(got, []any{"1.0.0", "2.0.0", "2.1.0", "3.0.0-beta.1"}) {
		t.Errorf("versions %v (ascending, published only)", got)
	}
	if got := body["repository"].(map[string]any)["url"]; got != testLibPackage.Repository.URL {
		t.Errorf("repository %v", body["repository"])
	}
	if authors := body["authors"].([]any); len(authors) != 2 || authors[1].(map[string]any)["name"] != "Bo Checker" {
		t.Errorf("authors %v", authors)
	}
	if au := body["autoupdate"].(map[string]any); au["source"] != "npm" || au["target"] != "testlib" {
		t.Errorf("autoupdate %v", au)
	}
	assets := body["assets"].([]any)
	if len(assets) != 1 {
		t.Fatalf("assets %v", assets)
	}
	asset := assets[0].(map[string]any)
	if asset["version"] != testVersion || len(asset["files"].([]any)) != len(ver.Files) || asset["sri"].(map[string]any)["testlib.js"] != defaultFile.SRI {
		t.Errorf("latest asset %v", asset)
	}
	if resp.Header.Get("Cache-Control") != "public, max-age=300" {
		t.Errorf("Cache-Control %q", resp.Header.Get("Cache-Control"))
	}

	_, _, keys = getJSON(t, ts.URL+"/libraries/"+testLib+"?fields=versions,name,nonsense", nil)
	if !reflect.DeepEqual(keys, []string{"name", "versions"}) {
		t.Errorf("fields=versions,name: keys %v", keys)
	}

	resp = get(t, ts.URL+"/libraries/no-such-library", nil)
	if resp.StatusCode != 404 || strings.TrimSpace(string(resp.body)) != `{"error":true,"status":404,"message":"Library not found"}` {
		t.Errorf("missing library: %d %s", resp.StatusCode, resp.body)
	}
	// Conditional requests on the API.
	etag := get(t, ts.URL+"/libraries/"+testLib, nil).Header.Get("ETag")
	if r := get(t, ts.URL+"/libraries/"+testLib, map[string]string{"If-None-Match": etag}); r.StatusCode != 304 {
		t.Errorf("If-None-Match on the API: %d", r.StatusCode)
	}
}

func TestAPIVersion(t *testing.T) {
	_, ts, _ := newTestEdge(t, nil)
	ver := testVersionDoc(t, testLib, testVersion)
	resp, body, keys := getJSON(t, ts.URL+"/libraries/"+testLib+"/"+testVersion, nil)
	if !reflect.DeepEqual(keys, []string{"name", "version", "files", "rawFiles", "sri"}) {
		t.Errorf("keys %v", keys)
	}
	if resp.Header.Get("Cache-Control") != immutableCacheControl {
		t.Errorf("exact version Cache-Control %q", resp.Header.Get("Cache-Control"))
	}
	var files, raw []any
	for _, f := range ver.Files {
		files = append(files, f.Path)
		if f.MinifiedFrom == "" {
			raw = append(raw, f.Path)
		}
	}
	if !reflect.DeepEqual(body["files"], files) || !reflect.DeepEqual(body["rawFiles"], raw) || slices.Contains(raw, any("testlib.min.js")) {
		t.Errorf("files %v rawFiles %v", body["files"], body["rawFiles"])
	}
	sri := body["sri"].(map[string]any)
	for _, f := range ver.Files {
		if sri[f.Path] != f.SRI {
			t.Errorf("sri[%s] = %v, want %s", f.Path, sri[f.Path], f.SRI)
		}
	}
	_, _, keys = getJSON(t, ts.URL+"/libraries/"+testLib+"/"+testVersion+"?fields=sri,x", nil)
	if !reflect.DeepEqual(keys, []string{"sri"}) {
		t.Errorf("fields=sri: keys %v", keys)
	}
	resp, body, _ = getJSON(t, ts.URL+"/libraries/"+testLib+"/2", nil)
	if body["version"] != testVersion || resp.Header.Get("Cache-Control") != "public, max-age=300" {
		t.Errorf("range version: %v, Cache-Control %q", body["version"], resp.Header.Get("Cache-Control"))
	}
	for _, v := range []string{"8.0.0", testUnlisted, "4.0.0", "^9"} {
		resp := get(t, ts.URL+"/libraries/"+testLib+"/"+v, nil)
		if resp.StatusCode != 404 || strings.TrimSpace(string(resp.body)) != `{"error":true,"status":404,"message":"Version not found"}` {
			t.Errorf("version %s: %d %s", v, resp.StatusCode, resp.body)
		}
	}
}

func TestAPIStats(t *testing.T) {
	_, ts, _ := newTestEdge(t, nil)
	_, body, keys := getJSON(t, ts.URL+"/stats", nil)
	if !reflect.DeepEqual(keys, []string{"libraries"}) || body["libraries"].(float64) != float64(len(indexedNames(t))) {
		t.Errorf("stats %v", body)
	}
	_, _, keys = getJSON(t, ts.URL+"/stats?fields=nothing", nil)
	if len(keys) != 0 {
		t.Errorf("fields=nothing: keys %v", keys)
	}
}

func TestMetadataCachingAndNegativeCaching(t *testing.T) {
	ctx := t.Context()
	var clock atomic.Int64
	clock.Store(time.Now().UnixNano())
	now := func() time.Time { return time.Unix(0, clock.Load()) }
	_, ts, _ := newTestEdge(t, func(c *Config) { c.Now = now; c.MetaTTL = 30 * time.Second; c.NegativeTTL = 5 * time.Second })

	pkg := catalog.Package{Name: "latecomer", Description: "published after the first request", Filename: "late.js"}
	u := ts.URL + "/ajax/libs/latecomer/1.0.0/late.js"
	if resp := get(t, u, nil); resp.StatusCode != 404 {
		t.Fatalf("before publishing: %d", resp.StatusCode)
	}
	if err := publishVersion(ctx, testEnv.store, testEnv.buckets, pkg, "1.0.0", []fixtureFile{{Path: "late.js", Data: []byte("late")}}, time.Now()); err != nil {
		t.Fatal(err)
	}
	// Still within the negative TTL: the absence is remembered.
	if resp := get(t, u, nil); resp.StatusCode != 404 {
		t.Fatalf("within the negative TTL: %d, want the cached 404", resp.StatusCode)
	}
	clock.Add(int64(6 * time.Second))
	// The expired absence is answered once more while it refreshes.
	waitFor(t, func() bool { return get(t, u, nil).StatusCode == 200 })

	// A second version appears once the package document's TTL has passed.
	if err := publishVersion(ctx, testEnv.store, testEnv.buckets, pkg, "1.1.0", []fixtureFile{{Path: "late.js", Data: []byte("later")}}, time.Now()); err != nil {
		t.Fatal(err)
	}
	u2 := ts.URL + "/ajax/libs/latecomer/1.1.0/late.js"
	if resp := get(t, u2, nil); resp.StatusCode != 404 {
		t.Fatalf("within the package TTL: %d, want 404", resp.StatusCode)
	}
	clock.Add(int64(31 * time.Second))
	waitFor(t, func() bool { return get(t, u2, nil).StatusCode == 200 })
	if resp := get(t, ts.URL+"/ajax/libs/latecomer/latest/late.js", nil); resp.Header.Get("Location") != "/ajax/libs/latecomer/1.1.0/late.js" {
		t.Errorf("latest after the refresh: %q", resp.Header.Get("Location"))
	}
	if resp := get(t, u2, nil); string(resp.body) != "later" {
		t.Errorf("body %q", resp.body)
	}
}

func TestMetadataUnavailableIs503(t *testing.T) {
	// Both stores are closed ports from the start: nothing is cached, and
	// the mirror's copies of the metadata are out of reach too.
	proxy, base, _ := proxiedEdge(t, func(c *Config) { c.MetaTimeout = 300 * time.Millisecond; c.Mirror = deadStore(t) })
	proxy.set(proxyRefuse)
	for _, u := range []string{"/ajax/libs/testlib/2.1.0/testlib.js", "/libraries", "/libraries/testlib", "/stats", "/", "/browse/testlib"} {
		resp := get(t, base+u, nil)
		if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" || resp.Header.Get("Cache-Control") != "no-store" {
			t.Errorf("%s: status %d, headers %v", u, resp.StatusCode, resp.Header)
		}
	}
}

// A version whose processing skipped files lists them, with why, in its
// API entry (and only there: the library's assets keep cdnjs's shape);
// a file stored without twins (a font, or one over the library's limit) is
// served as it is stored, whatever the client accepts.
func TestAPIVersionListsSkippedFiles(t *testing.T) {
	ctx := t.Context()
	st, b := testEnv.store, testEnv.buckets
	pkg := catalog.Package{Name: "skiplib", Description: "has files stored as is", Filename: "a.js"}
	font := []byte("wOF2 not really a font")
	if err := publishVersion(ctx, st, b, pkg, "1.0.0", []fixtureFile{{Path: "a.js", Data: []byte("var a;")}, {Path: "icons.woff2", Data: font}}, time.Now()); err != nil {
		t.Fatal(err)
	}
	doc := testVersionDoc(t, "skiplib", "1.0.0")
	doc.Skipped = []metadata.SkippedFile{{Path: "a.js", Size: 6, Reason: "over the library's size limit (1 KiB): stored as is, without a minified twin, brotli or gzip"}}
	if err := objectstore.PutJSON(ctx, st, b.Meta, metadata.VersionKey("skiplib", "1.0.0"), doc); err != nil {
		t.Fatal(err)
	}
	_, ts, _ := newTestEdge(t, nil)
	_, body, keys := getJSON(t, ts.URL+"/libraries/skiplib/1.0.0", nil)
	if !reflect.DeepEqual(keys, []string{"name", "version", "files", "rawFiles", "sri", "skipped"}) {
		t.Errorf("keys %v", keys)
	}
	want := []any{map[string]any{"path": "a.js", "size": float64(6), "reason": doc.Skipped[0].Reason}}
	if !reflect.DeepEqual(body["skipped"], want) {
		t.Errorf("skipped %v, want %v", body["skipped"], want)
	}
	_, lib, _ := getJSON(t, ts.URL+"/libraries/skiplib", nil)
	for _, a := range lib["assets"].([]any) {
		if _, listed := a.(map[string]any)["skipped"]; listed {
			t.Errorf("the library's assets list skipped files: %v", a)
		}
	}
	resp := get(t, ts.URL+"/ajax/libs/skiplib/1.0.0/icons.woff2", map[string]string{"Accept-Encoding": "br, gzip"})
	if resp.StatusCode != 200 || resp.Header.Get("Content-Encoding") != "" || !bytes.Equal(resp.body, font) || resp.Header.Get("Content-Type") != "font/woff2" {
		t.Errorf("woff2: %d, Content-Encoding %q, Content-Type %q, %d bytes", resp.StatusCode, resp.Header.Get("Content-Encoding"), resp.Header.Get("Content-Type"), len(resp.body))
	}
}
