package migrate_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/edgeflow/edgeflow/internal/migrate/migratetest"
	"github.com/edgeflow/edgeflow/workflows/migrate/contract"
)

// requestCounter is a proxy in front of a MinIO that counts the S3
// requests it forwards by kind (list, get, head, put, …), so a test can
// say what a job costs a store per object.
type requestCounter struct {
	Endpoint string
	mu       sync.Mutex
	counts   map[string]int
}

func newRequestCounter(t testing.TB, endpoint string) *requestCounter {
	target := &url.URL{Scheme: "http", Host: endpoint}
	forward := &httputil.ReverseProxy{
		// The Host header stays the proxy's: the request signature covers it.
		Rewrite:   func(r *httputil.ProxyRequest) { r.SetURL(target); r.Out.Host = r.In.Host },
		Transport: &http.Transport{MaxIdleConnsPerHost: 256},
	}
	c := &requestCounter{counts: map[string]int{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.mu.Lock()
		c.counts[requestKind(r)]++
		c.mu.Unlock()
		forward.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	c.Endpoint = strings.TrimPrefix(srv.URL, "http://")
	return c
}

// requestKind names an S3 request by method and what it addresses.
func requestKind(r *http.Request) string {
	q := r.URL.Query()
	_, key, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	switch {
	case q.Has("list-type"):
		return "list"
	case q.Has("uploads"), q.Has("uploadId"):
		return "multipart " + r.Method
	case key == "":
		return "bucket " + r.Method
	}
	return strings.ToLower(r.Method)
}

func (c *requestCounter) take() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.counts
	c.counts = map[string]int{}
	return out
}

// A job of small objects costs each store what a plain copy does: one GET
// at the source and one PUT at the destination per object, and per page a
// listing on each side; no HEAD, conditional or second request per
// object. Each request per object costs the destination MinIO about as
// much CPU as the copy's own (BenchmarkMigrateSmallObjects compares the
// CPU of both sides), so one added per object shows here first.
func TestSmallObjectsCostOneRequestEachSide(t *testing.T) {
	setup(t)
	startWorker(t, 100)
	const n = 600
	objs := make([]migratetest.Object, n)
	for i := range objs {
		objs[i] = migratetest.Object{Key: fmt.Sprintf("lib-%02d/file-%04d.js", i%30, i), Data: []byte(strings.Repeat("x", 1+i%2000))}
	}
	srcBucket := migratetest.Bucket(t, env.Store, "req-src")
	migratetest.Seed(t, env.Store, srcBucket, objs)
	dstBucket := migratetest.Bucket(t, env.Store2, "req-dst")
	srcProxy, dstProxy := newRequestCounter(t, env.MinIO.Endpoint), newRequestCounter(t, env.MinIO2.Endpoint)
	s, d := source(srcBucket), dest2(dstProxy.Endpoint, dstBucket, "")
	s.endpoint = srcProxy.Endpoint
	in := jobInput(t, fmt.Sprintf("requests-%d", time.Now().UnixNano()), s, d)
	in.Settings = contract.Settings{} // the defaults users get: pages of 250, then 1,000 keys
	st, err := wait(t, start(t, in))
	if err != nil || st.Copied != n {
		t.Fatalf("job: %+v %v", st, err)
	}
	src, dst := srcProxy.take(), dstProxy.take()
	t.Logf("requests for %d objects: source %v, destination %v", n, src, dst)
	// Beyond one per object: the precheck (a read at the source; at the
	// destination its identity probe, written and removed) and a listing
	// of each page's range on each side.
	pages := 2
	want := []struct {
		side   string
		got    map[string]int
		kind   string
		atMost int
	}{
		{"source", src, "get", n + 1},
		{"source", src, "head", 1},
		{"source", src, "list", pages + 2},
		{"source", src, "put", 0},
		{"destination", dst, "put", n + 1},
		{"destination", dst, "get", 0},
		{"destination", dst, "head", 0},
		{"destination", dst, "list", 2*pages + 3},
	}
	// The precheck's write test: an upload begun and aborted.
	if dst["multipart POST"] != 1 || dst["multipart DELETE"] != 1 {
		t.Errorf("destination: %d multipart uploads begun and %d aborted, want the precheck's one", dst["multipart POST"], dst["multipart DELETE"])
	}
	for _, w := range want {
		if w.got[w.kind] > w.atMost {
			t.Errorf("%s: %d %s requests for %d objects, want at most %d", w.side, w.got[w.kind], w.kind, n, w.atMost)
		}
	}
	for side, got := range map[string]map[string]int{"source": src, "destination": dst} {
		total := 0
		for _, c := range got {
			total += c
		}
		if total > n+20 {
			t.Errorf("%s: %d requests for %d objects (%v): more than one per object and a few per job", side, total, n, got)
		}
	}
}
