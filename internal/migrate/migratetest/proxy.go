// Package migratetest helps Migrate's tests watch a real store: a proxy in
// front of MinIO that counts the writes each key receives (so a test can
// prove nothing is written twice) and can answer with SlowDown for a while.
package migratetest

import (
	"context"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Proxy forwards S3 requests to a MinIO, keeping the Host header (which the
// request signature covers), and records every write that succeeded.
type Proxy struct {
	// Endpoint is the proxy's host:port: give it to the client under test.
	Endpoint string
	srv      *httptest.Server
	mu       sync.Mutex
	writes   map[string]int // bucket/key → completed writes
	// throttle is how many more requests see throttling: every other one
	// of them is answered 503 SlowDown.
	throttle  atomic.Int64
	throttled atomic.Int64
}

// NewProxy starts a proxy in front of the MinIO at endpoint.
func NewProxy(endpoint string) *Proxy {
	target, _ := url.Parse("http://" + endpoint)
	forward := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(target)
		r.Out.Host = r.In.Host
	}}
	p := &Proxy{writes: map[string]int{}}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n := p.throttle.Add(-1); n >= 0 && n%2 == 0 {
			p.throttled.Add(1)
			w.Header().Set("Content-Type", "application/xml")
			w.WriteHeader(http.StatusServiceUnavailable)
			io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>`)
			return
		}
		// Not cancelled with the client: a worker killed mid-request leaves
		// a write the store finishes, and it is counted when the store
		// answers, before the answer goes back (see internal/faultproxy).
		ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), 2*time.Minute)
		defer cancel()
		write := isObjectWrite(r)
		key, _ := url.PathUnescape(strings.TrimPrefix(r.URL.EscapedPath(), "/"))
		rec := &statusRecorder{ResponseWriter: w, answered: func(status int) {
			if status == http.StatusOK && write {
				p.mu.Lock()
				p.writes[key]++
				p.mu.Unlock()
			}
		}}
		forward.ServeHTTP(rec, r.WithContext(ctx))
	}))
	p.Endpoint = strings.TrimPrefix(p.srv.URL, "http://")
	return p
}

// isObjectWrite recognises the requests that create an object: a PUT that
// is not a part (a plain put or a server-side copy), and the POST that
// completes a multipart upload.
func isObjectWrite(r *http.Request) bool {
	q := r.URL.Query()
	switch r.Method {
	case http.MethodPut:
		return !q.Has("partNumber") && !q.Has("uploadId") && strings.Count(strings.TrimPrefix(r.URL.Path, "/"), "/") >= 1
	case http.MethodPost:
		return q.Has("uploadId")
	}
	return false
}

// Writes returns how often each bucket/key was written.
func (p *Proxy) Writes() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return maps.Clone(p.writes)
}

// ResetWrites forgets the writes seen so far.
func (p *Proxy) ResetWrites() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.writes = map[string]int{}
}

// Throttle answers every other one of the next n requests with 503
// SlowDown: a store under pressure, where a retry after a pause succeeds.
func (p *Proxy) Throttle(n int) { p.throttle.Store(int64(n)) }

// Throttled is how many requests were answered with SlowDown.
func (p *Proxy) Throttled() int { return int(p.throttled.Load()) }

// Close stops the proxy.
func (p *Proxy) Close() { p.srv.Close() }

type statusRecorder struct {
	http.ResponseWriter
	answered func(status int)
	done     bool
}

func (r *statusRecorder) WriteHeader(code int) {
	if !r.done && code >= 200 {
		r.done = true
		r.answered(code)
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Write(b []byte) (int, error) {
	if !r.done {
		r.WriteHeader(http.StatusOK)
	}
	return r.ResponseWriter.Write(b)
}

func (r *statusRecorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}
