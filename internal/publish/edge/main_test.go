package edge

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/edgeflow/edgeflow/internal/devstack"
	"github.com/edgeflow/edgeflow/internal/objectstore"
	"github.com/edgeflow/edgeflow/internal/objectstore/s3"
	"github.com/edgeflow/edgeflow/internal/publish/catalog"
	"github.com/edgeflow/edgeflow/internal/publish/metadata"
	"github.com/edgeflow/edgeflow/internal/publish/transform"
	"github.com/edgeflow/edgeflow/internal/publish/versions"
	"github.com/edgeflow/edgeflow/internal/testenv"
)

// testEnv is the MinIO every test of the package shares (started once in
// TestMain) and the fixtures seeded into it.
var testEnv struct {
	minio   *devstack.MinIO
	store   objectstore.Store
	buckets metadata.Buckets
}

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "cdn-test-minio-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "create MinIO data dir:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	mi, err := devstack.StartMinIO(ctx, devstack.MinIOOptions{DataDir: dir, AccessKey: "edgetest", SecretKey: "edgetest-secret-key"})
	if err != nil {
		fmt.Fprintf(os.Stderr, "internal/publish/edge tests need a real MinIO and could not start one: %v\n"+
			"Build it with `make tools` (it installs .tools/bin/minio) or set EDGEFLOW_MINIO_BIN.\n", err)
		return 1
	}
	defer func() {
		if err := mi.Stop(10 * time.Second); err != nil {
			fmt.Fprintln(os.Stderr, "stop MinIO:", err)
		}
	}()
	store, err := s3.New(s3.Config{Endpoint: mi.Endpoint, AccessKey: mi.AccessKey, SecretKey: mi.SecretKey})
	if err != nil {
		fmt.Fprintln(os.Stderr, "connect to MinIO:", err)
		return 1
	}
	testEnv.minio, testEnv.store, testEnv.buckets = mi, store, metadata.DefaultBuckets
	b := testEnv.buckets
	// "Live" is not "initialized": retry until MinIO accepts bucket calls.
	for deadline := time.Now().Add(60 * time.Second); ; {
		err = objectstore.EnsureBuckets(ctx, store, b.Files, b.Mirror, b.Meta, b.MirrorMeta)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			fmt.Fprintln(os.Stderr, "create buckets:", err)
			return 1
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err := seedFixtures(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "seed fixtures:", err)
		return 1
	}
	defer func() {
		if benchFx.dir != "" {
			os.RemoveAll(benchFx.dir)
		}
	}()
	return m.Run()
}

// The library most tests use. Its default file sets window.__loaded so a
// browser can prove the script ran.
const (
	testLib      = "testlib"
	testLibJS    = "window.__loaded = true;\n/* testlib: a small library used by the edge tests. */\n"
	testLibCSS   = "#probe { width: 42px; }\n/* testlib stylesheet */\n"
	bigFileSize  = 2<<20 + 17 // above MaxCachedFile: streamed, never cached
	testVersion  = "2.1.0"
	testUnlisted = "9.9.9" // files in the buckets, no metadata
	lostLibJS    = "console.log('this library lost its brotli twin');\n"
)

var testLibPackage = catalog.Package{
	Name:        testLib,
	Description: "A tiny library for testing the edge",
	Keywords:    []string{"testing", "edge", "fixture"},
	License:     "MIT",
	Homepage:    "https://example.org/testlib",
	Repository:  &catalog.Repository{Type: "git", URL: "https://example.org/testlib.git"},
	Authors:     []catalog.Author{{Name: "Ada Tester", Email: "ada@example.org"}, {Name: "Bo Checker"}},
	Filename:    "testlib.js",
	Autoupdate:  catalog.Autoupdate{Source: catalog.SourceNPM, Target: "testlib"},
}

// testLibFiles are the files of every published testlib version.
func testLibFiles(version string) []fixtureFile {
	rng := rand.New(rand.NewPCG(7, 11))
	big := make([]byte, bigFileSize)
	for i := range big {
		big[i] = byte(rng.UintN(256))
	}
	png := append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte{1, 2, 3, 4}, 64)...)
	info := fmt.Sprintf(`{"name":"testlib","version":%q,"padding":%q}`+"\n", version, strings.Repeat("lorem ipsum ", 200))
	return []fixtureFile{
		{Path: "testlib.js", Data: []byte(testLibJS)},
		{Path: "testlib.min.js", Data: []byte("window.__loaded=!0;\n"), MinifiedFrom: "testlib.js"},
		{Path: "testlib.css", Data: []byte(testLibCSS)},
		{Path: "data/info.json", Data: []byte(info)},
		{Path: "image.png", Data: png},
		{Path: "big.bin", Data: big},
	}
}

// Other libraries, for the listing and search.
var otherLibraries = []catalog.Package{
	{Name: "jquery", Description: "JavaScript library for DOM operations", Keywords: []string{"jquery", "dom", "ajax"}, License: "MIT", Filename: "jquery.min.js"},
	{Name: "jquery-ui", Description: "A curated set of user interface interactions built on jQuery", Keywords: []string{"ui", "widgets"}, License: "MIT", Filename: "jquery-ui.min.js"},
	{Name: "font-awesome", Description: "The iconic SVG, font, and CSS toolkit", Keywords: []string{"icons", "font"}, License: "MIT", Filename: "css/all.min.css"},
}

func seedFixtures(ctx context.Context) error {
	st, b := testEnv.store, testEnv.buckets
	published := time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)
	for i, v := range []string{"1.0.0", "2.0.0", "2.1.0", "3.0.0-beta.1"} {
		if err := publishVersion(ctx, st, b, testLibPackage, v, testLibFiles(v), published.Add(time.Duration(i)*time.Hour)); err != nil {
			return err
		}
	}
	// A release whose files were uploaded but whose metadata was never committed.
	if err := uploadFiles(ctx, st, b, testLib, testUnlisted, testLibFiles(testUnlisted)); err != nil {
		return err
	}
	// A file in a published version's folder that its version document does not list.
	if err := putBytes(ctx, st, b.Files, metadata.FileKey(testLib, "1.0.0", "secret.js"), []byte("secret"), "application/javascript"); err != nil {
		return err
	}
	// A version document whose package document does not list it (a commit
	// that stopped half-way): not published.
	if _, _, err := writeFilesAndVersionDoc(ctx, st, b, testLib, "4.0.0", testLibFiles("4.0.0"), published); err != nil {
		return err
	}
	// A library whose brotli twins were lost from both buckets.
	lost := catalog.Package{Name: "lostlib", Description: "Lost its brotli files", Filename: "lost.js"}
	if err := publishVersion(ctx, st, b, lost, "1.0.0", []fixtureFile{{Path: "lost.js", Data: []byte(lostLibJS)}}, published); err != nil {
		return err
	}
	for _, bucket := range []string{b.Files, b.Mirror} {
		if err := st.Delete(ctx, bucket, metadata.FileKey("lostlib", "1.0.0", "lost.js")+metadata.BrotliSuffix); err != nil {
			return err
		}
	}
	for _, p := range otherLibraries {
		files := []fixtureFile{{Path: p.Filename, Data: []byte("/* " + p.Name + " */\n")}}
		if err := publishVersion(ctx, st, b, p, "1.0.0", files, published); err != nil {
			return err
		}
	}
	return nil
}

type fixtureFile struct {
	Path         string
	Data         []byte
	MinifiedFrom string
	// NoCompression skips the .br/.gz representations (benchmark files).
	NoCompression bool
}

// uploadFiles writes the files and their precompressed representations to
// the Files and Mirror buckets and returns their version-document entries.
func uploadFiles(ctx context.Context, st objectstore.Store, b metadata.Buckets, name, version string, files []fixtureFile) error {
	_, err := uploadAndDescribe(ctx, st, b, name, version, files)
	return err
}

func uploadAndDescribe(ctx context.Context, st objectstore.Store, b metadata.Buckets, name, version string, files []fixtureFile) ([]metadata.File, error) {
	var described []metadata.File
	for _, f := range files {
		ct := transform.ContentType(f.Path)
		entry := metadata.File{Path: f.Path, Size: int64(len(f.Data)), SRI: transform.SRI(f.Data), ContentType: ct, MinifiedFrom: f.MinifiedFrom}
		objects := map[string][]byte{metadata.FileKey(name, version, f.Path): f.Data}
		if transform.Compressible(f.Path) && !f.NoCompression {
			br, err := transform.Brotli(f.Data)
			if err != nil {
				return nil, err
			}
			gz, err := transform.Gzip(f.Data)
			if err != nil {
				return nil, err
			}
			objects[metadata.FileKey(name, version, f.Path)+metadata.BrotliSuffix] = br
			objects[metadata.FileKey(name, version, f.Path)+metadata.GzipSuffix] = gz
			entry.BrotliSize, entry.GzipSize = int64(len(br)), int64(len(gz))
		}
		for key, data := range objects {
			for _, bucket := range []string{b.Files, b.Mirror} {
				if err := putBytes(ctx, st, bucket, key, data, ct); err != nil {
					return nil, err
				}
			}
		}
		described = append(described, entry)
	}
	sort.Slice(described, func(i, j int) bool { return described[i].Path < described[j].Path })
	return described, nil
}

func writeFilesAndVersionDoc(ctx context.Context, st objectstore.Store, b metadata.Buckets, name, version string, files []fixtureFile, publishedAt time.Time) (*metadata.Version, []metadata.File, error) {
	described, err := uploadAndDescribe(ctx, st, b, name, version, files)
	if err != nil {
		return nil, nil, err
	}
	doc := &metadata.Version{Name: name, Version: version, Files: described, PublishedAt: publishedAt}
	doc.Stats.Files = len(described)
	if err := objectstore.PutJSON(ctx, st, b.Meta, metadata.VersionKey(name, version), doc); err != nil {
		return nil, nil, err
	}
	return doc, described, mirrorMetaDoc(ctx, st, b, metadata.VersionKey(name, version))
}

// mirrorMetaDoc copies a metadata document to the mirror's metadata bucket,
// as the pipeline's commit does after writing it.
func mirrorMetaDoc(ctx context.Context, st objectstore.Store, b metadata.Buckets, key string) error {
	return objectstore.Replicate(ctx, st, b.Meta, st, b.MirrorMeta, key)
}

// publishVersion does what the publish pipeline's commit does: files, then
// the version document, then the package document, then the search index,
// each document copied to the mirror's metadata bucket once written.
func publishVersion(ctx context.Context, st objectstore.Store, b metadata.Buckets, pkg catalog.Package, version string, files []fixtureFile, publishedAt time.Time) error {
	doc, _, err := writeFilesAndVersionDoc(ctx, st, b, pkg.Name, version, files, publishedAt)
	if err != nil {
		return err
	}
	pkgDoc, err := objectstore.UpdateJSON(ctx, st, b.Meta, metadata.PackageKey(pkg.Name), func(p *metadata.Package, _ bool) (bool, error) {
		p.Package = pkg
		if !slices.Contains(p.Versions, version) {
			p.Versions = append(p.Versions, version)
		}
		versions.Sort(p.Versions)
		p.Latest = versions.Latest(p.Versions)
		p.UpdatedAt = publishedAt
		return true, nil
	})
	if err != nil {
		return err
	}
	if err := mirrorMetaDoc(ctx, st, b, metadata.PackageKey(pkg.Name)); err != nil {
		return err
	}
	entry := metadata.IndexEntry{Name: pkg.Name, Latest: pkgDoc.Latest, Filename: pkg.Filename, Description: pkg.Description,
		Keywords: pkg.Keywords, Homepage: pkg.Homepage, License: pkg.License}
	if pkgDoc.Latest == version {
		if f, ok := doc.Lookup(pkg.Filename); ok {
			entry.SRI = f.SRI
		}
	} else {
		var latest metadata.Version
		if _, err := objectstore.GetJSON(ctx, st, b.Meta, metadata.VersionKey(pkg.Name, pkgDoc.Latest), &latest); err == nil {
			if f, ok := latest.Lookup(pkg.Filename); ok {
				entry.SRI = f.SRI
			}
		}
	}
	_, err = objectstore.UpdateJSON(ctx, st, b.Meta, metadata.SearchIndexKey, func(ix *metadata.Index, _ bool) (bool, error) {
		i := sort.Search(len(ix.Libraries), func(i int) bool { return ix.Libraries[i].Name >= entry.Name })
		if i < len(ix.Libraries) && ix.Libraries[i].Name == entry.Name {
			ix.Libraries[i] = entry
		} else {
			ix.Libraries = slices.Insert(ix.Libraries, i, entry)
		}
		ix.UpdatedAt = publishedAt
		return true, nil
	})
	if err != nil {
		return err
	}
	return mirrorMetaDoc(ctx, st, b, metadata.SearchIndexKey)
}

// testVersionDoc reads a fixture's version document straight from the bucket.
func testVersionDoc(t testing.TB, name, version string) *metadata.Version {
	t.Helper()
	var doc metadata.Version
	if _, err := objectstore.GetJSON(context.Background(), testEnv.store, testEnv.buckets.Meta, metadata.VersionKey(name, version), &doc); err != nil {
		t.Fatalf("read version document %s@%s: %v", name, version, err)
	}
	return &doc
}

// newTestEdge serves a fresh edge (empty caches) over the shared MinIO.
func newTestEdge(t testing.TB, adjust func(*Config)) (*Server, *httptest.Server, *testenv.SyncBuffer) {
	t.Helper()
	logs := &testenv.SyncBuffer{}
	cfg := Config{
		Primary:    testEnv.store,
		Mirror:     testEnv.store,
		Buckets:    testEnv.buckets,
		CacheBytes: 64 << 20,
		Logger:     slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo})),
	}
	if adjust != nil {
		adjust(&cfg)
	}
	s := New(cfg)
	ts := serveAsDeployed(s, nil)
	t.Cleanup(ts.Close)
	return s, ts, logs
}

// serveAsDeployed serves h over loopback HTTP as cmd/edge does: an edge
// through its FastListener, any other handler through CoalescingListener,
// with ConnContext; accepted, if set, is called with each connection
// net/http is given.
func serveAsDeployed(h http.Handler, accepted func(net.Conn)) *httptest.Server {
	ts := httptest.NewUnstartedServer(h)
	if s, ok := h.(*Server); ok {
		ts.Listener = s.FastListener(ts.Listener, ts.Config)
	} else {
		ts.Listener = CoalescingListener(ts.Listener)
	}
	ts.Config.ConnContext = func(ctx context.Context, c net.Conn) context.Context {
		if accepted != nil {
			accepted(c)
		}
		return ConnContext(ctx, c)
	}
	ts.Start()
	return ts
}

// rawClient neither follows redirects nor decompresses, so tests see exactly
// what the edge sent.
var rawClient = &http.Client{
	Transport:     &http.Transport{DisableCompression: true, MaxIdleConnsPerHost: 16},
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	Timeout:       30 * time.Second,
}

type response struct {
	*http.Response
	body []byte
}

func do(t testing.TB, method, url string, header map[string]string) response {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatalf("build request %s %s: %v", method, url, err)
	}
	for k, v := range header {
		if strings.EqualFold(k, "Host") {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := rawClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read body of %s %s: %v", method, url, err)
	}
	return response{resp, body}
}

func get(t testing.TB, url string, header map[string]string) response {
	t.Helper()
	return do(t, http.MethodGet, url, header)
}

func fixtureData(t testing.TB, version, path string) []byte {
	t.Helper()
	for _, f := range testLibFiles(version) {
		if f.Path == path {
			return f.Data
		}
	}
	t.Fatalf("no fixture file %s", path)
	return nil
}

func putBytes(ctx context.Context, st objectstore.Store, bucket, key string, data []byte, contentType string) error {
	return objectstore.PutBytes(ctx, st, bucket, key, data, objectstore.PutOptions{Metadata: objectstore.Metadata{ContentType: contentType}})
}
