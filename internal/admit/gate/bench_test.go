package gate

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/edgeflow/edgeflow/internal/admit"
)

// The gate against a plain httputil.ReverseProxy to the same origin, under
// the same load generator, in alternating runs. Each run interleaves short
// slices (gate, proxy, gate, proxy, …) so that the load other processes put
// on a shared machine hits both alike, and pools each side's slices: a
// loaded phase (closed loop, 4 clients per CPU: requests/s and latency
// under load) and a sequential phase (one client: the latency a request
// pays on an idle gate). Reported are the medians over the runs of the
// per-run ratios and differences.
const (
	benchRuns          = 5
	benchSlices        = 10  // alternations per run and phase
	benchLoadedReqs    = 600 // per slice
	benchSequentialReq = 150 // per slice
	benchClientsPerCPU = 4
)

// benchOrigin answers every path with 200 and a small page, as the demo
// origin does.
func benchOrigin(b *testing.B) *url.URL {
	page := []byte("<!doctype html><title>origin</title><p>" + strings.Repeat("hello, visitor. ", 24) + "</p>\n")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write(page)
	}))
	b.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL)
	return u
}

// benchGate is a gate with one room on every path, limits high enough that
// nobody is queued, on the given counters.
func benchGate(b *testing.B, origin *url.URL, counters Counters) *httptest.Server {
	gateID := admit.Gate{DataCenter: "ams", ID: "ams-bench"}
	reg := NewRegistry(gateID)
	room, err := admit.NewRoom(admit.Settings{Name: "bench-" + strings.ToLower(b.Name()[9:min(len(b.Name()), 40)]),
		TotalActiveUsers: admit.MaxLimit, NewUsersPerMinute: admit.MaxLimit}, 60, time.Now())
	if err != nil {
		b.Fatal(err)
	}
	if err := reg.Update(room.Snapshot, nil, time.Now()); err != nil {
		b.Fatal(err)
	}
	g, err := New(Config{Origin: origin, Gate: gateID, Keys: testRing(b, testKey(b, "bench")), Counters: counters,
		Registry: reg, Logger: quietLogger()})
	if err != nil {
		b.Fatal(err)
	}
	// A running gate's snapshot is never older than a few seconds.
	stop := make(chan struct{})
	go func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case now := <-t.C:
				r, _ := admit.NewRoom(room.Settings, 60, now)
				_ = reg.Update(r.Snapshot, nil, now)
			}
		}
	}()
	srv := httptest.NewServer(g)
	b.Cleanup(func() { close(stop); srv.Close() })
	return srv
}

func benchProxy(b *testing.B, origin *url.URL) *httptest.Server {
	rp := httputil.NewSingleHostReverseProxy(origin)
	rp.Transport = NewTransport(DefaultOriginTimeouts) // the gate's own client settings
	srv := httptest.NewServer(rp)
	b.Cleanup(srv.Close)
	return srv
}

func benchClient(clients int) *http.Client {
	return &http.Client{Transport: &http.Transport{MaxIdleConns: clients * 2, MaxIdleConnsPerHost: clients * 2, DisableCompression: true}}
}

// loadRun is one side of one phase of one run.
type loadRun struct {
	perSecond float64
	p50, p99  time.Duration
}

// samples pools the slices of one side of a phase.
type samples struct {
	lat     []time.Duration
	elapsed time.Duration
}

func (s samples) summary() loadRun {
	all := slices.Clone(s.lat)
	slices.Sort(all)
	return loadRun{perSecond: float64(len(all)) / s.elapsed.Seconds(), p50: all[len(all)/2], p99: all[len(all)*99/100]}
}

// load sends total requests from clients concurrent clients (closed loop)
// and measures each to its last byte, adding them to into. jar, if set,
// holds each client's cookie header (an admitted visitor's), kept renewed
// as the gate renews it, as a browser does; otherwise every request is a
// new visitor.
func load(b *testing.B, c *http.Client, base string, total, clients int, jar []string, into *samples) {
	var next atomic.Int64
	lat := make([][]time.Duration, clients)
	var wg sync.WaitGroup
	var failed atomic.Value
	start := time.Now()
	for w := range clients {
		wg.Go(func() {
			own := make([]time.Duration, 0, total/clients+1)
			hdr := ""
			if jar != nil {
				hdr = jar[w]
				defer func() { jar[w] = hdr }()
			}
			for next.Add(1) <= int64(total) {
				req, _ := http.NewRequest(http.MethodGet, base+"/page", nil)
				if hdr != "" {
					req.Header.Set("Cookie", hdr)
				}
				t0 := time.Now()
				resp, err := c.Do(req)
				if err != nil {
					failed.Store(err)
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				own = append(own, time.Since(t0))
				if hdr != "" {
					for _, sc := range resp.Header["Set-Cookie"] {
						if v, _, _ := strings.Cut(sc, ";"); strings.HasPrefix(v, CookieName+"=") {
							hdr = v
						}
					}
				}
				if resp.StatusCode != http.StatusOK {
					failed.Store(fmt.Errorf("status %d", resp.StatusCode))
					return
				}
			}
			lat[w] = own
		})
	}
	wg.Wait()
	into.elapsed += time.Since(start)
	if err, _ := failed.Load().(error); err != nil {
		b.Fatal(err)
	}
	into.lat = append(into.lat, slices.Concat(lat...)...)
}

// admittedCookies makes each client an admitted visitor of the gate.
func admittedCookies(b *testing.B, c *http.Client, base string, clients int) []string {
	out := make([]string, clients)
	for i := range out {
		resp, err := c.Get(base + "/")
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		for _, ck := range resp.Cookies() {
			if ck.Name == CookieName {
				out[i] = ck.Name + "=" + ck.Value
			}
		}
		if out[i] == "" {
			b.Fatalf("no admitted cookie (status %d)", resp.StatusCode)
		}
	}
	return out
}

// compare runs the alternating rounds and reports the medians.
func compare(b *testing.B, gate, proxy *httptest.Server, admitted bool) {
	clients := benchClientsPerCPU * runtime.GOMAXPROCS(0)
	gc, pc := benchClient(clients), benchClient(clients)
	var jar, seqJar []string
	if admitted {
		jar = admittedCookies(b, gc, gate.URL, clients)
		seqJar = admittedCookies(b, gc, gate.URL, 1)
	}
	// Warm both: connections, caches, the counters' first keys.
	var warm samples
	load(b, gc, gate.URL, 500, clients, jar, &warm)
	load(b, pc, proxy.URL, 500, clients, jar, &warm)

	var ratio, addedP50, addedP99, addedSeqP50, addedSeqP99 []float64
	var gateRPS, proxyRPS, gateP50, gateP99, proxyP50, proxyP99, gateSeqP99, proxySeqP99 []float64
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ResetTimer()
	for range b.N {
		for range benchRuns {
			var gl, pl, gsl, psl samples
			for range benchSlices {
				load(b, gc, gate.URL, benchLoadedReqs, clients, jar, &gl)
				load(b, pc, proxy.URL, benchLoadedReqs, clients, jar, &pl)
			}
			for range benchSlices {
				load(b, gc, gate.URL, benchSequentialReq, 1, seqJar, &gsl)
				load(b, pc, proxy.URL, benchSequentialReq, 1, seqJar, &psl)
			}
			g, p, gs, ps := gl.summary(), pl.summary(), gsl.summary(), psl.summary()
			ratio = append(ratio, g.perSecond/p.perSecond)
			addedP50 = append(addedP50, ms(g.p50-p.p50))
			addedP99 = append(addedP99, ms(g.p99-p.p99))
			addedSeqP50 = append(addedSeqP50, ms(gs.p50-ps.p50))
			addedSeqP99 = append(addedSeqP99, ms(gs.p99-ps.p99))
			gateRPS, proxyRPS = append(gateRPS, g.perSecond), append(proxyRPS, p.perSecond)
			gateP50, gateP99 = append(gateP50, ms(g.p50)), append(gateP99, ms(g.p99))
			proxyP50, proxyP99 = append(proxyP50, ms(p.p50)), append(proxyP99, ms(p.p99))
			gateSeqP99, proxySeqP99 = append(gateSeqP99, ms(gs.p99)), append(proxySeqP99, ms(ps.p99))
		}
	}
	b.StopTimer()
	med := func(v []float64) float64 {
		s := slices.Clone(v)
		slices.Sort(s)
		return s[len(s)/2]
	}
	b.ReportMetric(med(gateRPS), "gate_req/s")
	b.ReportMetric(med(proxyRPS), "proxy_req/s")
	b.ReportMetric(med(ratio), "gate/proxy")
	b.ReportMetric(med(gateP50), "gate_p50_ms")
	b.ReportMetric(med(gateP99), "gate_p99_ms")
	b.ReportMetric(med(proxyP50), "proxy_p50_ms")
	b.ReportMetric(med(proxyP99), "proxy_p99_ms")
	b.ReportMetric(med(addedP50), "added_p50_ms")
	b.ReportMetric(med(addedP99), "added_p99_ms")
	b.ReportMetric(med(addedSeqP50), "added_seq_p50_ms")
	b.ReportMetric(med(addedSeqP99), "added_seq_p99_ms")
	b.Logf("%d runs of %d×%d requests from %d clients, then %d×%d from one, gate and proxy alternating: gate %.0f req/s vs proxy %.0f (ratio %.3f); under load added p50 %.3f ms, p99 %.3f ms; one client added p50 %.3f ms, p99 %.3f ms (gate p99 %.3f, proxy %.3f)",
		len(ratio), benchSlices, benchLoadedReqs, clients, benchSlices, benchSequentialReq, med(gateRPS), med(proxyRPS), med(ratio),
		med(addedP50), med(addedP99), med(addedSeqP50), med(addedSeqP99), med(gateSeqP99), med(proxySeqP99))
}

// BenchmarkGateAdmittedVsProxy: visitors holding an admitted session's
// cookie (opened, checked, renewed every few seconds; no counter touched).
func BenchmarkGateAdmittedVsProxy(b *testing.B) {
	origin := benchOrigin(b)
	compare(b, benchGate(b, origin, MemoryCounters()), benchProxy(b, origin), true)
}

// BenchmarkGateNewVisitorsVsProxy: every request a new visitor, admitted
// on an in-process counter and given a sealed cookie.
func BenchmarkGateNewVisitorsVsProxy(b *testing.B) {
	origin := benchOrigin(b)
	compare(b, benchGate(b, origin, MemoryCounters()), benchProxy(b, origin), false)
}

// BenchmarkGateNewVisitorsRedisVsProxy: the same with the shared counters
// on a real Redis (one round trip per new visitor).
func BenchmarkGateNewVisitorsRedisVsProxy(b *testing.B) {
	if env == nil || env.Redis == nil {
		b.Skip("needs the test Redis (not started with -short)")
	}
	c, err := NewRedisClient(env.Redis.URL)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = c.Close() })
	rc := RedisCounter{Client: c}
	origin := benchOrigin(b)
	compare(b, benchGate(b, origin, mustCounters(b, &rc, &rc, StrategyCounters)), benchProxy(b, origin), false)
}

// BenchmarkOpenCookie is the admitted visitor's cost of the cookie alone.
func BenchmarkOpenCookie(b *testing.B) {
	c := Codec{Keys: testRing(b, testKey(b, "k1"))}
	now := time.Now()
	ck := admittedCookie("shop", now)
	ck.Expires = now.Add(time.Hour).UnixMilli()
	v, _ := c.Seal(ck)
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := c.Open(v, "shop", now); err != nil {
			b.Fatal(err)
		}
	}
}
