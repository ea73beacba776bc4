package publish

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"
)

// progressBeat heartbeats as work advances, at most every two seconds, and
// only then: a step that stops advancing stops heartbeating, so Temporal
// times the attempt out after the heartbeat timeout and retries it. The
// context it returns is cancelled when nothing advanced for that long, so
// the stalled attempt also gives its worker slot back instead of holding
// it until the start-to-close timeout.
type progressBeat struct {
	ctx      context.Context
	mu       sync.Mutex
	last     time.Time // last advance
	lastBeat time.Time
	stage    string
	n        int64
}

// errNoProgress is the cause of a context cancelled by progressBeat.
var errNoProgress = errors.New("no progress within the heartbeat timeout")

func startProgress(ctx context.Context, stall time.Duration) (*progressBeat, context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	p := &progressBeat{ctx: ctx, last: time.Now()}
	timeout := stall
	if timeout <= 0 && activity.IsActivity(ctx) {
		timeout = activity.GetInfo(ctx).HeartbeatTimeout
	}
	done := make(chan struct{})
	if timeout > 0 {
		go func() {
			t := time.NewTicker(timeout / 4)
			defer t.Stop()
			for {
				select {
				case <-done:
					return
				case <-ctx.Done():
					return
				case <-t.C:
					p.mu.Lock()
					stalled := time.Since(p.last) > timeout
					stage := p.stage
					p.mu.Unlock()
					if stalled {
						cancel(fmt.Errorf("%w (%s): %w", errNoProgress, stage, context.DeadlineExceeded))
						return
					}
				}
			}
		}()
	}
	return p, ctx, func() { close(done); cancel(nil) }
}

// advance records progress: stage names the step, n how far it got.
func (p *progressBeat) advance(stage string, n int64) {
	p.mu.Lock()
	now := time.Now()
	p.last, p.stage, p.n = now, stage, n
	beat := now.Sub(p.lastBeat) >= 2*time.Second
	if beat {
		p.lastBeat = now
	}
	p.mu.Unlock()
	if beat && activity.IsActivity(p.ctx) {
		activity.RecordHeartbeat(p.ctx, fmt.Sprintf("%s: %d", stage, n))
	}
}

// progressReader reports the bytes read so far.
type progressReader struct {
	r      io.Reader
	n      int64
	report func(int64)
}

func (p *progressReader) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	p.n += int64(n)
	p.report(p.n)
	return n, err
}
