package s3_test

import (
	"context"
	"errors"
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

	"github.com/edgeflow/edgeflow/internal/objectstore"
	"github.com/edgeflow/edgeflow/internal/objectstore/s3"
	"github.com/edgeflow/edgeflow/internal/objectstore/storetest"
	"github.com/edgeflow/edgeflow/internal/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) { testenv.Main(m, testenv.Options{MinIO: true}, &env) }

// The S3 store against a real MinIO: the core and every capability.
func TestConformance(t *testing.T) {
	testenv.Require(t, env)
	storetest.Run(t, env.Store, "conformance")
}

// faultProxy stands between a store client and MinIO, answering the first
// `fail` requests itself with `fault`, then forwarding (keeping the Host
// header, which the request signature covers).
func faultProxy(t *testing.T, fail int32, fault http.HandlerFunc) (endpoint string, failed *atomic.Int32) {
	t.Helper()
	target, _ := url.Parse("http://" + env.MinIO.Endpoint)
	forward := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(target)
		r.Out.Host = r.In.Host
	}}
	failed = new(atomic.Int32)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if failed.Add(1) <= fail {
			fault(w, r)
			return
		}
		forward.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://"), failed
}

func slowDown(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(http.StatusServiceUnavailable)
	io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>`)
}

// clientDisconnected is distributed MinIO's answer when a node stops while
// another serves the request.
func clientDisconnected(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(499)
	io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>ClientDisconnected</Code><Message>Client disconnected before response was ready</Message></Error>`)
}

func resetConnection(w http.ResponseWriter, _ *http.Request) {
	conn, _, err := w.(http.Hijacker).Hijack()
	if err == nil {
		if tcp, ok := conn.(*net.TCPConn); ok {
			_ = tcp.SetLinger(0) // close with RST, not FIN
		}
		conn.Close()
	}
}

// closeConnection closes without an answer (FIN), as a load balancer does
// when the node behind it stops: minio-go reports it as text only,
// "Connection closed by foreign host".
func closeConnection(w http.ResponseWriter, _ *http.Request) {
	if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
		conn.Close()
	}
}

func storeAt(t *testing.T, endpoint string, maxRetries int) *s3.Store {
	t.Helper()
	cfg := env.Store.Config()
	cfg.Endpoint, cfg.MaxRetries = endpoint, maxRetries
	st, err := s3.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func TestTransientFailuresAreClassified(t *testing.T) {
	testenv.Require(t, env)
	ctx := context.Background()
	if err := objectstore.EnsureBuckets(ctx, env.Store, "transient"); err != nil {
		t.Fatal(err)
	}
	if err := objectstore.PutBytes(ctx, env.Store, "transient", "doc", []byte("ok"), objectstore.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		fault http.HandlerFunc
		code  string
	}{{"503 SlowDown", slowDown, "SlowDown"}, {"connection reset", resetConnection, ""}, {"connection closed", closeConnection, ""},
		{"499 ClientDisconnected", clientDisconnected, "ClientDisconnected"}} {
		t.Run(tc.name, func(t *testing.T) {
			endpoint, _ := faultProxy(t, 1000, tc.fault)
			_, _, err := objectstore.ReadAll(ctx, storeAt(t, endpoint, 1), "transient", "doc")
			var se *objectstore.Error
			if !objectstore.IsTransient(err) || !errors.Is(err, objectstore.ErrTransient) || !errors.As(err, &se) || se.Code != tc.code {
				t.Fatalf("%s: %v; want a transient *objectstore.Error with code %q", tc.name, err, tc.code)
			}
			if errors.Is(err, objectstore.ErrNotFound) || !strings.Contains(err.Error(), "transient/doc") {
				t.Errorf("%s: %v; want it to name the object and not be a not-found", tc.name, err)
			}
		})
	}
	// A HEAD's answer has no body, so minio-go names the error after the
	// status line ("499 status code 499"): the status alone must say
	// transient, or a stopped node of a distributed MinIO dead-letters the
	// object whose lookup it was serving.
	t.Run("499 to a HEAD", func(t *testing.T) {
		endpoint, _ := faultProxy(t, 1000, func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(499) })
		_, err := storeAt(t, endpoint, 1).Stat(ctx, "transient", "doc")
		if !objectstore.IsTransient(err) || errors.Is(err, objectstore.ErrNotFound) || !strings.Contains(err.Error(), "transient/doc") {
			t.Fatalf("stat answered 499 without a body: %v; want a transient error naming the object", err)
		}
	})
	// With its own retries, the client rides out a short burst of them.
	endpoint, requests := faultProxy(t, 2, slowDown)
	data, _, err := objectstore.ReadAll(ctx, storeAt(t, endpoint, 0), "transient", "doc")
	if err != nil || string(data) != "ok" || requests.Load() < 3 {
		t.Errorf("read through two SlowDowns: %q, %v after %d requests; want ok after retries", data, err, requests.Load())
	}
}

func TestIsTransient(t *testing.T) {
	timeout := &net.OpError{Op: "read", Net: "tcp", Err: &timeoutError{}}
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{nil, false},
		{context.Canceled, false},
		{&objectstore.Error{Op: "get", Err: context.Canceled}, false},
		{&objectstore.Error{Op: "get", Kind: objectstore.ErrTransient, Code: "InternalError"}, true},
		{&objectstore.Error{Op: "get", Kind: objectstore.ErrPreconditionFailed}, false},
		{timeout, true},
		{&url.Error{Op: "Get", URL: "http://store/b/k", Err: io.ErrUnexpectedEOF}, true},
		{errors.New("decode: invalid character"), false},
	} {
		if got := objectstore.IsTransient(tc.err); got != tc.want {
			t.Errorf("IsTransient(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

type timeoutError struct{}

func (*timeoutError) Error() string   { return "i/o timeout" }
func (*timeoutError) Timeout() bool   { return true }
func (*timeoutError) Temporary() bool { return true }

func TestErrorsHideTheSecret(t *testing.T) {
	testenv.Require(t, env)
	ctx := context.Background()
	cfg := env.Store.Config()
	cfg.SecretKey = "wrong-secret-value"
	bad, err := s3.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	err = bad.Ping(ctx)
	if !errors.Is(err, objectstore.ErrBadCredentials) || !errors.Is(err, objectstore.ErrAccessDenied) || !strings.Contains(err.Error(), "credentials rejected") {
		t.Fatalf("wrong secret: %v; want ErrBadCredentials saying credentials rejected", err)
	}
	_, _, err = bad.Get(ctx, "conformance", "key")
	for _, text := range []string{err.Error(), cfg.String(), bad.String()} {
		if strings.Contains(text, "wrong-secret-value") || strings.Contains(text, env.MinIO.SecretKey) {
			t.Errorf("a secret leaked: %s", text)
		}
	}
	if objectstore.IsTransient(err) {
		t.Errorf("rejected credentials are not transient: %v", err)
	}
	if _, err := s3.New(s3.Config{Endpoint: "http://host:9000"}); err == nil || !strings.Contains(err.Error(), "without a scheme") {
		t.Errorf("endpoint with scheme: %v", err)
	}
}

// Another endpoint cannot copy server side: objectstore.Copy streams the
// bytes across and keeps every piece of metadata.
func TestCopyAcrossStoresStreamsWithMetadata(t *testing.T) {
	testenv.Require(t, env)
	ctx := context.Background()
	if err := objectstore.EnsureBuckets(ctx, env.Store, "across-src", "across-dst"); err != nil {
		t.Fatal(err)
	}
	endpoint, requests := faultProxy(t, 0, nil)
	other := storeAt(t, endpoint, 0)
	if other.CanCopyFrom(env.Store) || !env.Store.CanCopyFrom(env.Store) {
		t.Fatal("CanCopyFrom must hold for the same endpoint only")
	}
	meta := objectstore.Metadata{ContentType: "application/javascript", CacheControl: "max-age=60",
		ContentEncoding: "gzip", ContentDisposition: "inline", User: map[string]string{"job": "m-1"}}
	body := strings.Repeat("payload ", 10_000)
	src, err := env.Store.Put(ctx, "across-src", "obj", strings.NewReader(body), int64(len(body)), objectstore.PutOptions{Metadata: meta})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := objectstore.Copy(ctx, env.Store, "across-src", "obj", other, "across-dst", "obj", objectstore.CopyOptions{IfSourceMatch: src.ETag}); err != nil {
		t.Fatal(err)
	}
	data, info, err := objectstore.ReadAll(ctx, env.Store, "across-dst", "obj")
	if err != nil || string(data) != body || requests.Load() == 0 {
		t.Fatalf("copied %d bytes (%v) with %d requests to the other endpoint", len(data), err, requests.Load())
	}
	if info.ContentType != meta.ContentType || info.CacheControl != meta.CacheControl || info.ContentEncoding != meta.ContentEncoding ||
		info.ContentDisposition != meta.ContentDisposition || info.User["job"] != "m-1" {
		t.Errorf("metadata after a streamed copy: %+v; want %+v", info.Metadata, meta)
	}
	_, err = objectstore.Copy(ctx, env.Store, "across-src", "obj", other, "across-dst", "stale", objectstore.CopyOptions{IfSourceMatch: "not-the-etag"})
	if !errors.Is(err, objectstore.ErrPreconditionFailed) {
		t.Errorf("streamed copy of a changed source: %v; want ErrPreconditionFailed", err)
	}
}

func TestReplicateLeavesTheLatestDocumentOnTheDestination(t *testing.T) {
	testenv.Require(t, env)
	ctx := context.Background()
	if err := objectstore.EnsureBuckets(ctx, env.Store, "os-test", "os-test-replica"); err != nil {
		t.Fatal(err)
	}
	// Each writer appends to one document and then replicates it, as the
	// publish commit does with the package document and the search index:
	// however the copies interleave, the replica must end as the final state.
	type list struct{ Items []int }
	const writers = 16
	var wg sync.WaitGroup
	for i := range writers {
		wg.Go(func() {
			if _, err := objectstore.UpdateJSON(ctx, env.Store, "os-test", "list.json", func(l *list, _ bool) (bool, error) {
				l.Items = append(l.Items, i)
				return true, nil
			}); err != nil {
				t.Error(err)
				return
			}
			if err := objectstore.Replicate(ctx, env.Store, "os-test", env.Store, "os-test-replica", "list.json"); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	source, _, err := objectstore.ReadAll(ctx, env.Store, "os-test", "list.json")
	if err != nil {
		t.Fatal(err)
	}
	replica, info, err := objectstore.ReadAll(ctx, env.Store, "os-test-replica", "list.json")
	if err != nil {
		t.Fatal(err)
	}
	if string(replica) != string(source) {
		t.Errorf("replica %s differs from the source %s", replica, source)
	}
	if info.ContentType != "application/json" {
		t.Errorf("replica content type %q, want application/json", info.ContentType)
	}
	if err := objectstore.Replicate(ctx, env.Store, "os-test", env.Store, "os-test-replica", "missing.json"); !errors.Is(err, objectstore.ErrNotFound) {
		t.Errorf("replicating a missing object: %v; want ErrNotFound", err)
	}
}
