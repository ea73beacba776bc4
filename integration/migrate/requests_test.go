package migrate_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/edgeflow/edgeflow/internal/migrate/migratetest"
	"github.com/edgeflow/edgeflow/internal/objectstore"
	"github.com/edgeflow/edgeflow/workflows/migrate/contract"
)

// requestCounter is a proxy in front of a MinIO that counts the S3
// requests it forwards by kind (list, get, head, put, …), so a test can
// say what a job costs a store per object, and by shape (requestShape),
// so a test can say what each request asks the store to do.
type requestCounter struct {
	Endpoint string
	mu       sync.Mutex
	counts   map[string]int
	shapes   map[string]int
}

func newRequestCounter(t testing.TB, endpoint string) *requestCounter {
	target := &url.URL{Scheme: "http", Host: endpoint}
	forward := &httputil.ReverseProxy{
		// The Host header stays the proxy's: the request signature covers it.
		Rewrite:   func(r *httputil.ProxyRequest) { r.SetURL(target); r.Out.Host = r.In.Host },
		Transport: &http.Transport{MaxIdleConnsPerHost: 256},
	}
	c := &requestCounter{counts: map[string]int{}, shapes: map[string]int{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.mu.Lock()
		c.counts[requestKind(r)]++
		c.shapes[requestShape(r)]++
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

// requestShape is a request's kind with what makes a store work more or
// less for it: the names of its headers and query parameters (a checksum,
// Content-MD5, a condition, a range, metadata), whether its payload is
// signed, and the listing options (metadata=true is MinIO's costly
// extension). Values that differ per object (key, date, signature,
// length, tokens) are left out, so one shape stands for all the objects
// copied alike.
func requestShape(r *http.Request) string {
	var hs []string
	for k, v := range r.Header {
		switch k {
		case "X-Amz-Content-Sha256":
			payload := "signed"
			if p := strings.Join(v, ","); p == "UNSIGNED-PAYLOAD" || strings.HasPrefix(p, "STREAMING-") {
				payload = p
			}
			hs = append(hs, k+"="+payload)
		case "Content-Type", "X-Amz-Checksum-Mode", "X-Amz-Checksum-Algorithm", "X-Amz-Trailer":
			hs = append(hs, k+"="+strings.Join(v, ","))
		default:
			hs = append(hs, k)
		}
	}
	var qs []string
	for k, v := range r.URL.Query() {
		switch k {
		case "list-type", "metadata", "fetch-owner", "encoding-type":
			qs = append(qs, k+"="+strings.Join(v, ","))
		default:
			qs = append(qs, k)
		}
	}
	slices.Sort(hs)
	slices.Sort(qs)
	return requestKind(r) + " ?" + strings.Join(qs, "&") + " " + strings.Join(hs, " ")
}

func (c *requestCounter) take() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.counts
	c.counts, c.shapes = map[string]int{}, map[string]int{}
	return out
}

// takeShapes returns the requests counted by shape, and starts again.
func (c *requestCounter) takeShapes() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.shapes
	c.counts, c.shapes = map[string]int{}, map[string]int{}
	return out
}

// A job of small objects costs the source what a plain copy does, one GET
// per object, and the destination (a MinIO, which extracts batches) far
// less: a PUT per batch of objects; per page a listing on each side and,
// at the destination, one lookup after the page's first batch; no HEAD,
// conditional or second request per object. Each request per object costs
// a MinIO about as much CPU as the copy's own (BenchmarkMigrateSmallObjects
// compares the CPU of both sides), so one added per object shows here first.
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
		{"destination", dst, "put", n/4 + 1},
		{"destination", dst, "get", 0},
		{"destination", dst, "head", pages},
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

// Each object of a job costs the source what it costs the plain minio-go
// pool of BenchmarkMigrateSmallObjects, request for request: the same GET
// (no checksum, Content-MD5, signed payload, condition or range the pool
// does not send), and listings of the same kind on both sides; at the
// destination the job makes no request per object at all (its writes go
// in batches). The benchmark compares the two on
// CPU, and what each request asks a MinIO to do (hash a body, compute a
// checksum, read metadata for a listing) is where a difference in CPU per
// object would come from; this test says, on a shared machine too, that
// there is none.
func TestSmallObjectRequestsMatchThePlainPool(t *testing.T) {
	setup(t)
	startWorker(t, 100)
	const n = 200
	objs := make([]migratetest.Object, n)
	for i := range objs {
		objs[i] = migratetest.Object{Key: fmt.Sprintf("lib-%02d/file-%04d.js", i%20, i), Data: []byte(strings.Repeat("y", 1+i*97)),
			Meta: objectstore.Metadata{ContentType: "application/javascript"}}
	}
	srcBucket := migratetest.Bucket(t, env.Store, "shape-src")
	migratetest.Seed(t, env.Store, srcBucket, objs)
	srcProxy, dstProxy := newRequestCounter(t, env.MinIO.Endpoint), newRequestCounter(t, env.MinIO2.Endpoint)

	plainPoolAt(t, srcProxy.Endpoint, dstProxy.Endpoint, srcBucket, migratetest.Bucket(t, env.Store2, "shape-pool"), 8, false)
	pool := map[string]map[string]int{"source": srcProxy.takeShapes(), "destination": dstProxy.takeShapes()}

	s, d := source(srcBucket), dest2(dstProxy.Endpoint, migratetest.Bucket(t, env.Store2, "shape-job"), "")
	s.endpoint = srcProxy.Endpoint
	in := jobInput(t, fmt.Sprintf("shapes-%d", time.Now().UnixNano()), s, d)
	in.Settings = contract.Settings{} // the defaults users get
	st, err := wait(t, start(t, in))
	if err != nil || st.Copied != n {
		t.Fatalf("job: %+v %v", st, err)
	}
	job := map[string]map[string]int{"source": srcProxy.takeShapes(), "destination": dstProxy.takeShapes()}

	for _, side := range []string{"source", "destination"} {
		t.Logf("%s, plain pool: %v", side, pool[side])
		t.Logf("%s, job: %v", side, job[side])
		// Per object: the shapes of at least half the objects' requests.
		// The job's few others (its precheck, one listing of each side
		// per page) are counted by TestSmallObjectsCostOneRequestEachSide.
		perObject := func(shapes map[string]int) []string {
			var out []string
			for shape, count := range shapes {
				if count >= n/2 {
					out = append(out, shape)
				}
			}
			slices.Sort(out)
			return out
		}
		p, j := perObject(pool[side]), perObject(job[side])
		switch {
		case side == "destination" && len(j) != 0:
			t.Errorf("destination: the job makes requests once per object, want batches: %q", j)
		case side == "source" && (!slices.Equal(p, j) || len(p) != 1):
			t.Errorf("%s: the requests made once per object differ:\nplain pool %q\njob        %q", side, p, j)
		}
		listings := func(shapes map[string]int) []string {
			var out []string
			for shape := range shapes {
				if strings.HasPrefix(shape, "list ") {
					out = append(out, shape)
				}
			}
			return out
		}
		for _, l := range listings(job[side]) {
			if strings.Contains(l, "metadata=") {
				t.Errorf("%s: the job lists with MinIO's metadata extension: %s", side, l)
			}
			if !slices.ContainsFunc(listings(pool["source"]), func(p string) bool { return sameListing(p, l) }) {
				t.Errorf("%s: the job lists with options the plain pool does not use: %s (pool: %q)", side, l, listings(pool["source"]))
			}
		}
	}
}

// sameListing: two listing shapes that differ only in where they start
// and how many keys they ask for.
func sameListing(a, b string) bool {
	strip := func(s string) string {
		for _, p := range []string{"&continuation-token", "&start-after", "&max-keys"} {
			s = strings.ReplaceAll(s, p, "")
		}
		return s
	}
	return strip(a) == strip(b)
}
