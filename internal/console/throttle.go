package console

import (
	"container/list"
	"math"
	"net/netip"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/edgeflow/edgeflow/internal/metrics"
)

// Throttle bounds failed bearer tokens and sign-ins by client address: a
// token bucket of Failures, refilled at Failures per Per. Zero fields take
// the defaults (10 a minute, 10 000 addresses).
type Throttle struct {
	Failures int
	Per      time.Duration
	// MaxAddrs bounds the table of addresses: past it, the address that
	// failed least recently is forgotten, so a crawler of many addresses
	// cannot grow it without bound.
	MaxAddrs int
	Now      func() time.Time // nil: time.Now
}

// Throttle defaults.
const (
	DefaultThrottleFailures = 10
	DefaultThrottlePer      = time.Minute
	DefaultThrottleAddrs    = 10_000
)

// failureLimiter is Throttle's table: only failures take from an
// address's bucket; an address that has not failed has no entry.
type failureLimiter struct {
	mu       sync.Mutex
	burst    float64
	interval time.Duration // for one failure to be forgiven
	max      int
	now      func() time.Time
	byAddr   map[netip.Addr]*list.Element // of *bucket
	order    *list.List                   // most recently failed first
}

type bucket struct {
	addr   netip.Addr
	tokens float64
	at     time.Time
}

func newFailureLimiter(t Throttle) *failureLimiter {
	if t.Failures <= 0 {
		t.Failures = DefaultThrottleFailures
	}
	if t.Per <= 0 {
		t.Per = DefaultThrottlePer
	}
	if t.MaxAddrs <= 0 {
		t.MaxAddrs = DefaultThrottleAddrs
	}
	if t.Now == nil {
		t.Now = time.Now
	}
	return &failureLimiter{burst: float64(t.Failures), interval: t.Per / time.Duration(t.Failures), max: t.MaxAddrs,
		now: t.Now, byAddr: map[netip.Addr]*list.Element{}, order: list.New()}
}

// throttleKey is the address a bucket is kept for: an IPv6 client by its
// /64, the least a host is given, so one host cannot step through its own
// addresses.
func throttleKey(a netip.Addr) netip.Addr {
	a = a.Unmap()
	if a.Is6() {
		p, _ := a.Prefix(64)
		return p.Addr()
	}
	return a
}

// refill brings b's tokens up to now.
func (l *failureLimiter) refill(b *bucket, now time.Time) {
	if elapsed := now.Sub(b.at); elapsed > 0 {
		b.tokens = math.Min(l.burst, b.tokens+float64(elapsed)/float64(l.interval))
	}
	b.at = now
}

// wait is how long addr must wait before its next attempt is heard (0:
// now). An address that has used up its failures waits for one to be
// forgiven.
func (l *failureLimiter) wait(addr netip.Addr) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	e, ok := l.byAddr[throttleKey(addr)]
	if !ok {
		return 0
	}
	b := e.Value.(*bucket)
	l.refill(b, l.now())
	if b.tokens >= 1 {
		return 0
	}
	return time.Duration((1 - b.tokens) * float64(l.interval))
}

// failed takes one failure from addr's bucket.
func (l *failureLimiter) failed(addr netip.Addr) {
	l.mu.Lock()
	defer l.mu.Unlock()
	key, now := throttleKey(addr), l.now()
	e, ok := l.byAddr[key]
	if !ok {
		e = l.order.PushFront(&bucket{addr: key, tokens: l.burst, at: now})
		l.byAddr[key] = e
		for l.order.Len() > l.max {
			oldest := l.order.Back()
			delete(l.byAddr, oldest.Value.(*bucket).addr)
			l.order.Remove(oldest)
		}
	}
	b := e.Value.(*bucket)
	l.refill(b, now)
	b.tokens = math.Max(0, b.tokens-1)
	l.order.MoveToFront(e)
}

// size is the number of addresses in the table.
func (l *failureLimiter) size() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.order.Len()
}

// Doors a failed attempt comes through, the label of the console's
// throttle metrics.
const (
	doorAPI    = "api"    // a bearer token on /api/v1
	doorSignIn = "signin" // the web console's sign-in form
	doorHook   = "hook"   // a GitHub webhook delivery's signature
)

// throttleMetrics are the console's (edgeflow_console_*), registered by the
// first New of a process, at zero.
type throttleMetrics struct {
	failures, throttled map[string]prometheus.Counter // by door
}

var (
	throttleMetricsOnce sync.Once
	throttleM           *throttleMetrics
)

func newThrottleMetrics() *throttleMetrics {
	throttleMetricsOnce.Do(func() {
		doors := [][]string{{doorAPI}, {doorSignIn}, {doorHook}}
		failures := metrics.NewCounterVec(prometheus.CounterOpts{Name: "edgeflow_console_auth_failures_total",
			Help: "Failed attempts to authenticate to the console: an unknown bearer token (door api), sign-in token (door signin) or a GitHub webhook delivery's bad signature (door hook)."},
			[]string{"door"}, doors...)
		throttled := metrics.NewCounterVec(prometheus.CounterOpts{Name: "edgeflow_console_auth_throttled_total",
			Help: "Requests refused with 429 because their client address had too many failed attempts, by door."},
			[]string{"door"}, doors...)
		throttleM = &throttleMetrics{failures: map[string]prometheus.Counter{}, throttled: map[string]prometheus.Counter{}}
		for _, d := range []string{doorAPI, doorSignIn, doorHook} {
			throttleM.failures[d] = failures.WithLabelValues(d)
			throttleM.throttled[d] = throttled.WithLabelValues(d)
		}
	})
	return throttleM
}
