package onrequest

import (
	"testing"
	"time"
)

// fakeClock is a clock the test moves.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time      { return c.t }
func (c *fakeClock) add(d time.Duration) { c.t = c.t.Add(d) }
func newFakeClock() *fakeClock           { return &fakeClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)} }

func takeN(l *limiter, lib string, n int) int {
	taken := 0
	for range n {
		if ok, _ := l.take(lib); ok {
			taken++
		}
	}
	return taken
}

func TestLimiterPerLibrary(t *testing.T) {
	clock := newFakeClock()
	l := newLimiter(3, 100, clock.now)
	if got := takeN(l, "a", 10); got != 3 {
		t.Fatalf("a burst took %d starts of library a, want its 3 a minute", got)
	}
	ok, retry := l.take("a")
	if ok || retry <= 0 || retry > 20*time.Second {
		t.Fatalf("past the limit: ok=%v retryAfter=%v, want refused with about a third of a minute", ok, retry)
	}
	if got := takeN(l, "b", 1); got != 1 {
		t.Errorf("another library is held up by a's limit")
	}
	clock.add(retry)
	if ok, _ := l.take("a"); !ok {
		t.Errorf("no token after the Retry-After the limiter gave (%v)", retry)
	}
	clock.add(time.Hour)
	if got := takeN(l, "a", 10); got != 3 {
		t.Errorf("after an idle hour a burst took %d, want 3 (the bucket holds at most a minute's)", got)
	}
}

func TestLimiterTotal(t *testing.T) {
	clock := newFakeClock()
	l := newLimiter(10, 5, clock.now)
	taken := 0
	for _, lib := range []string{"a", "b", "c", "d", "e", "f", "g"} {
		taken += takeN(l, lib, 1)
	}
	if taken != 5 {
		t.Fatalf("%d starts across libraries, want the 5 a minute in all", taken)
	}
	ok, retry := l.take("h")
	if ok || retry <= 0 || retry > 12*time.Second {
		t.Fatalf("past the total: ok=%v retryAfter=%v, want refused for about a fifth of a minute", ok, retry)
	}
	// A start refused by the total leaves the library's own tokens alone.
	clock.add(time.Minute)
	if got := takeN(l, "h", 20); got != 5 {
		t.Errorf("h took %d after a minute, want 5 (the total's refill; h's own 10 untouched by the refusal)", got)
	}
}

func TestLimiterForgetsFullBuckets(t *testing.T) {
	clock := newFakeClock()
	l := newLimiter(1, 1<<30, clock.now)
	for i := range maxLibraryBuckets {
		l.take(string(rune('a'+i%26)) + time.Duration(i).String())
	}
	clock.add(time.Minute)
	l.take("one more")
	if n := len(l.libraries); n != 1 {
		t.Errorf("%d per-library buckets kept, want only the newest: the refilled ones equal new ones", n)
	}
}
