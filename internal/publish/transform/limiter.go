package transform

import (
	"context"
	"runtime"
	"sync"
)

// Limiter bounds how many CPU-bound jobs (minify, brotli, gzip) run at once in
// one worker process. Activities run concurrently so their downloads and
// uploads overlap, but more simultaneous compressions than cores only adds
// memory and scheduling overhead without finishing anything sooner. The zero
// Limiter allows runtime.GOMAXPROCS(0) jobs, fixed at its first use.
type Limiter struct {
	once  sync.Once // sizes slots of a zero Limiter
	slots chan struct{}
}

// NewLimiter returns a Limiter allowing n concurrent jobs; n <= 0 means
// runtime.GOMAXPROCS(0).
func NewLimiter(n int) *Limiter {
	if n <= 0 {
		n = runtime.GOMAXPROCS(0)
	}
	return &Limiter{slots: make(chan struct{}, n)}
}

// Do waits for a free slot, then runs fn in the calling goroutine. It returns
// ctx.Err() without running fn if ctx ends first.
func (l *Limiter) Do(ctx context.Context, fn func()) error {
	l.once.Do(func() {
		if l.slots == nil {
			l.slots = make(chan struct{}, runtime.GOMAXPROCS(0))
		}
	})
	if err := ctx.Err(); err != nil {
		return err
	}
	select {
	case l.slots <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-l.slots }()
	fn()
	return nil
}
