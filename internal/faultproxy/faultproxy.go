// Package faultproxy is an S3 reverse proxy that injects the faults a real
// store under pressure shows — 503 SlowDown, connections reset, latency
// spikes — and counts every object write that reached the store, so a test
// can prove its client retried through the faults and wrote nothing twice.
//
// Faults are decided before a request is forwarded: a failed request never
// reached the store, so a write the proxy counts twice was sent twice by the
// client under test, never by the proxy.
package faultproxy

import (
	"archive/tar"
	"bytes"
	"context"
	"io"
	"maps"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Faults are the fractions of requests (0..1) that see each fault.
type Faults struct {
	SlowDown   float64       // answered 503 SlowDown, as S3 does under load
	Reset      float64       // connection reset (TCP RST) before any answer
	Spike      float64       // forwarded after SpikeDelay
	SpikeDelay time.Duration // the latency of a spike
}

// Counts are what the proxy saw and did.
type Counts struct {
	Requests  int64 // every request received
	Forwarded int64 // reached the store
	SlowDowns int64
	Resets    int64
	Spikes    int64
	Batches   int64 // batch writes (archives of objects) the store accepted
}

// Faults is the number of requests that saw a fault (a spike is one).
func (c Counts) Faults() int64 { return c.SlowDowns + c.Resets + c.Spikes }

// Proxy forwards S3 requests to one store, keeping the Host header (which
// the request signature covers).
type Proxy struct {
	// Endpoint is the proxy's host:port: give it to the client under test.
	Endpoint string
	srv      *httptest.Server

	mu     sync.Mutex
	faults Faults
	rng    *rand.Rand
	writes map[string]int // bucket/key → writes the store accepted
	// unconfirmed: bucket/key → writes that reached the store (or began
	// to) without its 200: a store stopped mid-request may have committed
	// them, an archive's first entries most of all.
	unconfirmed map[string]int

	// throttle is how many more requests see throttling (see Throttle).
	throttle atomic.Int64

	requests, forwarded, slowDowns, resets, spikes, batches atomic.Int64
}

// New starts a proxy in front of the store at endpoint (host:port), with
// the faults f drawn from a generator seeded with seed (same seed, same
// sequence of decisions for the same sequence of requests).
func New(endpoint string, f Faults, seed uint64) *Proxy {
	target := &url.URL{Scheme: "http", Host: endpoint}
	forward := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			r.Out.Host = r.In.Host
		},
		ErrorLog: nil,
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, err error) {
			// The store itself is unreachable: what a client sees then.
			w.WriteHeader(http.StatusBadGateway)
			io.WriteString(w, err.Error())
		},
	}
	p := &Proxy{faults: f, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		writes: map[string]int{}, unconfirmed: map[string]int{}}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.requests.Add(1)
		if n := p.throttle.Add(-1); n >= 0 && n%2 == 0 {
			p.slowDowns.Add(1)
			slowDown(w)
			return
		}
		switch fault, delay := p.decide(); fault {
		case faultSlowDown:
			p.slowDowns.Add(1)
			slowDown(w)
			return
		case faultReset:
			p.resets.Add(1)
			reset(w)
			return
		case faultSpike:
			p.spikes.Add(1)
			select {
			case <-time.After(delay):
			case <-r.Context().Done():
				return
			}
		}
		p.forwarded.Add(1)
		// The store finishes what reached it even when the client is gone
		// (a worker killed mid-request), as a real store does: the request
		// is not cancelled with the client, and a write is counted when the
		// store answers it, before the answer goes back (which may fail).
		ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), forwardTimeout)
		defer cancel()
		write := IsObjectWrite(r)
		key, _ := url.PathUnescape(strings.TrimPrefix(r.URL.EscapedPath(), "/"))
		var archive *bytes.Buffer
		if write && IsBatchWrite(r) {
			// The objects written are the archive's entries, not the key.
			archive = new(bytes.Buffer)
			r.Body = struct {
				io.Reader
				io.Closer
			}{io.TeeReader(r.Body, archive), r.Body}
		}
		rec := &statusRecorder{ResponseWriter: w, answered: func(status int) {
			if !write {
				return
			}
			keys := []string{key}
			if archive != nil {
				// What the store read of the archive: all of it when it
				// answered 200, what came before a failure otherwise.
				bucket, _, _ := strings.Cut(key, "/")
				keys = BatchKeys(bucket, archive.Bytes())
			}
			counted := p.writes
			if status != http.StatusOK {
				counted = p.unconfirmed
			} else if archive != nil {
				p.batches.Add(1)
			}
			p.mu.Lock()
			for _, k := range keys {
				counted[k]++
			}
			p.mu.Unlock()
		}}
		forward.ServeHTTP(rec, r.WithContext(ctx))
	}))
	p.Endpoint = strings.TrimPrefix(p.srv.URL, "http://")
	return p
}

type fault int

const (
	faultNone fault = iota
	faultSlowDown
	faultReset
	faultSpike
)

func (p *Proxy) decide() (fault, time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	f := p.faults
	x := p.rng.Float64()
	switch {
	case x < f.SlowDown:
		return faultSlowDown, 0
	case x < f.SlowDown+f.Reset:
		return faultReset, 0
	case x < f.SlowDown+f.Reset+f.Spike:
		return faultSpike, f.SpikeDelay
	}
	return faultNone, 0
}

func slowDown(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/xml")
	w.Header().Set("Retry-After", "1")
	w.WriteHeader(http.StatusServiceUnavailable)
	io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>`)
}

// reset closes the client's connection with a TCP RST (linger 0), as a
// load balancer dropping it would.
func reset(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic("faultproxy: the server cannot hijack connections")
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		return
	}
	if tcp, ok := conn.(*net.TCPConn); ok {
		_ = tcp.SetLinger(0)
	}
	_ = conn.Close()
}

// IsObjectWrite recognises the requests that create an object: a PUT that
// is not a part upload (a plain put or a server-side copy), and the POST
// that completes a multipart upload.
func IsObjectWrite(r *http.Request) bool {
	q := r.URL.Query()
	switch r.Method {
	case http.MethodPut:
		return !q.Has("partNumber") && !q.Has("uploadId") && strings.Count(strings.TrimPrefix(r.URL.Path, "/"), "/") >= 1
	case http.MethodPost:
		return q.Has("uploadId")
	}
	return false
}

// IsBatchWrite recognises a write of many objects as one archive the store
// extracts (MinIO's "snowball" upload).
func IsBatchWrite(r *http.Request) bool {
	return r.Method == http.MethodPut && strings.EqualFold(r.Header.Get("X-Amz-Meta-Snowball-Auto-Extract"), "true")
}

// BatchKeys are the bucket/keys of a batch archive's objects, as the store
// names them (cleaned paths; "." skipped).
func BatchKeys(bucket string, archive []byte) []string {
	var keys []string
	tr := tar.NewReader(bytes.NewReader(archive))
	for {
		h, err := tr.Next()
		if err != nil {
			return keys
		}
		name := strings.TrimPrefix(path.Clean(h.Name), "/")
		if h.Typeflag == tar.TypeReg && name != "." {
			keys = append(keys, bucket+"/"+name)
		}
	}
}

// SetFaults changes the faults from the next request on (zero Faults: a
// plain proxy, e.g. while a test verifies what was written).
func (p *Proxy) SetFaults(f Faults) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.faults = f
}

// Throttle answers every other one of the next n requests with 503
// SlowDown (counted in SlowDowns), before any fault is drawn: a store under
// pressure for a while, where a retry after a pause succeeds. Unlike the
// drawn faults it is certain to happen, for tests that must see it.
func (p *Proxy) Throttle(n int) { p.throttle.Store(int64(n)) }

// Counts returns what the proxy saw so far.
func (p *Proxy) Counts() Counts {
	return Counts{Requests: p.requests.Load(), Forwarded: p.forwarded.Load(),
		SlowDowns: p.slowDowns.Load(), Resets: p.resets.Load(), Spikes: p.spikes.Load(), Batches: p.batches.Load()}
}

// Writes returns how often the store accepted a write of each bucket/key.
func (p *Proxy) Writes() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return maps.Clone(p.writes)
}

// Unconfirmed returns, for each bucket/key, the writes forwarded to the
// store that it did not answer with 200 (an error, or no answer at all):
// what a store stopping mid-request may have committed unseen.
func (p *Proxy) Unconfirmed() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return maps.Clone(p.unconfirmed)
}

// ResetWrites forgets the writes seen so far, confirmed or not.
func (p *Proxy) ResetWrites() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.writes, p.unconfirmed = map[string]int{}, map[string]int{}
}

// Close stops the proxy, closing its client connections.
func (p *Proxy) Close() {
	p.srv.CloseClientConnections()
	p.srv.Close()
}

// forwardTimeout bounds a forwarded request that no client waits for.
const forwardTimeout = 2 * time.Minute

// statusRecorder reports the store's status before passing it on. It is
// no http.CloseNotifier on purpose: the forward is not cancelled with the
// client.
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
