package migrate

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fsouza/fake-gcs-server/fakestorage"

	"github.com/edgeflow/edgeflow/internal/objectstore"
	"github.com/edgeflow/edgeflow/internal/objectstore/gcs"
)

// servedCount counts what a server was asked and the bytes it answered with.
type servedCount struct {
	requests, bytes atomic.Int64
}

type countedWriter struct {
	http.ResponseWriter
	c *servedCount
}

func (w countedWriter) Write(b []byte) (int, error) {
	n, err := w.ResponseWriter.Write(b)
	w.c.bytes.Add(int64(n))
	return n, err
}

// A gs:// source (fake-gcs-server behind a counting proxy, reached as a
// worker reaches an emulator) is paced for every request GCS serves: a
// whole or ranged read asks the object's attributes before its bytes, two
// requests, and both are booked, with the attributes' answer; what the
// limiter booked covers what the server answered.
func TestAGCSSourceIsPacedForEveryRequestItServes(t *testing.T) {
	var served servedCount
	var fake http.Handler
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served.requests.Add(1)
		fake.ServeHTTP(countedWriter{w, &served}, r)
	}))
	defer proxy.Close()
	host := strings.TrimPrefix(proxy.URL, "http://")
	const bucket = "paced-src"
	data := strings.Repeat("0123456789abcdef", 1<<10) // 16 KiB
	var initial []fakestorage.Object
	for _, key := range []string{"a/one", "a/two", "a/three"} {
		initial = append(initial, fakestorage.Object{ObjectAttrs: fakestorage.ObjectAttrs{BucketName: bucket, Name: key}, Content: []byte(data)})
	}
	// User metadata makes the attributes' answer larger than any estimate
	// made before it: what it held is charged once read. Not under the
	// prefix listed: the emulator ignores a listing's field selection and
	// would answer with the metadata that GCS leaves out.
	initial = append(initial, fakestorage.Object{ObjectAttrs: fakestorage.ObjectAttrs{BucketName: bucket, Name: "b/meta",
		Metadata: map[string]string{"notes": strings.Repeat("m", 6<<10)}}, Content: []byte(data)})
	srv, err := fakestorage.NewServerWithOptions(fakestorage.Options{NoListener: true, Scheme: "http", PublicHost: host, InitialObjects: initial})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	fake = srv.HTTPHandler()
	t.Setenv(gcs.EmulatorEnv, host)
	g, err := gcs.New(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()

	// Buckets on clocks of their own, moved by their waits: the test
	// counts what they booked, it does not time.
	lim := &Limiter{requests: fakeBucket(1, &sleepClock{now: time.Unix(1000, 0)}), bytes: fakeBucket(1, &sleepClock{now: time.Unix(1000, 0)})}
	src := LimitSource(g, lim)
	ctx := context.Background()
	read := func(r io.ReadCloser, _ objectstore.ObjectInfo, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		if _, err := io.Copy(io.Discard, r); err != nil {
			t.Fatal(err)
		}
	}
	page, err := src.List(ctx, bucket, objectstore.ListOptions{Prefix: "a/"})
	if err != nil || len(page.Objects) != 3 {
		t.Fatalf("listing: %v, %d objects", err, len(page.Objects))
	}
	for _, o := range page.Objects {
		read(src.Get(ReadingSize(ctx, o.Size), bucket, o.Key))
	}
	ranged, ok := src.(objectstore.RangeReader)
	if !ok {
		t.Fatal("the paced gs source lost its ranged reads")
	}
	read(ranged.GetRange(ctx, bucket, "a/one", 0, 4096))
	read(ranged.GetRange(ctx, bucket, "a/two", 4096, -1))
	if _, err := src.Stat(ctx, bucket, "a/three"); err != nil {
		t.Fatal(err)
	}
	read(src.Get(ReadingSize(ctx, int64(len(data))), bucket, "b/meta"))
	read(ranged.GetRange(ctx, bucket, "b/meta", 0, 4096))
	if _, err := src.Stat(ctx, bucket, "b/meta"); err != nil {
		t.Fatal(err)
	}

	requests, bytes := served.requests.Load(), served.bytes.Load()
	lim.requests.mu.Lock()
	bookedRequests := lim.requests.booked
	lim.requests.mu.Unlock()
	lim.bytes.mu.Lock()
	bookedBytes := lim.bytes.booked
	lim.bytes.mu.Unlock()
	t.Logf("GCS served %d requests, %d bytes; the limiter booked %.0f requests, %.0f bytes", requests, bytes, bookedRequests, bookedBytes)
	if float64(requests) != bookedRequests {
		t.Errorf("GCS served %d requests, the limiter booked %.0f: every request counts", requests, bookedRequests)
	}
	if float64(bytes) > bookedBytes {
		t.Errorf("GCS answered with %d bytes, the limiter booked %.0f: its answers count, attributes included", bytes, bookedBytes)
	}
}
