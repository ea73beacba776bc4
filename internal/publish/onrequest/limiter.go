package onrequest

import (
	"sync"
	"time"
)

// limiter bounds the publishes requests start: at most perLibrary a minute
// for any one library and total a minute in all, as token buckets that
// refill evenly (a burst of a whole minute's allowance, then one every
// minute/N). A start takes a token from both buckets or from neither.
type limiter struct {
	mu         sync.Mutex
	perLibrary int
	all        bucket
	libraries  map[string]*bucket
	now        func() time.Time
}

// bucket is a token bucket of capacity n refilling n a minute.
type bucket struct {
	n      int
	tokens float64
	at     time.Time // when tokens was last brought up to date
}

// maxLibraryBuckets is how many per-library buckets are kept before the
// full ones (which a fresh bucket would equal) are dropped.
const maxLibraryBuckets = 4096

func newLimiter(perLibrary, total int, now func() time.Time) *limiter {
	return &limiter{perLibrary: perLibrary, all: newBucket(total, now()), libraries: map[string]*bucket{}, now: now}
}

func newBucket(n int, now time.Time) bucket { return bucket{n: n, tokens: float64(n), at: now} }

// refill brings the bucket's tokens up to now.
func (b *bucket) refill(now time.Time) {
	if elapsed := now.Sub(b.at); elapsed > 0 {
		b.tokens = min(float64(b.n), b.tokens+elapsed.Minutes()*float64(b.n))
		b.at = now
	}
}

// wait is how long until the bucket holds a whole token (0: it does).
func (b *bucket) wait() time.Duration {
	if b.tokens >= 1 {
		return 0
	}
	if b.n <= 0 {
		return time.Minute
	}
	return time.Duration((1 - b.tokens) / float64(b.n) * float64(time.Minute))
}

// take reports whether a start for library may go ahead, taking a token
// from its bucket and from the global one; when not, retryAfter is when it
// may (the later of the two buckets' waits).
func (l *limiter) take(library string) (ok bool, retryAfter time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	lib := l.libraries[library]
	if lib == nil {
		if len(l.libraries) >= maxLibraryBuckets {
			l.dropFull(now)
		}
		b := newBucket(l.perLibrary, now)
		lib = &b
		l.libraries[library] = lib
	}
	lib.refill(now)
	l.all.refill(now)
	if lib.tokens < 1 || l.all.tokens < 1 {
		return false, max(lib.wait(), l.all.wait())
	}
	lib.tokens--
	l.all.tokens--
	return true, 0
}

// dropFull forgets the per-library buckets that have refilled: a new one
// would be the same.
func (l *limiter) dropFull(now time.Time) {
	for name, b := range l.libraries {
		if b.refill(now); b.tokens >= float64(b.n) {
			delete(l.libraries, name)
		}
	}
}
