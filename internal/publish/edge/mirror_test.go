package edge

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/edgeflow/edgeflow/internal/objectstore"
	"github.com/edgeflow/edgeflow/internal/objectstore/s3"
	"github.com/edgeflow/edgeflow/internal/publish/catalog"
	"github.com/edgeflow/edgeflow/internal/publish/metadata"
	"github.com/edgeflow/edgeflow/internal/publish/transform"
	"github.com/edgeflow/edgeflow/internal/testenv"
)

// storeProxy stands between the edge and MinIO so a test can take the
// primary store away while the edge is serving: refuse closes the port and
// every open connection, stall accepts connections and never answers.
type storeProxy struct {
	target string
	mode   atomic.Int32
	mu     sync.Mutex
	ln     net.Listener
	addr   string
	conns  map[net.Conn]struct{}
}

const (
	proxyForward int32 = iota
	proxyStall
	proxyRefuse
)

func newStoreProxy(t *testing.T, target string) *storeProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("proxy listen: %v", err)
	}
	p := &storeProxy{target: target, ln: ln, addr: ln.Addr().String(), conns: map[net.Conn]struct{}{}}
	go p.accept(ln)
	t.Cleanup(func() { p.set(proxyRefuse) })
	return p
}

func (p *storeProxy) accept(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		if !p.track(c) {
			c.Close()
			continue
		}
		go p.handle(c)
	}
}

func (p *storeProxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mode.Load() == proxyRefuse {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *storeProxy) handle(c net.Conn) {
	if p.mode.Load() == proxyStall {
		_, _ = io.Copy(io.Discard, c) // hold the connection open, never answer
		return
	}
	up, err := net.Dial("tcp", p.target)
	if err != nil {
		c.Close()
		return
	}
	p.mu.Lock()
	p.conns[up] = struct{}{}
	p.mu.Unlock()
	go func() { _, _ = io.Copy(up, c); up.Close() }()
	_, _ = io.Copy(c, up)
	c.Close()
}

// set switches the mode and drops every connection made so far, so pooled
// keep-alive connections cannot carry on as before.
func (p *storeProxy) set(mode int32) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mode.Store(mode)
	for c := range p.conns {
		c.Close()
	}
	clear(p.conns)
	if mode == proxyRefuse && p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
}

// proxiedEdge is an edge whose primary store goes through a proxy and whose
// mirror is MinIO itself.
func proxiedEdge(t *testing.T, adjust func(*Config)) (*storeProxy, string, *testenv.SyncBuffer) {
	t.Helper()
	proxy := newStoreProxy(t, testEnv.minio.Endpoint)
	primary, err := s3.New(s3.Config{Endpoint: proxy.addr, AccessKey: testEnv.minio.AccessKey, SecretKey: testEnv.minio.SecretKey})
	if err != nil {
		t.Fatal(err)
	}
	_, ts, logs := newTestEdge(t, func(c *Config) {
		c.Primary = primary
		c.PrimaryTimeout = 400 * time.Millisecond
		c.MetaTimeout = time.Second
		if adjust != nil {
			adjust(c)
		}
	})
	return proxy, ts.URL, logs
}

func TestMirrorAnswersWhenPrimaryIsDown(t *testing.T) {
	// No file cache: every request must reach a store.
	proxy, base, logs := proxiedEdge(t, func(c *Config) { c.CacheBytes = 0 })
	js := fixtureData(t, testVersion, "testlib.js")
	big := fixtureData(t, testVersion, "big.bin")

	resp := get(t, fileURL(base, testVersion, "testlib.js"), nil)
	if resp.StatusCode != 200 || resp.Header.Get("X-Edge-Source") != "primary" {
		t.Fatalf("before the outage: status %d, source %q", resp.StatusCode, resp.Header.Get("X-Edge-Source"))
	}

	proxy.set(proxyRefuse)
	for _, c := range []struct {
		path string
		ae   string
		want []byte
	}{
		{"testlib.js", "", js},
		{"testlib.js", "gzip", js}, // another representation, never fetched before
		{"data/info.json", "br", fixtureData(t, testVersion, "data/info.json")},
		{"big.bin", "", big}, // streamed
	} {
		resp := get(t, fileURL(base, testVersion, c.path), map[string]string{"Accept-Encoding": c.ae})
		if resp.StatusCode != 200 {
			t.Fatalf("%s during the outage: status %d (%q)", c.path, resp.StatusCode, resp.body)
		}
		if got := resp.Header.Get("X-Edge-Source"); got != "mirror" {
			t.Errorf("%s: X-Edge-Source %q, want mirror", c.path, got)
		}
		if got := decode(t, resp.Header.Get("Content-Encoding"), resp.body); string(got) != string(c.want) {
			t.Errorf("%s: mirror bytes differ (%d vs %d)", c.path, len(got), len(c.want))
		}
	}
	// Ranges too.
	resp = get(t, fileURL(base, testVersion, "big.bin"), map[string]string{"Range": "bytes=10-19"})
	if resp.StatusCode != 206 || string(resp.body) != string(big[10:20]) || resp.Header.Get("X-Edge-Source") != "mirror" {
		t.Errorf("range during the outage: status %d source %q", resp.StatusCode, resp.Header.Get("X-Edge-Source"))
	}
	if !strings.Contains(logs.String(), "served from the mirror") || !strings.Contains(logs.String(), "trying the other store") {
		t.Errorf("the fallback was not logged:\n%s", logs)
	}
}

func TestMirrorAnswersWhenPrimaryStalls(t *testing.T) {
	proxy, base, _ := proxiedEdge(t, func(c *Config) { c.CacheBytes = 0 })
	// Warm the metadata through the healthy primary.
	if resp := get(t, fileURL(base, testVersion, "testlib.css"), nil); resp.StatusCode != 200 {
		t.Fatalf("warm-up: status %d", resp.StatusCode)
	}
	proxy.set(proxyStall)
	start := time.Now()
	resp := get(t, fileURL(base, testVersion, "testlib.css"), nil)
	elapsed := time.Since(start)
	if resp.StatusCode != 200 || string(resp.body) != testLibCSS || resp.Header.Get("X-Edge-Source") != "mirror" {
		t.Fatalf("stalled primary: status %d source %q body %q", resp.StatusCode, resp.Header.Get("X-Edge-Source"), resp.body)
	}
	if elapsed < 400*time.Millisecond || elapsed > 5*time.Second {
		t.Errorf("answer took %s; want about the 400ms primary timeout", elapsed)
	}
	// The breaker now sends requests straight to the mirror.
	start = time.Now()
	resp = get(t, fileURL(base, testVersion, "testlib.js"), nil)
	if resp.StatusCode != 200 || resp.Header.Get("X-Edge-Source") != "mirror" {
		t.Fatalf("after the stall: status %d source %q", resp.StatusCode, resp.Header.Get("X-Edge-Source"))
	}
	if elapsed := time.Since(start); elapsed > 300*time.Millisecond {
		t.Errorf("second request waited %s for the stalled primary", elapsed)
	}
}

// deadStore is a store whose port refuses every connection.
func deadStore(t *testing.T) *s3.Store {
	t.Helper()
	proxy := newStoreProxy(t, testEnv.minio.Endpoint)
	proxy.set(proxyRefuse)
	st, err := s3.New(s3.Config{Endpoint: proxy.addr, AccessKey: testEnv.minio.AccessKey, SecretKey: testEnv.minio.SecretKey})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func TestMirroredMetadataServesUnseenVersionsWhilePrimaryIsDown(t *testing.T) {
	for _, outage := range []struct {
		name string
		mode int32
	}{{"refused", proxyRefuse}, {"stalled", proxyStall}} {
		t.Run(outage.name, func(t *testing.T) {
			// No file cache, and the primary goes away before the first
			// request: no document or file of 2.0.0 or jquery was ever read.
			proxy, base, logs := proxiedEdge(t, func(c *Config) { c.CacheBytes = 0 })
			proxy.set(outage.mode)
			const version = "2.0.0"
			for _, path := range []string{"testlib.js", "data/info.json"} {
				resp := get(t, fileURL(base, version, path), nil)
				if resp.StatusCode != 200 {
					t.Fatalf("%s@%s during the outage: status %d (%q)", path, version, resp.StatusCode, resp.body)
				}
				if got := resp.Header.Get("X-Edge-Source"); got != "mirror" {
					t.Errorf("%s: X-Edge-Source %q, want mirror", path, got)
				}
				if want := fixtureData(t, version, path); !bytes.Equal(resp.body, want) {
					t.Errorf("%s@%s: got %d bytes that differ from the %d published", path, version, len(resp.body), len(want))
				}
			}

			// The API needs the package document and its latest version's
			// document, neither read before.
			resp := get(t, base+"/libraries/jquery", nil)
			if resp.StatusCode != 200 {
				t.Fatalf("/libraries/jquery during the outage: status %d (%q)", resp.StatusCode, resp.body)
			}
			var lib struct {
				Name, Version, SRI string
				Assets             []struct{ Version string }
			}
			if err := json.Unmarshal(resp.body, &lib); err != nil {
				t.Fatalf("/libraries/jquery: %v in %s", err, resp.body)
			}
			if want := transform.SRI([]byte("/* jquery */\n")); lib.Name != "jquery" || lib.Version != "1.0.0" || lib.SRI != want || len(lib.Assets) != 1 {
				t.Errorf("/libraries/jquery: %+v; want jquery 1.0.0 with SRI %s and its assets", lib, want)
			}
			if resp := get(t, base+"/libraries?search=jquery", nil); resp.StatusCode != 200 || !strings.Contains(string(resp.body), `"jquery-ui"`) {
				t.Errorf("search during the outage: status %d body %s", resp.StatusCode, resp.body)
			}

			// What the mirror lacks is unknown, not missing: a 503 that no
			// cache keeps, never a 404.
			if resp := get(t, base+"/libraries/no-such-library", nil); resp.StatusCode != http.StatusServiceUnavailable {
				t.Errorf("a library neither store can answer for: status %d, want 503", resp.StatusCode)
			}
			for _, line := range []string{"metadata read failed; trying the other store", "metadata served from the mirror"} {
				if !strings.Contains(logs.String(), line) {
					t.Errorf("log lacks %q:\n%s", line, logs)
				}
			}
		})
	}
}

func TestPrimaryIsAuthoritativeOnMissingMetadata(t *testing.T) {
	ctx := t.Context()
	// A library only the mirror knows, as when the primary's copy was removed.
	ghost := metadata.Package{Package: catalog.Package{Name: "ghostlib", Filename: "ghost.js"}, Versions: []string{"1.0.0"}, Latest: "1.0.0"}
	key := metadata.PackageKey(ghost.Name)
	if err := objectstore.PutJSON(ctx, testEnv.store, testEnv.buckets.MirrorMeta, key, ghost); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = testEnv.store.Delete(context.Background(), testEnv.buckets.MirrorMeta, key) })
	_, base, logs := proxiedEdge(t, nil)
	for _, u := range []string{"/libraries/ghostlib", "/ajax/libs/ghostlib/1.0.0/ghost.js"} {
		if resp := get(t, base+u, nil); resp.StatusCode != http.StatusNotFound {
			t.Errorf("%s: status %d; the primary says it does not exist, want 404", u, resp.StatusCode)
		}
	}
	if strings.Contains(logs.String(), "mirror") {
		t.Errorf("the mirror was asked although the primary answered:\n%s", logs)
	}
}

func TestStaleMetadataIsServedWhilePrimaryIsDown(t *testing.T) {
	var clock atomic.Int64
	clock.Store(time.Now().UnixNano())
	now := func() time.Time { return time.Unix(0, clock.Load()) }
	// The mirror holds the files but no metadata (as for documents written
	// before they were copied there): only what the edge cached can be served.
	emptyMirrorMeta := "cdn-mirror-meta-empty"
	if err := objectstore.EnsureBuckets(t.Context(), testEnv.store, emptyMirrorMeta); err != nil {
		t.Fatal(err)
	}
	proxy, base, logs := proxiedEdge(t, func(c *Config) { c.Now = now; c.MetaTTL = time.Second; c.Buckets.MirrorMeta = emptyMirrorMeta })
	if resp := get(t, base+"/libraries/"+testLib, nil); resp.StatusCode != 200 {
		t.Fatalf("warm-up: status %d", resp.StatusCode)
	}
	get(t, fileURL(base, testVersion, "testlib.js"), nil)
	proxy.set(proxyRefuse)
	clock.Add(int64(time.Hour)) // every cached document is now stale
	for range 3 {
		if resp := get(t, base+"/libraries/"+testLib+"?fields=version", nil); resp.StatusCode != 200 || !strings.Contains(string(resp.body), testVersion) {
			t.Fatalf("stale package document: status %d body %s", resp.StatusCode, resp.body)
		}
		if resp := get(t, fileURL(base, testVersion, "testlib.min.js"), nil); resp.StatusCode != 200 {
			t.Fatalf("file during the outage: status %d", resp.StatusCode)
		}
	}
	waitFor(t, func() bool {
		return strings.Contains(logs.String(), "metadata refresh failed; serving the cached copy")
	})
	// Never-seen metadata the mirror lacks cannot be served: 503, not a 404
	// that caches would keep.
	if resp := get(t, base+"/libraries/jquery", nil); resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("unseen library during the outage: status %d, want 503", resp.StatusCode)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 60s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// countingStore is an HTTP reverse proxy in front of MinIO that counts the
// object GETs per path, to see how often the edge reaches the bucket.
type countingStore struct {
	mu     sync.Mutex
	counts map[string]int
}

func (c *countingStore) gets(path string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.counts[path]
}

func countingEdge(t *testing.T, adjust func(*Config)) (*countingStore, string) {
	t.Helper()
	target, _ := url.Parse("http://" + testEnv.minio.Endpoint)
	proxy := httputil.NewSingleHostReverseProxy(target)
	counter := &countingStore{counts: map[string]int{}}
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			counter.mu.Lock()
			counter.counts[r.URL.Path]++
			counter.mu.Unlock()
		}
		// The request keeps its Host header, which the client signed.
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(front.Close)
	primary, err := s3.New(s3.Config{Endpoint: strings.TrimPrefix(front.URL, "http://"),
		AccessKey: testEnv.minio.AccessKey, SecretKey: testEnv.minio.SecretKey})
	if err != nil {
		t.Fatal(err)
	}
	_, ts, _ := newTestEdge(t, func(c *Config) {
		c.Primary = primary
		if adjust != nil {
			adjust(c)
		}
	})
	return counter, ts.URL
}

func concurrently(n int, f func()) {
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() { defer wg.Done(); f() }()
	}
	wg.Wait()
}

func TestConcurrentMissesShareOneBucketRead(t *testing.T) {
	counter, base := countingEdge(t, nil)
	b := testEnv.buckets
	statuses := make(chan int, 64)
	concurrently(64, func() {
		resp, err := rawClient.Get(fileURL(base, "2.0.0", "data/info.json"))
		if err != nil {
			statuses <- 0
			return
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		statuses <- resp.StatusCode
	})
	close(statuses)
	for s := range statuses {
		if s != 200 {
			t.Fatalf("a concurrent request got %d", s)
		}
	}
	for path, want := range map[string]int{
		"/" + b.Meta + "/packages/testlib.json":         1,
		"/" + b.Meta + "/versions/testlib/2.0.0.json":   1,
		"/" + b.Files + "/testlib/2.0.0/data/info.json": 1,
	} {
		if got := counter.gets(path); got != want {
			t.Errorf("%s read %d times by 64 concurrent requests, want %d", path, got, want)
		}
	}
}

func TestFloodOfMissingNamesIsNegativelyCached(t *testing.T) {
	counter, base := countingEdge(t, nil)
	concurrently(16, func() {
		for range 20 {
			if resp, err := rawClient.Get(base + "/ajax/libs/no-such-library/1.0.0/x.js"); err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}
	})
	if got := counter.gets("/" + testEnv.buckets.Meta + "/packages/no-such-library.json"); got != 1 {
		t.Errorf("320 requests for a missing library read its package document %d times, want 1", got)
	}
	// Names that cannot exist never reach the bucket at all.
	get(t, base+"/ajax/libs/no%20such/1.0.0/x.js", nil)
	if got := counter.gets("/" + testEnv.buckets.Meta + "/packages/no such.json"); got != 0 {
		t.Errorf("an invalid name reached the bucket %d times", got)
	}
}
