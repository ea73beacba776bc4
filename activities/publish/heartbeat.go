package publish

import (
	"context"
	"io"
	"time"

	"go.temporal.io/sdk/activity"
)

// heartbeatEvery records a heartbeat with details() every interval until
// stop is called: long steps must not look like a dead worker.
func heartbeatEvery(ctx context.Context, every time.Duration, details func() any) (stop func()) {
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				activity.RecordHeartbeat(ctx, details())
			}
		}
	}()
	return func() { close(done) }
}

// heartbeatReader heartbeats with the bytes read so far while a download streams.
type heartbeatReader struct {
	ctx  context.Context
	r    io.Reader
	n    int64
	last time.Time
}

func (h *heartbeatReader) Read(p []byte) (int, error) {
	n, err := h.r.Read(p)
	h.n += int64(n)
	if time.Since(h.last) > 5*time.Second {
		h.last = time.Now()
		activity.RecordHeartbeat(h.ctx, h.n)
	}
	return n, err
}
