package migrate

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"
)

// sleepClock is a bucket's clock: a sleep moves it on, so a test sees every
// take's turn without waiting.
type sleepClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *sleepClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }

func (c *sleepClock) sleep(_ context.Context, d time.Duration, _ ...<-chan struct{}) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	return nil
}

func fakeBucket(rate float64, c *sleepClock) *Bucket {
	b := NewBucket(rate)
	b.now, b.since = c.Now, c.Now()
	b.sleepFor = func(ctx context.Context, d time.Duration, _ <-chan struct{}) error {
		// Sleeps of concurrent takers would each move the clock: the
		// tests take one at a time, so the clock is each take's turn.
		return c.sleep(ctx, d)
	}
	return b
}

// A bucket paces takes to its rate from the first one: no burst at the
// start, none after idle time, and a large take (an object's bytes) makes
// the next wait for it.
func TestBucketPacesToItsRateWithoutBursts(t *testing.T) {
	c := &sleepClock{now: time.Unix(1000, 0)}
	b := fakeBucket(10, c) // 10 a second
	start := c.Now()
	for range 100 {
		if err := b.Take(context.Background(), 1); err != nil {
			t.Fatal(err)
		}
	}
	// The 100th take went at 9.9 s: 100 in [0, 9.9 s], never more than
	// rate × elapsed + 1.
	if got := c.Now().Sub(start); got != 9900*time.Millisecond {
		t.Fatalf("100 takes at 10/s took %v, want 9.9s", got)
	}
	// Idle for a minute earns nothing: the next two go 0.1 s apart.
	c.sleep(context.Background(), time.Minute)
	idle := c.Now()
	_ = b.Take(context.Background(), 1)
	_ = b.Take(context.Background(), 1)
	if got := c.Now().Sub(idle); got != 100*time.Millisecond {
		t.Fatalf("two takes after idle: %v, want 100ms (no credit for idle time)", got)
	}
	// A take of 50 (5 s of rate) goes at once, and the next waits 5 s.
	_ = b.Take(context.Background(), 50)
	at := c.Now()
	_ = b.Take(context.Background(), 1)
	if got := c.Now().Sub(at); got != 5*time.Second {
		t.Fatalf("after a take of 50 at 10/s, the next waited %v, want 5s", got)
	}
	// A charge (bytes a response held) delays the next take too.
	b.Charge(20)
	at = c.Now()
	_ = b.Take(context.Background(), 1)
	if got := c.Now().Sub(at); got != 2100*time.Millisecond {
		t.Fatalf("after a charge of 20, the next waited %v, want 2.1s", got)
	}
}

// Concurrent takers each book their own turn: with real time and many
// goroutines, what went in any window is bounded by the rate.
func TestBucketBooksTurnsForConcurrentTakers(t *testing.T) {
	c := &sleepClock{now: time.Unix(0, 0)}
	b := NewBucket(100)
	b.now, b.since = c.Now, c.Now()
	var mu sync.Mutex
	var turns []float64
	b.sleepFor = func(context.Context, time.Duration, <-chan struct{}) error { return nil }
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() {
			at := b.reserve(1)
			mu.Lock()
			turns = append(turns, at)
			mu.Unlock()
		})
	}
	wg.Wait()
	seen := map[float64]bool{}
	for _, pos := range turns {
		if seen[pos] {
			t.Fatalf("two takers got the turn %v", pos)
		}
		seen[pos] = true
		if at := b.timeOf(pos); at.Sub(time.Unix(0, 0)) >= 500*time.Millisecond {
			t.Fatalf("turn %v: 50 takes at 100/s all go within 0.5 s", at)
		}
	}
}

// A job's limit is divided among the users that may run at once (its pages
// in flight, the listing among them), so their sum is the limit; a cap
// (the account's) lowers either limit, and zero means none.
func TestLimitsDivideAmongShares(t *testing.T) {
	l := Limits{MaxBandwidth: 10 << 20, MaxRequests: 5, Shares: 4}
	bps, rps := l.Share()
	if bps*4 != 10<<20 || rps != 1.25 {
		t.Fatalf("share of %+v: %v B/s, %v req/s; want a quarter each", l, bps, rps)
	}
	if bps, rps := (Limits{MaxRequests: 8}).Share(); bps != 0 || rps != 8 {
		t.Fatalf("no shares given: %v, %v; want the whole request limit and no byte limit", bps, rps)
	}
	if NewLimiter(Limits{Shares: 4}.Share()) != nil {
		t.Fatal("no limits: want no limiter")
	}
	// An account's budget of 30 MiB/s over 3 jobs at once, each of 4
	// shares: 2.5 MiB/s a share, below the job's own 10/4; the job's 5
	// requests stay as they are where the account sets none.
	bps, rps = ShareWithin(l, Limits{MaxBandwidth: 30 << 20}, 3)
	if bps != 2.5*(1<<20) || rps != 1.25 {
		t.Fatalf("within the account: %v B/s, %v req/s; want 2.5 MiB/s and 1.25", bps, rps)
	}
	// A job without limits takes the account's share alone.
	if bps, rps := ShareWithin(Limits{Shares: 2}, Limits{MaxRequests: 12}, 3); bps != 0 || rps != 2 {
		t.Fatalf("unlimited job in a limited account: %v, %v; want no byte limit and 2 req/s", bps, rps)
	}
}

func TestParseLimits(t *testing.T) {
	for in, want := range map[string]int64{"50MiB": 50 << 20, "100M": 100 << 20, "1.5G/s": 3 << 29, "1048576": 1 << 20, "0": 0, "10KiBps": 10 << 10} {
		if got, err := ParseBandwidth(in); err != nil || got != want {
			t.Errorf("ParseBandwidth(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"10XB", "-5M", "fast", ""} {
		if _, err := ParseBandwidth(bad); err == nil || !strings.Contains(err.Error(), "bandwidth") {
			t.Errorf("ParseBandwidth(%q): %v, want an error naming the bandwidth", bad, err)
		}
	}
	if n, err := ParseRequests("200"); err != nil || n != 200 {
		t.Errorf("ParseRequests(200) = %d, %v", n, err)
	}
	for _, bad := range []string{"-1", "1.5", "lots"} {
		if _, err := ParseRequests(bad); err == nil {
			t.Errorf("ParseRequests(%q): no error", bad)
		}
	}
}

// A rate changed while takers wait applies to what they booked: a share
// raised when a page's users ended is used at once, not after the backlog
// booked at the old rate; one lowered slows what is booked.
func TestBucketRateChangeReachesBookedTakes(t *testing.T) {
	c := &sleepClock{now: time.Unix(1000, 0)}
	b := fakeBucket(10, c)
	var positions []float64
	for range 20 { // 20 concurrent takers at 10/s: the last one's turn is at 1.9 s
		positions = append(positions, b.reserve(1))
	}
	b.SetRate(20)
	if got := b.timeOf(positions[19]).Sub(c.Now()); got != 950*time.Millisecond {
		t.Fatalf("at 20/s the 20th booked take goes after %v, want 950ms", got)
	}
	c.sleep(context.Background(), 500*time.Millisecond) // 10 released
	b.SetRate(5)
	if got := b.timeOf(positions[19]).Sub(c.Now()); got != 1800*time.Millisecond {
		t.Fatalf("lowered to 5/s with 9 takes left, the last goes after %v, want 1.8s", got)
	}
	// A taker asleep when the rate changes is woken and waits the rest at
	// the new rate.
	woken := 0
	b.sleepFor = func(ctx context.Context, d time.Duration, wake <-chan struct{}) error {
		if woken++; woken == 1 {
			b.SetRate(50)
			<-wake
			return nil
		}
		return c.sleep(ctx, d)
	}
	start := c.Now()
	if err := b.waitFor(context.Background(), positions[19]); err != nil {
		t.Fatal(err)
	}
	if got := c.Now().Sub(start); woken != 2 || got != 180*time.Millisecond {
		t.Fatalf("woken %d times, waited %v; want woken by the change and 180ms at 50/s", woken, got)
	}
}

// A job's limits are divided by the pages in flight while it may start
// more (a page started meanwhile draws before the others learn of it), and
// by the pages still running once it cannot.
func TestSourceUsers(t *testing.T) {
	for _, c := range []struct {
		inFlight, running int
		more              bool
		want              int
	}{
		{4, 4, true, 4}, {4, 1, true, 4}, {4, 0, true, 4}, // listing: the static share
		{4, 3, false, 3}, {4, 1, false, 1}, {4, 0, false, 1}, // only ending now
		{4, 6, false, 4}, // never below the static share
		{0, 2, true, 1},
	} {
		if got := SourceUsers(c.inFlight, c.running, c.more); got != c.want {
			t.Errorf("SourceUsers(%d in flight, %d running, may start more %t) = %d, want %d", c.inFlight, c.running, c.more, got, c.want)
		}
	}
	if l := (Limits{MaxRequests: 30, Shares: 4}).WithShares(2); l.Shares != 2 {
		t.Fatalf("WithShares(2): %+v", l)
	}
}

// A transfer waiting for its turn at a limited source frees its slot
// meanwhile (other pages' transfers use it) and holds one again after; one
// that may go at once keeps its slot.
func TestLimiterStepsAsideWhileWaiting(t *testing.T) {
	c := &sleepClock{now: time.Unix(1000, 0)}
	lim := &Limiter{requests: fakeBucket(10, c)}
	var events []string
	ctx := StepAsideWhilePaced(context.Background(), func() { events = append(events, "free") }, func() { events = append(events, "take") })
	_ = lim.Wait(ctx, 0) // the first goes at once
	if len(events) != 0 {
		t.Fatalf("a request due at once: %v, want the slot kept", events)
	}
	_ = lim.Wait(ctx, 0) // waits 100ms
	if strings.Join(events, ",") != "free,take" {
		t.Fatalf("a request that waited: %v, want free then take", events)
	}
}
