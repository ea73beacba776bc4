// Package heartbeat keeps a long activity step from looking like a dead
// worker: Temporal retries an attempt that stops heartbeating, and the
// heartbeat is also how a cancellation (an abort) reaches the activity.
package heartbeat

import (
	"context"
	"time"

	"go.temporal.io/sdk/activity"
)

// Every records a heartbeat at once and then every interval until stop is
// called or ctx ends. details, when not nil, gives what each heartbeat
// carries (progress a retry can resume from). The first beat comes at once
// so a cancellation requested before the first tick is not kept waiting.
func Every(ctx context.Context, every time.Duration, details func() any) (stop func()) {
	beat := func() {
		if details == nil {
			activity.RecordHeartbeat(ctx)
			return
		}
		activity.RecordHeartbeat(ctx, details())
	}
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(every)
		defer t.Stop()
		beat()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				beat()
			}
		}
	}()
	return func() { close(done) }
}

// Within is how often to beat so that a heartbeat timeout is never missed:
// three times per timeout, and at most ten times a second.
func Within(timeout time.Duration) time.Duration {
	return max(timeout/3, 100*time.Millisecond)
}
