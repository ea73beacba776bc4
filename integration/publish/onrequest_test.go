package integration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/edgeflow/edgeflow/internal/objectstore"
	"github.com/edgeflow/edgeflow/internal/publish/catalog"
	"github.com/edgeflow/edgeflow/internal/publish/edge"
	"github.com/edgeflow/edgeflow/internal/publish/metadata"
	"github.com/edgeflow/edgeflow/internal/publish/onrequest"
	"github.com/edgeflow/edgeflow/internal/publish/registry"
	"github.com/edgeflow/edgeflow/internal/publish/registry/registrytest"
	"github.com/edgeflow/edgeflow/internal/publish/transform"
	"github.com/edgeflow/edgeflow/workflows/publish/contract"
)

// onRequestPackage is a catalog entry for an npm package whose files are
// dist/*.js, with ignore as its ignoreVersions.
func onRequestPackage(name string, ignore ...string) catalog.Package {
	return catalog.Package{
		Name: name, Description: "a library published on first request", License: "MIT", Filename: "file00.js",
		Keywords: []string{"onrequest"},
		Autoupdate: catalog.Autoupdate{Source: "npm", Target: name, IgnoreVersions: ignore,
			FileMap: []catalog.FileMapEntry{{BasePath: "dist", Files: []string{"*.js"}}}},
	}
}

// releaseFiles are the n files of a release of version, by their path in
// the published version.
func releaseFiles(version string, n int) map[string]string {
	files := map[string]string{}
	for i := range n {
		files[fmt.Sprintf("file%02d.js", i)] = fmt.Sprintf("/*! v%s file %d */\nexport function f%d(a, b) { return a + b + %d; }\n", version, i, i, i)
	}
	return files
}

// addRelease puts an n-file release of name@version on the local registry.
func addRelease(name, version string, n int) map[string]string {
	files := releaseFiles(version, n)
	var entries []registrytest.Entry
	for path, body := range files {
		entries = append(entries, registrytest.Entry{Name: "dist/" + path, Body: body})
	}
	slices.SortFunc(entries, func(a, b registrytest.Entry) int { return strings.Compare(a.Name, b.Name) })
	npm.Add(name, version, registrytest.NPMTarball(entries...))
	return files
}

// onRequestStack is the publish pools on a catalog, and edges that publish
// that catalog's versions on first request.
type onRequestStack struct {
	catalogDir string
}

// startOnRequestStack writes the catalog and runs both pools on it.
func startOnRequestStack(t *testing.T, pkgs ...catalog.Package) *onRequestStack {
	t.Helper()
	setUpStack(t)
	pub := *acts
	pub.CatalogDir = writeCatalog(t, pkgs...)
	startPools(t, &pub, nil)
	return &onRequestStack{catalogDir: pub.CatalogDir}
}

// edge starts an edge (in process, as the other edge tests do) whose
// publisher is built from cfg over the stack's catalog, registry, store and
// Temporal; wait is its EDGE_WAIT_FOR_PUBLISH.
func (s *onRequestStack) edge(t *testing.T, cfg onrequest.Config, wait time.Duration) string {
	return s.edgeWith(t, cfg, edge.Config{WaitForPublish: wait})
}

// edgeWith is edge with more of the edge's settings (ecfg).
func (s *onRequestStack) edgeWith(t *testing.T, cfg onrequest.Config, ecfg edge.Config) string {
	t.Helper()
	cfg.CatalogDir = s.catalogDir
	cfg.NPM = &registry.NPM{BaseURL: npm.URL}
	cfg.Store, cfg.MetaBucket = env.Store, buckets.Meta
	if cfg.Temporal == nil {
		cfg.Temporal = env.Client
	}
	p, err := onrequest.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ecfg.Primary, ecfg.Mirror, ecfg.Buckets, ecfg.OnRequest = env.Store, env.Store, buckets, p
	srv := httptest.NewServer(edge.New(ecfg))
	t.Cleanup(srv.Close)
	return srv.URL
}

// publishFromCatalog publishes name@version as the update check does, from
// the workers' catalog, and waits for it: a library on-request tests ask
// a new version of has been imported already.
func publishFromCatalog(t *testing.T, name, version string) {
	t.Helper()
	run, err := env.Client.ExecuteWorkflow(testContext(t), versionStart(name, version), contract.WorkflowTypePublishVersion,
		contract.PublishInput{VersionRef: contract.VersionRef{PackageRef: contract.PackageRef{Name: name}, Version: version}})
	if err != nil {
		t.Fatal(err)
	}
	if err := run.Get(testContext(t), nil); err != nil {
		t.Fatalf("publish %s@%s: %v", name, version, err)
	}
}

// response is what a test reads of an answer.
type response struct {
	status int
	header http.Header
	body   string
}

func get(t testing.TB, url string) response {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: body: %v", url, err)
	}
	return response{resp.StatusCode, resp.Header, string(body)}
}

// publishRuns counts the PublishVersion runs of name@version that
// visibility lists (it learns of them a moment late).
func publishRuns(t testing.TB, name, version string) int {
	t.Helper()
	resp, err := env.Client.ListWorkflow(context.Background(), &workflowservice.ListWorkflowExecutionsRequest{
		Query: fmt.Sprintf("WorkflowType = '%s' AND %s = '%s' AND %s = '%s'", contract.WorkflowTypePublishVersion,
			contract.PackageKey.GetName(), name, contract.VersionKey.GetName(), version)})
	if err != nil {
		t.Fatal(err)
	}
	return len(resp.GetExecutions())
}

// neverStarted checks that name@version has no PublishVersion run: the
// workflow ID is read directly, not through visibility, so no lag hides one.
func neverStarted(t testing.TB, name, version string) {
	t.Helper()
	_, err := env.Client.DescribeWorkflow(context.Background(), contract.PublishVersionWorkflowID(name, version), "")
	var notFound *serviceerror.NotFound
	if !errors.As(err, &notFound) {
		t.Errorf("%s@%s: a PublishVersion run exists (describe: %v); a refused version must start nothing", name, version, err)
	}
	if n := npm.Requests(registrytest.TarballPath(name, version)); n != 0 {
		t.Errorf("%s@%s: its tarball was downloaded %d times; a refused version must start nothing", name, version, n)
	}
}

// checkServed checks that an answer is the published file: 200, cacheable,
// the release's bytes, matching the SRI the API lists for it.
func checkServed(t testing.TB, base, name, version, path string, r response, want string) {
	t.Helper()
	if r.status != http.StatusOK {
		t.Fatalf("%s@%s/%s: %d %s, want 200", name, version, path, r.status, r.body)
	}
	if r.body != want {
		t.Fatalf("%s@%s/%s: served %q, want the release's %q", name, version, path, r.body, want)
	}
	api := get(t, fmt.Sprintf("%s/libraries/%s/%s?fields=sri", base, name, version))
	var doc struct {
		SRI map[string]string `json:"sri"`
	}
	if err := json.Unmarshal([]byte(api.body), &doc); err != nil || api.status != http.StatusOK {
		t.Fatalf("API of %s@%s: %d %s (%v)", name, version, api.status, api.body, err)
	}
	if got := transform.SRI([]byte(r.body)); doc.SRI[path] != got {
		t.Errorf("%s@%s/%s: served bytes have SRI %s, the API lists %q", name, version, path, got, doc.SRI[path])
	}
}

// A request for a version not published yet of a catalog library is
// answered with the file, published within the wait; so is the API's.
func TestOnRequestPublishesAVersionOnItsFirstRequest(t *testing.T) {
	const name = "onreq-first"
	stack := startOnRequestStack(t, onRequestPackage(name))
	addRelease(name, "1.0.0", 20)
	publishFromCatalog(t, name, "1.0.0")
	// More starts a minute than the default, for the tries below.
	base := stack.edge(t, onrequest.Config{PerLibrary: 100}, edge.DefaultWaitForPublish)
	if r := get(t, base+"/ajax/libs/"+name+"/1.0.0/file03.js"); r.status != http.StatusOK {
		t.Fatalf("the published version: %d %s", r.status, r.body)
	}

	// Twenty new 20-file versions on the registry, each asked for once,
	// with the package document of 1.0.0 already cached by the edge.
	const tries = 20
	releases := map[string]map[string]string{}
	for i := 1; i <= tries+1; i++ {
		version := fmt.Sprintf("1.%d.0", i)
		releases[version] = addRelease(name, version, 20)
	}
	var took []time.Duration
	for i := 1; i <= tries; i++ {
		version := fmt.Sprintf("1.%d.0", i)
		files := releases[version]
		start := time.Now()
		r := get(t, fmt.Sprintf("%s/ajax/libs/%s/%s/file07.js", base, name, version))
		took = append(took, time.Since(start))
		checkServed(t, base, name, version, "file07.js", r, files["file07.js"])
		if cc := r.header.Get("Cache-Control"); !strings.Contains(cc, "immutable") {
			t.Errorf("%s: Cache-Control %q, want a published file's", version, cc)
		}
	}
	slices.Sort(took)
	t.Logf("first request → 200 for a new 20-file version, %d tries: p50 %v, p95 %v, max %v", tries,
		took[(len(took)+1)/2-1], took[(len(took)*95+99)/100-1], took[len(took)-1])

	// The API's version endpoint publishes on request too.
	last := fmt.Sprintf("1.%d.0", tries+1)
	files := releases[last]
	r := get(t, base+"/libraries/"+name+"/"+last)
	if r.status != http.StatusOK || !strings.Contains(r.body, `"file19.js"`) {
		t.Fatalf("API on first request: %d %s", r.status, r.body)
	}
	checkServed(t, base, name, last, "file19.js", get(t, base+"/ajax/libs/"+name+"/"+last+"/file19.js"), files["file19.js"])
}

// However many requests, on however many edges, ask for one new version
// at once, it is published once: one PublishVersion run, one download.
func TestOnRequestStartsOnePublishForManyRequests(t *testing.T) {
	const name, version = "onreq-crowd", "2.0.0"
	stack := startOnRequestStack(t, onRequestPackage(name))
	addRelease(name, "1.0.0", 1)
	publishFromCatalog(t, name, "1.0.0")
	files := addRelease(name, version, 20)
	// Two edges, each with its own publisher, as two processes would be;
	// a wait long enough that every request sees the publish end.
	edges := []string{stack.edge(t, onrequest.Config{}, time.Minute), stack.edge(t, onrequest.Config{}, time.Minute)}
	// A third edge that reads the package document now, without 2.0.0,
	// and keeps believing it: asked after the publish, it must not start
	// the version again.
	stale := stack.edgeWith(t, onrequest.Config{}, edge.Config{WaitForPublish: time.Minute, MetaTTL: time.Hour})
	if r := get(t, stale+"/libraries/"+name); r.status != http.StatusOK || strings.Contains(r.body, version) {
		t.Fatalf("the library before %s: %d %s", version, r.status, r.body)
	}

	const requests = 200
	answers := make([]response, requests)
	var wg sync.WaitGroup
	for i := range requests {
		wg.Go(func() {
			answers[i] = get(t, fmt.Sprintf("%s/ajax/libs/%s/%s/file%02d.js", edges[i%2], name, version, i%20))
		})
	}
	wg.Wait()
	for i, r := range answers {
		if want := files[fmt.Sprintf("file%02d.js", i%20)]; r.status != http.StatusOK || r.body != want {
			t.Fatalf("request %d: %d %q, want 200 with the file", i, r.status, r.body)
		}
	}
	eventually(t, 30*time.Second, "visibility lists the version's run", func() (bool, string) {
		n := publishRuns(t, name, version)
		return n >= 1, fmt.Sprintf("%d runs", n)
	})
	if n := publishRuns(t, name, version); n != 1 {
		t.Errorf("%d PublishVersion runs of %s@%s for %d requests on two edges, want 1", n, name, version, requests)
	}
	if n := npm.Requests(registrytest.TarballPath(name, version)); n != 1 {
		t.Errorf("the tarball was downloaded %d times, want once", n)
	}
	// Asked again once published, on every edge (the third with its old
	// belief): served, nothing started; the latest run is still the one.
	first, err := env.Client.DescribeWorkflow(testContext(t), contract.PublishVersionWorkflowID(name, version), "")
	if err != nil {
		t.Fatal(err)
	}
	for _, base := range append(edges, stale) {
		checkServed(t, base, name, version, "file05.js", get(t, base+"/ajax/libs/"+name+"/"+version+"/file05.js"), files["file05.js"])
	}
	latest, err := env.Client.DescribeWorkflow(testContext(t), contract.PublishVersionWorkflowID(name, version), "")
	if err != nil {
		t.Fatal(err)
	}
	if a, b := first.RawResponse.GetWorkflowExecutionInfo().GetExecution().GetRunId(), latest.RawResponse.GetWorkflowExecutionInfo().GetExecution().GetRunId(); a != b {
		t.Errorf("asking for the published version again started run %s after %s", b, a)
	}
}

// A version the catalog's rules refuse, or one its source does not list,
// is a 404 with the reason, starting nothing; a crawler's invented
// versions cost one listing of the package a TTL.
func TestOnRequestRefusesWhatTheRulesRefuse(t *testing.T) {
	const name = "onreq-refuse"
	stack := startOnRequestStack(t, onRequestPackage(name, "3.0.0-beta*"))
	addRelease(name, "3.0.0-beta.1", 1)
	base := stack.edge(t, onrequest.Config{ListingTTL: time.Hour}, edge.DefaultWaitForPublish)

	api := get(t, base+"/libraries/"+name+"/3.0.0-beta.1")
	if api.status != http.StatusNotFound || !strings.Contains(api.body, "ignoreVersions") {
		t.Errorf("API for an ignored version: %d %s, want 404 naming ignoreVersions", api.status, api.body)
	}
	file := get(t, base+"/ajax/libs/"+name+"/3.0.0-beta.1/file00.js")
	if file.status != http.StatusNotFound || file.header.Get("Cache-Control") != "public, max-age=30" {
		t.Errorf("file of an ignored version: %d, Cache-Control %q, want a 404 cached briefly", file.status, file.header.Get("Cache-Control"))
	}
	neverStarted(t, name, "3.0.0-beta.1")

	invented := get(t, base+"/libraries/"+name+"/9.9.9")
	if invented.status != http.StatusNotFound || !strings.Contains(invented.body, "does not list") {
		t.Errorf("API for an invented version: %d %s, want 404 saying the source does not list it", invented.status, invented.body)
	}
	// A crawler: a thousand invented versions, 50 at a time.
	var wg sync.WaitGroup
	sem := make(chan struct{}, 50)
	var mu sync.Mutex
	statuses := map[int]int{}
	for i := range 1000 {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			r := get(t, fmt.Sprintf("%s/ajax/libs/%s/4.%d.%d/file00.js", base, name, i/100, i%100))
			mu.Lock()
			statuses[r.status]++
			mu.Unlock()
		})
	}
	wg.Wait()
	if statuses[http.StatusNotFound] != 1000 {
		t.Errorf("invented versions answered %v, want 1000 404s", statuses)
	}
	if n := npm.Requests("/" + name); n != 1 {
		t.Errorf("the package's listing was read %d times for 1,002 requests within its TTL, want once", n)
	}
	neverStarted(t, name, "9.9.9")
	neverStarted(t, name, "4.0.0")
	// A library not in the catalog never reaches the registry.
	if r := get(t, base+"/ajax/libs/not-in-catalog/1.0.0/a.js"); r.status != http.StatusNotFound {
		t.Errorf("a library outside the catalog: %d", r.status)
	}
	if n := npm.Requests("/not-in-catalog"); n != 0 {
		t.Errorf("a library outside the catalog was looked up %d times at the registry", n)
	}
}

// Past the per-library limit, a new version is a 503 with Retry-After,
// never cached, and is not started.
func TestOnRequestLimitsStartsPerLibrary(t *testing.T) {
	const name = "onreq-limit"
	stack := startOnRequestStack(t, onRequestPackage(name))
	for _, v := range []string{"1.0.0", "1.1.0", "1.2.0", "1.3.0"} {
		addRelease(name, v, 1)
	}
	publishFromCatalog(t, name, "1.0.0")
	base := stack.edge(t, onrequest.Config{PerLibrary: 2}, time.Minute)
	for _, v := range []string{"1.1.0", "1.2.0"} {
		if r := get(t, base+"/ajax/libs/"+name+"/"+v+"/file00.js"); r.status != http.StatusOK {
			t.Fatalf("%s within the limit: %d %s", v, r.status, r.body)
		}
	}
	r := get(t, base+"/ajax/libs/"+name+"/1.3.0/file00.js")
	if r.status != http.StatusServiceUnavailable || r.header.Get("Retry-After") == "" || r.header.Get("Cache-Control") != "no-store" {
		t.Fatalf("past the limit: %d, Retry-After %q, Cache-Control %q, want 503 with Retry-After, no-store", r.status, r.header.Get("Retry-After"), r.header.Get("Cache-Control"))
	}
	neverStarted(t, name, "1.3.0")
}

// Without a publisher (no Temporal configured) a version not published is
// a 404 as before; with Temporal unreachable, a 503 with Retry-After
// within the wait, never a 404.
func TestOnRequestWithoutTemporal(t *testing.T) {
	const name = "onreq-notemporal"
	stack := startOnRequestStack(t, onRequestPackage(name))
	addRelease(name, "0.9.0", 1)
	publishFromCatalog(t, name, "0.9.0")
	addRelease(name, "1.0.0", 1)

	plain := httptest.NewServer(edge.New(edge.Config{Primary: env.Store, Mirror: env.Store, Buckets: buckets}))
	defer plain.Close()
	if r := get(t, plain.URL+"/ajax/libs/"+name+"/1.0.0/file00.js"); r.status != http.StatusNotFound {
		t.Errorf("no publisher: %d %s, want 404 as before", r.status, r.body)
	}

	// A Temporal that accepts connections and never answers.
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	dead, err := client.NewLazyClient(client.Options{HostPort: silent.Addr().String()})
	if err != nil {
		t.Fatal(err)
	}
	defer dead.Close()
	base := stack.edge(t, onrequest.Config{Temporal: dead}, 2*time.Second)
	r := get(t, base+"/ajax/libs/"+name+"/1.0.0/file00.js")
	if r.status != http.StatusServiceUnavailable || r.header.Get("Retry-After") == "" || r.header.Get("Cache-Control") != "no-store" {
		t.Errorf("Temporal unreachable: %d %s, Retry-After %q, Cache-Control %q; want 503 with Retry-After, no-store", r.status, r.body, r.header.Get("Retry-After"), r.header.Get("Cache-Control"))
	}
	neverStarted(t, name, "1.0.0")
}

// A library the catalog has never imported is imported whole on the first
// request for one of its versions: its check runs (keeping the first
// import's window), the request is a 503 with Retry-After meanwhile, and
// every version of the first import is published, not the one asked for
// alone.
func TestOnRequestImportsANewLibrary(t *testing.T) {
	const name = "onreq-new"
	stack := startOnRequestStack(t, onRequestPackage(name))
	for _, v := range []string{"1.0.0", "1.1.0", "1.2.0"} {
		addRelease(name, v, 1)
	}
	base := stack.edge(t, onrequest.Config{}, edge.DefaultWaitForPublish)
	r := get(t, base+"/ajax/libs/"+name+"/1.2.0/file00.js")
	if r.status != http.StatusServiceUnavailable || r.header.Get("Retry-After") == "" || r.header.Get("Cache-Control") != "no-store" {
		t.Fatalf("a version of a library never imported: %d %s (Retry-After %q, Cache-Control %q), want 503 with Retry-After, no-store",
			r.status, r.body, r.header.Get("Retry-After"), r.header.Get("Cache-Control"))
	}
	for _, v := range []string{"1.2.0", "1.0.0"} {
		eventually(t, 2*time.Minute, name+"@"+v+" is served", func() (bool, string) {
			r := get(t, base+"/ajax/libs/"+name+"/"+v+"/file00.js")
			return r.status == http.StatusOK, fmt.Sprintf("%d %s", r.status, r.body)
		})
	}
	var window struct{ Floor string }
	if _, err := objectstore.GetJSON(testContext(t), env.Store, buckets.Meta, metadata.ImportWindowKey(name), &window); err != nil || window.Floor != "1.0.0" {
		t.Errorf("the first import's window: %+v (%v), want it kept from 1.0.0", window, err)
	}
}

// The browse page of a version not published yet publishes it as a file or
// API request does: the version's page once published, a 404 page with
// the reason for a version the rules refuse, a 503 page that reloads
// itself (Retry-After, kept nowhere) for one not ready, and a library never
// imported is imported whole.
func TestOnRequestBrowsePage(t *testing.T) {
	const name, newLibrary = "onreq-browse", "onreq-browse-new"
	stack := startOnRequestStack(t, onRequestPackage(name, "3.0.0-beta*"), onRequestPackage(newLibrary))
	addRelease(name, "1.0.0", 1)
	publishFromCatalog(t, name, "1.0.0")
	files := addRelease(name, "1.1.0", 3)
	addRelease(name, "1.2.0", 1)
	addRelease(name, "3.0.0-beta.1", 1)
	addRelease(newLibrary, "2.0.0", 1)
	// One start a minute for the library: the second new version waits.
	base := stack.edge(t, onrequest.Config{PerLibrary: 1}, edge.DefaultWaitForPublish)

	page := get(t, base+"/browse/"+name+"/1.1.0")
	text := html.UnescapeString(page.body)
	if page.status != http.StatusOK || !strings.Contains(text, "/ajax/libs/"+name+"/1.1.0/file02.js") {
		t.Fatalf("browse page of a new version: %d %s, want its page listing file02.js", page.status, page.body)
	}
	file := get(t, base+"/ajax/libs/"+name+"/1.1.0/file02.js")
	checkServed(t, base, name, "1.1.0", "file02.js", file, files["file02.js"])
	if sri := transform.SRI([]byte(file.body)); !strings.Contains(text, `integrity="`+sri+`"`) {
		t.Errorf("the version page does not carry the served file's SRI %s", sri)
	}

	refused := get(t, base+"/browse/"+name+"/3.0.0-beta.1")
	if refused.status != http.StatusNotFound || !strings.Contains(html.UnescapeString(refused.body), "ignoreVersions") {
		t.Errorf("browse page of an ignored version: %d %s, want a 404 page naming ignoreVersions", refused.status, refused.body)
	}
	neverStarted(t, name, "3.0.0-beta.1")

	busy := get(t, base+"/browse/"+name+"/1.2.0")
	checkReloadingPage(t, name+"@1.2.0 past the library's limit", busy)
	neverStarted(t, name, "1.2.0")

	first := get(t, base+"/browse/"+newLibrary+"/2.0.0")
	checkReloadingPage(t, "a version of a library never imported", first)
	if !strings.Contains(html.UnescapeString(first.body), "first import") {
		t.Errorf("the page of a library never imported does not say its first import started: %s", first.body)
	}
	eventually(t, 2*time.Minute, newLibrary+"'s version page", func() (bool, string) {
		r := get(t, base+"/browse/"+newLibrary+"/2.0.0")
		return r.status == http.StatusOK && strings.Contains(r.body, "file00.js"), fmt.Sprintf("%d %s", r.status, r.body)
	})
}

// checkReloadingPage checks that r is the browse UI's page for a version
// not ready: a 503 kept nowhere whose page reloads after its Retry-After.
func checkReloadingPage(t *testing.T, what string, r response) {
	t.Helper()
	retry := r.header.Get("Retry-After")
	if r.status != http.StatusServiceUnavailable || retry == "" || r.header.Get("Cache-Control") != "no-store" ||
		!strings.HasPrefix(r.header.Get("Content-Type"), "text/html") {
		t.Fatalf("%s: %d, Retry-After %q, Cache-Control %q, Content-Type %q; want a 503 HTML page with Retry-After, no-store",
			what, r.status, retry, r.header.Get("Cache-Control"), r.header.Get("Content-Type"))
	}
	if want := `<meta http-equiv="refresh" content="` + retry + `">`; !strings.Contains(r.body, want) {
		t.Errorf("%s: the page does not reload itself after Retry-After (%s): %s", what, want, r.body)
	}
}
