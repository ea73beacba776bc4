package migrate

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Limits protect a production source: at most MaxBandwidth bytes and
// MaxRequests requests a second read from it (zero: no limit), across
// every worker running the job. Shares is how many users of the source may
// run at once (a job's pages in flight, its listing among them); each gets
// an equal part, so together they never exceed the limit, wherever they run.
type Limits struct {
	MaxBandwidth int64 `json:"maxBandwidth,omitempty"`
	MaxRequests  int64 `json:"maxRequests,omitempty"`
	Shares       int   `json:"shares,omitempty"`
}

// IsZero: no limit.
func (l Limits) IsZero() bool { return l.MaxBandwidth <= 0 && l.MaxRequests <= 0 }

// ShareWithin is one user's share of a job's limits (Share), lowered to
// its share of its account's budget: the budget divided among the jobs the
// account runs at once, each divided as the job is. Zero is no limit.
func ShareWithin(job, account Limits, jobs int) (bytesPerSecond, requestsPerSecond float64) {
	bps, rps := job.Share()
	account.Shares = max(jobs, 1) * max(job.Shares, 1)
	abps, arps := account.Share()
	lower := func(a, b float64) float64 {
		switch {
		case a <= 0:
			return b
		case b <= 0:
			return a
		}
		return min(a, b)
	}
	return lower(bps, abps), lower(rps, arps)
}

// Share is one user's part of the limits, per second; zero is no limit.
func (l Limits) Share() (bytesPerSecond, requestsPerSecond float64) {
	n := float64(max(l.Shares, 1))
	if l.MaxBandwidth > 0 {
		bytesPerSecond = float64(l.MaxBandwidth) / n
	}
	if l.MaxRequests > 0 {
		requestsPerSecond = float64(l.MaxRequests) / n
	}
	return bytesPerSecond, requestsPerSecond
}

// String is the limits for people: "50 MiB/s, 100 requests/s".
func (l Limits) String() string {
	var parts []string
	if l.MaxBandwidth > 0 {
		parts = append(parts, HumanBytes(float64(l.MaxBandwidth))+"/s")
	}
	if l.MaxRequests > 0 {
		parts = append(parts, fmt.Sprintf("%d requests/s", l.MaxRequests))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// ParseBandwidth reads --max-bandwidth: a size a second, "50MiB", "100M",
// "1.5G/s" or bytes ("1048576"), binary units as ParseSize.
func ParseBandwidth(s string) (int64, error) {
	t := strings.TrimSpace(s)
	t = strings.TrimSuffix(strings.TrimSuffix(t, "/s"), "ps")
	if strings.HasPrefix(t, "-") {
		return 0, fmt.Errorf("bandwidth %q: not negative (0 or absent: no limit)", s)
	}
	n, err := ParseSize(t)
	if err != nil {
		return 0, fmt.Errorf("bandwidth %q: want bytes a second with an optional unit (50MiB, 100M, 1.5G/s; binary units)", s)
	}
	return n, nil
}

// ParseRequests reads --max-requests: a whole number of requests a second.
func ParseRequests(s string) (int64, error) {
	n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(s), "/s"), 10, 64)
	switch {
	case err != nil:
		return 0, fmt.Errorf("requests %q: want a whole number of requests a second", s)
	case n < 0:
		return 0, fmt.Errorf("requests %q: not negative (0 or absent: no limit)", s)
	}
	return n, nil
}

// Bucket paces takes to a rate: each take of n units books the next n
// units and waits until the rate has released up to where its booking
// starts (GCRA without burst tolerance), so what is taken over any window
// is at most rate × window plus the last take. It starts empty and idle
// time earns no credit: a page that starts or pauses never bursts above
// its share. The rate may change while takers wait (SetRate): what is
// booked and not yet released is then released at the new rate, so a
// raised share is used at once, not after the backlog booked at the old one.
type Bucket struct {
	mu        sync.Mutex
	nsPerUnit float64   // nanoseconds a unit costs
	since     time.Time // when the rate last changed
	released  float64   // units released by since
	booked    float64   // units booked: where the next take starts
	changed   chan struct{}
	now       func() time.Time
	// sleepFor waits d, or less when woken (the rate changed).
	sleepFor func(ctx context.Context, d time.Duration, woken <-chan struct{}) error
}

// NewBucket paces to rate units a second (rate > 0).
func NewBucket(rate float64) *Bucket {
	b := &Bucket{nsPerUnit: 1e9 / rate, now: time.Now, sleepFor: sleepCtx, changed: make(chan struct{})}
	b.since = b.now()
	return b
}

func sleepCtx(ctx context.Context, d time.Duration, woken <-chan struct{}) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-woken:
	case <-ctx.Done():
	}
	return ctx.Err()
}

// SetRate paces to rate units a second from now on (rate > 0), bookings
// already made included.
func (b *Bucket) SetRate(rate float64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if ns := 1e9 / rate; ns != b.nsPerUnit {
		now := b.now()
		b.released, b.since, b.nsPerUnit = b.releasedAt(now), now, ns
		close(b.changed)
		b.changed = make(chan struct{})
	}
}

// Rate is the units a second the bucket paces to now.
func (b *Bucket) Rate() float64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return 1e9 / b.nsPerUnit
}

func (b *Bucket) releasedAt(t time.Time) float64 {
	return b.released + float64(t.Sub(b.since))/b.nsPerUnit
}

// timeOf is when the units up to pos are released (b.mu held).
func (b *Bucket) timeOf(pos float64) time.Time {
	ns := math.Round((pos - b.released) * b.nsPerUnit)
	return b.since.Add(time.Duration(math.Min(ns, float64(math.MaxInt64/4))))
}

// reserve books n units and says where the booking starts.
func (b *Bucket) reserve(n int64) float64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.booked = max(b.booked, b.releasedAt(b.now())) // idle time earns no credit
	at := b.booked
	b.booked += float64(n)
	return at
}

// Take waits until n units may be used. A cancelled wait keeps its booking:
// erring low is the safe side.
func (b *Bucket) Take(ctx context.Context, n int64) error {
	return b.waitFor(ctx, b.reserve(n))
}

// Charge books n units already used (what a response turned out to hold):
// the next take waits for them.
func (b *Bucket) Charge(n int64) { b.reserve(n) }

// waitFor waits until the units up to pos are released, at whatever rate
// holds meanwhile.
func (b *Bucket) waitFor(ctx context.Context, pos float64) error {
	for {
		b.mu.Lock()
		at, woken := b.timeOf(pos), b.changed
		b.mu.Unlock()
		d := at.Sub(b.now())
		if d <= 0 {
			return ctx.Err()
		}
		if err := b.sleepFor(ctx, d, woken); err != nil {
			return err
		}
	}
}

// Limiter paces one user's requests and bytes read from the source.
type Limiter struct {
	requests, bytes *Bucket // nil: that one is not limited
}

// NewLimiter paces to bytes and requests a second (zero: that one is not
// limited); nil without limits.
func NewLimiter(bps, rps float64) *Limiter {
	if bps <= 0 && rps <= 0 {
		return nil
	}
	lim := &Limiter{}
	if bps > 0 {
		lim.bytes = NewBucket(bps)
	}
	if rps > 0 {
		lim.requests = NewBucket(rps)
	}
	return lim
}

// Wait books one request reading about n bytes (0: not known yet) and
// waits until both may go.
func (l *Limiter) Wait(ctx context.Context, n int64) error {
	return l.WaitRequests(ctx, 1, n)
}

// WaitRequests books requests requests reading about n bytes together
// and waits until all may go.
func (l *Limiter) WaitRequests(ctx context.Context, requests, n int64) error {
	if l == nil {
		return ctx.Err()
	}
	var request, bytes float64
	if l.requests != nil {
		request = l.requests.reserve(requests)
	}
	if l.bytes != nil && n > 0 {
		bytes = l.bytes.reserve(n)
	}
	wait := func() error {
		if l.requests != nil {
			if err := l.requests.waitFor(ctx, request); err != nil {
				return err
			}
		}
		if l.bytes != nil && n > 0 {
			return l.bytes.waitFor(ctx, bytes)
		}
		return ctx.Err()
	}
	if aside, ok := ctx.Value(asideKey{}).(*slotAside); ok && !l.due(request, bytes, n) {
		return aside.while(wait)
	}
	return wait()
}

// due says whether a booking may go now.
func (l *Limiter) due(request, bytes float64, n int64) bool {
	return (l.requests == nil || l.requests.due(request)) && (l.bytes == nil || n <= 0 || l.bytes.due(bytes))
}

func (b *Bucket) due(pos float64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return !b.timeOf(pos).After(b.now())
}

type asideKey struct{}

// slotAside frees a transfer's slot while it waits for its turn at a
// limited source, so the transfers of other pages on the worker (which
// share its slots, the oldest page's first) run meanwhile instead of
// queueing behind a page that is waiting for its share. Several waits of
// one transfer (the parts of a large object) free the slot once.
type slotAside struct {
	mu         sync.Mutex
	aside      int
	free, take func()
}

func (s *slotAside) while(wait func() error) error {
	s.mu.Lock()
	if s.aside++; s.aside == 1 {
		s.free()
	}
	s.mu.Unlock()
	err := wait()
	s.mu.Lock()
	if s.aside--; s.aside == 0 {
		s.take()
	}
	s.mu.Unlock()
	return err
}

// StepAsideWhilePaced is ctx for a transfer holding a slot: a wait for its
// turn at a limited source calls free before and take after (take returns
// holding a slot again, even if ctx ended).
func StepAsideWhilePaced(ctx context.Context, free, take func()) context.Context {
	return context.WithValue(ctx, asideKey{}, &slotAside{free: free, take: take})
}

// SetRates paces to bytes and requests a second from now on, waits under
// way included; a limit the limiter does not have, or a rate of zero,
// stays as it is.
func (l *Limiter) SetRates(bps, rps float64) {
	if l == nil {
		return
	}
	if l.bytes != nil && bps > 0 {
		l.bytes.SetRate(bps)
	}
	if l.requests != nil && rps > 0 {
		l.requests.SetRate(rps)
	}
}

// Charge books n bytes already read (or about to be, past what Wait booked).
func (l *Limiter) Charge(n int64) {
	if l != nil && l.bytes != nil && n > 0 {
		l.bytes.Charge(n)
	}
}
