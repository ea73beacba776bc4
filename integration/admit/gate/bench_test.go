package gate

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	engine "github.com/edgeflow/edgeflow/internal/admit"
	"github.com/edgeflow/edgeflow/internal/admit/gate"
	"github.com/edgeflow/edgeflow/internal/keyring"
	"github.com/edgeflow/edgeflow/internal/testenv"
	"github.com/edgeflow/edgeflow/internal/testenv/loadtest"
)

// BenchmarkGateOutOfProcess measures the gate as a deployment sees it: the
// gate (bin/gate, built here) as its own process, a plain
// httputil.ReverseProxy process and nginx (one worker), all three in
// front of the same origin (nginx serving a 2 KiB page; a Go static
// server when nginx is missing), driven by one load generator process
// (loadtest's: keep-alive, benchWorkers closed-loop workers, a fixed
// duration a round). Rounds alternate between them in a rotating order,
// benchRounds each, so that the load other processes put on a shared
// machine hits all alike; reported are the medians of req/s and p99.
//
// The gate's cases: admitted visitors with a fresh cookie (the browser
// keeps the newest), with a stale one (older than the renewal interval,
// never replaced, so every request renews it), new visitors on in-process
// and on Redis counters (every request admits one), and queued visitors
// (every request a new visitor shown the waiting room). gate/proxy,
// gate/nginx and added_p99_ms are the fresh cookie's; the other cases'
// carry their name as a prefix.
func BenchmarkGateOutOfProcess(b *testing.B) {
	if env == nil {
		b.Skip("needs the dev server")
	}
	dir := b.TempDir()
	loadgen, err := loadtest.BuildLoadgen(dir)
	if err != nil {
		b.Fatal(err)
	}
	plain, err := testenv.BuildCommand(dir, "./integration/admit/gate/testdata/plainproxy")
	if err != nil {
		b.Fatal(err)
	}
	page := benchPage()
	pagePath := filepath.Join(dir, "page.html")
	if err := os.WriteFile(pagePath, page, 0o644); err != nil {
		b.Fatal(err)
	}

	var origin string
	targets := []*benchTarget{}
	if bin := loadtest.NginxBinary(); bin == "" {
		b.Log("nginx is not installed (`make bench` installs Debian's): no nginx rows; the origin is a Go static server")
		origin = startPlain(b, plain, "-page", pagePath)
	} else {
		ngDir, err := os.MkdirTemp("", "gate-bench-nginx-")
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { os.RemoveAll(ngDir) })
		ng, err := startNginx(b, bin, ngDir, page)
		if err != nil {
			b.Fatal(err)
		}
		origin = ng.Origin
		targets = append(targets, &benchTarget{name: "nginx", url: ng.Proxy + "/open/page", status: http.StatusOK})
	}
	proxy := startPlain(b, plain, "-origin", origin)
	targets = append(targets, &benchTarget{name: "proxy", url: proxy + "/open/page", status: http.StatusOK})

	// Two rooms: one nobody waits in (every path but /queue/), one that
	// queues everyone (/queue/), with its own status code to tell its page
	// from the origin's.
	suffix := time.Now().Format("150405")
	openRoom := "bench-open-" + suffix
	createRoom(b, engine.Settings{Name: openRoom, TotalActiveUsers: engine.MaxLimit, NewUsersPerMinute: engine.MaxLimit}, 0)
	createRoom(b, engine.Settings{Name: "bench-queue-" + suffix, Path: "/queue/", TotalActiveUsers: engine.MaxLimit,
		NewUsersPerMinute: engine.MaxLimit, QueueAll: true, QueueingStatusCode: http.StatusAccepted}, 0)
	production := []string{"--snapshot-every", "2s", "--report-every", "2s", "--discover-every", "3s"}
	mem := startGate(b, "ams", "bench-mem", origin, production...)
	shared := startGate(b, "ams", "bench-redis", origin, append(production, "--redis-url", env.Redis.URL)...)
	for _, g := range []*gateProcess{mem, shared} {
		eventually(b, time.Minute, "gate "+g.id+" knows both rooms", func() (bool, string) {
			n := 0
			for _, r := range g.status(b).Rooms {
				if strings.HasSuffix(r.Room, "-"+suffix) {
					n++
				}
			}
			return n == 2, fmt.Sprintf("%d of 2 rooms", n)
		})
	}

	keys, err := keyring.Parse(cookieKeys)
	if err != nil {
		b.Fatal(err)
	}
	fresh := &benchTarget{name: "gate", url: mem.URL + "/open/page", status: http.StatusOK, window: freshWindow,
		cookies: func(now time.Time) []string { return admittedCookies(b, mem.URL, openRoom, nil, now) }}
	stale := &benchTarget{name: "stale-gate", url: mem.URL + "/open/page", status: http.StatusOK, window: staleWindow,
		cookies: func(now time.Time) []string {
			return admittedCookies(b, mem.URL, openRoom, func(c *gate.Cookie) string {
				// Checked in staleBy ago, within the minute: every request
				// renews it, and the browser never takes the new one.
				c.LastCheckInTime = now.Add(-staleBy).UnixMilli()
				c.AcceptedAt = min(c.AcceptedAt, c.LastCheckInTime)
				v, err := (gate.Codec{Keys: keys}).Seal(c)
				if err != nil {
					b.Fatal(err)
				}
				return v
			}, now)
		}}
	targets = append(targets, fresh, stale,
		&benchTarget{name: "new-gate", url: mem.URL + "/open/page", status: http.StatusOK},
		&benchTarget{name: "new-redis-gate", url: shared.URL + "/open/page", status: http.StatusOK},
		&benchTarget{name: "queued-gate", url: mem.URL + "/queue/page", status: http.StatusAccepted})

	for b.Loop() {
		for _, t := range targets {
			t.runs = nil
		}
		for round := range benchRounds {
			for i := range targets {
				t := targets[(i+round)%len(targets)]
				t.run(b, loadgen, dir)
			}
		}
	}

	proxyRuns := byName(targets, "proxy")
	nginxRuns := byName(targets, "nginx")
	report := func(t *benchTarget, prefix string) {
		b.ReportMetric(t.median(loadtest.PerSecond)/proxyRuns.median(loadtest.PerSecond), prefix+"gate/proxy")
		b.ReportMetric(t.median(loadtest.P99)-proxyRuns.median(loadtest.P99), prefix+"added_p99_ms")
		if nginxRuns != nil {
			b.ReportMetric(t.median(loadtest.PerSecond)/nginxRuns.median(loadtest.PerSecond), prefix+"gate/nginx")
		}
	}
	for _, t := range targets {
		b.ReportMetric(t.median(loadtest.PerSecond), t.name+"-req/s")
		b.ReportMetric(t.median(loadtest.P99), t.name+"-p99_ms")
		b.Logf("%-15s req/s %v p99 ms %v", t.name, loadtest.Values(t.runs, loadtest.PerSecond), loadtest.Values(t.runs, loadtest.P99))
		if prefix, ok := strings.CutSuffix(t.name, "gate"); ok {
			report(t, prefix)
		}
	}
}

const (
	benchWorkers  = 16
	benchRounds   = 5
	benchDuration = 2 * time.Second
	benchWarmup   = 300 * time.Millisecond
	// staleBy is how long ago a stale cookie checked in: past the renewal
	// interval (a sixth of the room's minute, 10 s).
	staleBy = 12 * time.Second
)

// benchPage is the origin's page: 2 KiB of HTML.
func benchPage() []byte {
	head := "<!doctype html><title>origin</title><p>"
	body := strings.Repeat("hello, visitor. ", 2048/16)
	return []byte(head + body[:2048-len(head)-5] + "</p>\n")
}

// benchTarget is one row: what the load generator requests, and how.
type benchTarget struct {
	name   string
	url    string
	status int // every answer's
	// cookies, if set, are the workers' Cookie headers for a round
	// starting at now.
	cookies func(now time.Time) []string
	// window, if set, says whether a round may start at now (else the
	// round waits until it may).
	window func(now time.Time) bool
	runs   []loadtest.Result
}

func (t *benchTarget) median(f func(loadtest.Result) float64) float64 {
	return loadtest.Median(t.runs, f)
}

func byName(ts []*benchTarget, name string) *benchTarget {
	for _, t := range ts {
		if t.name == name {
			return t
		}
	}
	return nil
}

// run is one round of one target.
func (t *benchTarget) run(b *testing.B, loadgen, dir string) {
	if t.window != nil {
		for !t.window(time.Now()) {
			time.Sleep(100 * time.Millisecond)
		}
	}
	load := loadtest.Load{URLs: []string{t.url}, Workers: benchWorkers, Duration: benchDuration, Warmup: benchWarmup}
	if t.cookies != nil {
		load.Cookies = t.cookies(time.Now())
	}
	r, err := loadtest.Run(loadgen, dir, t.name, load)
	if err != nil {
		b.Fatal(err)
	}
	if r.Errors > 0 || r.Requests == 0 || r.Statuses[t.status] != r.Requests {
		b.Fatalf("%s: %d requests, %d errors (%s), statuses %v, want every one %d", t.name, r.Requests, r.Errors, r.FirstError, r.Statuses, t.status)
	}
	t.runs = append(t.runs, r)
}

// roundSpan is how long a round takes, with a margin.
const roundSpan = benchWarmup + benchDuration + time.Second

// freshWindow keeps a fresh cookie's round within one minute of the room:
// at the next minute its cookie would be renewed on every request.
func freshWindow(now time.Time) bool {
	return now.Truncate(time.Minute).Add(time.Minute).Sub(now) > roundSpan
}

// staleWindow starts a stale cookie's round late enough in the minute that
// staleBy ago is still in it: the session's renewal, not its move into a
// new minute (counted once per visitor), is what it measures.
func staleWindow(now time.Time) bool {
	return now.Sub(now.Truncate(time.Minute)) > staleBy+time.Second && freshWindow(now)
}

// admittedCookies are benchWorkers admitted visitors' Cookie headers, each
// a visitor of its own, got from the gate just now; reseal, if set, changes
// each cookie (of room) and seals it again.
func admittedCookies(b *testing.B, gateURL, room string, reseal func(*gate.Cookie) string, now time.Time) []string {
	keys, err := keyring.Parse(cookieKeys)
	if err != nil {
		b.Fatal(err)
	}
	var out []string
	for range benchWorkers {
		resp, err := http.Get(gateURL + "/open/page")
		if err != nil {
			b.Fatal(err)
		}
		resp.Body.Close()
		var value string
		for _, c := range resp.Cookies() {
			if c.Name == gate.CookieName {
				value = c.Value
			}
		}
		if value == "" {
			b.Fatalf("the gate set no %s cookie (status %d)", gate.CookieName, resp.StatusCode)
		}
		if reseal != nil {
			c, _, err := (gate.Codec{Keys: keys}).Open(value, room, now)
			if err != nil {
				b.Fatal(err)
			}
			value = reseal(c)
		}
		out = append(out, gate.CookieName+"="+value)
	}
	return out
}
