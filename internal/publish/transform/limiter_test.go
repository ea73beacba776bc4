package transform

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestLimiterNeverExceedsN(t *testing.T) {
	const n, jobs = 3, 40
	l := NewLimiter(n)
	var running, peak atomic.Int32
	var wg sync.WaitGroup
	for i := 0; i < jobs; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := l.Do(context.Background(), func() {
				now := running.Add(1)
				for {
					p := peak.Load()
					if now <= p || peak.CompareAndSwap(p, now) {
						break
					}
				}
				time.Sleep(2 * time.Millisecond)
				running.Add(-1)
			})
			if err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if p := peak.Load(); p > n {
		t.Errorf("peak concurrency %d exceeds limit %d", p, n)
	} else if p < 2 {
		t.Errorf("peak concurrency %d: jobs did not run in parallel", p)
	}
}

func TestLimiterContextCancelledWhileWaiting(t *testing.T) {
	l := NewLimiter(1)
	release := make(chan struct{})
	started := make(chan struct{})
	go l.Do(context.Background(), func() { close(started); <-release })
	<-started
	defer close(release)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	ran := false
	if err := l.Do(ctx, func() { ran = true }); !errors.Is(err, context.DeadlineExceeded) || ran {
		t.Errorf("Do on a full limiter = %v (ran %v), want DeadlineExceeded without running", err, ran)
	}
}

func TestLimiterCancelledContextDoesNotRun(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	ran := false
	if err := NewLimiter(4).Do(ctx, func() { ran = true }); !errors.Is(err, context.Canceled) || ran {
		t.Errorf("Do = %v (ran %v), want Canceled without running", err, ran)
	}
}

func TestLimiterDefaultsToGOMAXPROCS(t *testing.T) {
	want := runtime.GOMAXPROCS(0)
	if got := cap(NewLimiter(0).slots); got != want {
		t.Errorf("NewLimiter(0) allows %d, want GOMAXPROCS %d", got, want)
	}
	var zero Limiter
	if err := zero.Do(context.Background(), func() {}); err != nil {
		t.Fatal(err)
	}
	if got := cap(zero.slots); got != want {
		t.Errorf("zero Limiter allows %d, want GOMAXPROCS %d", got, want)
	}
}

// A panicking job must give its slot back, or the worker slowly deadlocks.
func TestLimiterReleasesSlotOnPanic(t *testing.T) {
	l := NewLimiter(1)
	func() {
		defer func() { _ = recover() }()
		_ = l.Do(context.Background(), func() { panic("job failed") })
	}()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := l.Do(ctx, func() {}); err != nil {
		t.Errorf("slot not released after panic: %v", err)
	}
}
