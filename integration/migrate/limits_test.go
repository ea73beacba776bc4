package migrate_test

import (
	"bytes"
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

// sourceMeter is a proxy in front of the source that notes when each
// request arrived and when each byte of every answer left for the client:
// what the source served, as the store behind it would see it.
type sourceMeter struct {
	Endpoint string
	mu       sync.Mutex
	requests []time.Time
	sent     []sentBytes
}

type sentBytes struct {
	at time.Time
	n  int
}

func newSourceMeter(t testing.TB, endpoint string) *sourceMeter {
	target := &url.URL{Scheme: "http", Host: endpoint}
	forward := &httputil.ReverseProxy{
		Rewrite:   func(r *httputil.ProxyRequest) { r.SetURL(target); r.Out.Host = r.In.Host },
		Transport: &http.Transport{MaxIdleConnsPerHost: 256},
	}
	m := &sourceMeter{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m.mu.Lock()
		m.requests = append(m.requests, time.Now())
		m.mu.Unlock()
		forward.ServeHTTP(meteredWriter{w, m}, r)
	}))
	t.Cleanup(srv.Close)
	m.Endpoint = strings.TrimPrefix(srv.URL, "http://")
	return m
}

type meteredWriter struct {
	http.ResponseWriter
	m *sourceMeter
}

func (w meteredWriter) Write(b []byte) (int, error) {
	n, err := w.ResponseWriter.Write(b)
	w.m.mu.Lock()
	w.m.sent = append(w.m.sent, sentBytes{time.Now(), n})
	w.m.mu.Unlock()
	return n, err
}

func (w meteredWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// steady is the meter's steady window: from settle after the first
// request to the last one, so the unlimited precheck and start-up are left
// out; the window must be long enough to say anything.
func (m *sourceMeter) steady(t *testing.T, settle, atLeast time.Duration) (from, to time.Time) {
	t.Helper()
	first, last := m.span(t)
	from, to = first.Add(settle), last
	if to.Sub(from) < atLeast {
		t.Fatalf("the job read its source for %v: too short a steady window (want %v after the first %v) — were the limits applied?",
			last.Sub(first), atLeast, settle)
	}
	return from, to
}

// span is when the source saw its first request and its last.
func (m *sourceMeter) span(t *testing.T) (first, last time.Time) {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.requests) == 0 {
		t.Fatal("the source saw no request")
	}
	return m.requests[0], m.requests[len(m.requests)-1]
}

// rates are the requests and bytes a second the source served in [from, to].
func (m *sourceMeter) rates(from, to time.Time) (requests, bytes float64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var nr, nb int
	for _, at := range m.requests {
		if !at.Before(from) && !at.After(to) {
			nr++
		}
	}
	for _, s := range m.sent {
		if !s.at.Before(from) && !s.at.After(to) {
			nb += s.n
		}
	}
	secs := to.Sub(from).Seconds()
	return float64(nr) / secs, float64(nb) / secs
}

// A job's --max-requests and --max-bandwidth hold at the source across two
// worker processes sharing its pages: over the steady window, what the
// source served a second stays within 5% of each limit and reaches 80% of
// it, and the job still copies every object. Each job has six pages, four
// in flight, so for its last third fewer pages run than shares were
// handed out: they must take up the shares of the pages that ended.
// Without the limits each job is over in a second or two, far above them.
func TestLimitsHoldAtTheSourceAcrossTwoWorkers(t *testing.T) {
	setup(t)
	startWorkerProcess(t)
	startWorkerProcess(t)
	cases := []struct {
		name     string
		objs     []migratetest.Object
		pageSize int
		settings func(*contract.Settings)
		check    func(t *testing.T, requests, bytes float64)
	}{
		{
			// Tiny objects: one GET each, the requests bind (20 s at the limit).
			name: "requests", objs: sized("r/", 600, 1<<10), pageSize: 100,
			settings: func(s *contract.Settings) { s.MaxRequests = 30 },
			check:    func(t *testing.T, requests, _ float64) { checkRate(t, "requests/s", requests, 30) },
		},
		{
			// 64 KiB objects: the bytes bind (19 s at the limit).
			name: "bandwidth", objs: sized("b/", 192, 64<<10), pageSize: 32,
			settings: func(s *contract.Settings) { s.MaxBandwidth = 640 << 10 },
			check:    func(t *testing.T, _, bytes float64) { checkRate(t, "bytes/s", bytes, 640<<10) },
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srcBucket := migratetest.Bucket(t, env.Store, "limit-src")
			migratetest.Seed(t, env.Store, srcBucket, c.objs)
			dstBucket := migratetest.Bucket(t, env.Store2, "limit-dst")
			meter := newSourceMeter(t, env.MinIO.Endpoint)
			src := source(srcBucket)
			src.endpoint = meter.Endpoint
			job := fmt.Sprintf("limit-%s-%d", c.name, time.Now().UnixNano())
			in := jobInput(t, job, src, dest2(env.MinIO2.Endpoint, dstBucket, ""))
			in.Settings.PageSize, in.Settings.PagesInFlight = c.pageSize, 4
			c.settings(&in.Settings)
			st, err := wait(t, start(t, in))
			n := int64(len(c.objs))
			if err != nil || st.State != contract.StateCompleted || st.Copied != n || st.Failed != 0 || st.Bytes != totalBytes(c.objs) {
				t.Fatalf("job: %v; %+v", err, st)
			}
			if st.Limits == nil || st.Limits.MaxRequests != in.Settings.MaxRequests || st.Limits.MaxBandwidth != in.Settings.MaxBandwidth {
				t.Errorf("the job's status shows limits %+v, want those of %+v", st.Limits, in.Settings)
			}
			migratetest.CheckCopies(t, env.Store2, dstBucket, in.KeyMap(), c.objs)
			from, to := meter.steady(t, 3*time.Second, 8*time.Second)
			requests, bytes := meter.rates(from, to)
			t.Logf("steady %v: %.2f requests/s, %.0f bytes/s (%d objects, %d bytes)", to.Sub(from).Round(time.Millisecond), requests, bytes, n, totalBytes(c.objs))
			c.check(t, requests, bytes)
		})
	}
}

// checkRate fails unless rate, over the steady window, is within 5% over
// limit and at least 80% of it.
func checkRate(t *testing.T, unit string, rate, limit float64) {
	t.Helper()
	t.Logf("%.0f%% of the limit", 100*rate/limit)
	if rate > limit*1.05 {
		t.Errorf("the source served %.2f %s over the steady window, limit %.0f (+5%%: %.2f)", rate, unit, limit, limit*1.05)
	}
	if rate < limit*0.8 {
		t.Errorf("the source served %.2f %s over the steady window, %.0f%% of the limit %.0f: want at least 80%%", rate, unit, 100*rate/limit, limit)
	}
}

// sized is n objects of exactly size bytes each, different contents.
func sized(prefix string, n, size int) []migratetest.Object {
	out := make([]migratetest.Object, n)
	for i := range out {
		out[i] = migratetest.Object{Key: fmt.Sprintf("%s%04d", prefix, i), Data: bytes.Repeat([]byte{byte(i), byte(i >> 8), 'x', 'y'}, size/4)}
	}
	return out
}
