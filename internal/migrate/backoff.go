package migrate

import (
	"math/rand/v2"
	"time"
)

// Backoff is exponential backoff with jitter: attempt n (from 1) waits
// between half and all of Initial·2^(n-1), capped at Max. The jitter spreads
// the retries of many transfers that failed together, so they do not hit a
// recovering store at the same instant.
type Backoff struct {
	Initial time.Duration
	Max     time.Duration
}

// DefaultBackoff is what transfers use between attempts of one object.
var DefaultBackoff = Backoff{Initial: 200 * time.Millisecond, Max: 20 * time.Second}

// Delay is the wait before retry number attempt (1 for the first retry).
// jitter is a number in [0, 1); nil uses math/rand.
func (b Backoff) Delay(attempt int, jitter func() float64) time.Duration {
	if attempt < 1 {
		attempt = 1
	}
	d := b.Initial
	for i := 1; i < attempt && d < b.Max; i++ {
		d *= 2
	}
	d = min(d, b.Max)
	if jitter == nil {
		jitter = rand.Float64
	}
	return d/2 + time.Duration(jitter()*float64(d/2))
}

// Retry limits of one object inside a transfer.
const (
	// MaxAttempts is how often a transient failure (5xx, timeout, reset) of
	// one object is tried before it becomes a dead letter.
	MaxAttempts = 5
	// MaxThrottleWait bounds the time one object waits out SlowDown answers
	// (which lower the concurrency and do not use up attempts).
	MaxThrottleWait = 30 * time.Minute
)
