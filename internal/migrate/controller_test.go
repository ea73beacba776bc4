package migrate

import (
	"context"
	"testing"
	"time"
)

func TestControllerBacksOffAndRecovers(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := NewController(32)
	c.now = func() time.Time { return now }
	ctx := context.Background()

	// Sustained throttling: one cut per cooldown, down to the floor, never to zero.
	for range 40 {
		if err := c.Acquire(ctx, 0); err != nil {
			t.Fatal(err)
		}
		c.Release(true)
		_ = c.Acquire(ctx, 0)
		c.Release(true) // a burst of answers within the cooldown cuts once
		now = now.Add(1100 * time.Millisecond)
	}
	if got := c.Limit(); got != 1 {
		t.Fatalf("limit after sustained throttling %d, want the floor 1", got)
	}
	// Failed attempts (retries after a batch failed, say) grow nothing:
	// only successes do.
	for range 200 {
		_ = c.Acquire(ctx, 0)
		c.ReleaseFailed()
	}
	if got := c.Limit(); got != 1 {
		t.Fatalf("limit after failed attempts %d, want still 1", got)
	}
	// Successes grow it back, about one per round.
	for range 2000 {
		_ = c.Acquire(ctx, 0)
		c.Release(false)
	}
	if got := c.Limit(); got != 32 {
		t.Fatalf("limit after recovery %d, want 32", got)
	}
}

func TestControllerBoundsConcurrency(t *testing.T) {
	c := NewController(2)
	ctx := context.Background()
	_ = c.Acquire(ctx, 0)
	_ = c.Acquire(ctx, 0)
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if err := c.Acquire(short, 0); err == nil {
		t.Fatal("a third transfer started with a limit of 2")
	}
	got := make(chan error, 1)
	go func() { got <- c.Acquire(ctx, 0) }()
	c.Release(false)
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a released slot did not wake the waiter")
	}
}

func TestBackoff(t *testing.T) {
	b := Backoff{Initial: 100 * time.Millisecond, Max: time.Second}
	for attempt, want := range map[int]time.Duration{1: 100 * time.Millisecond, 2: 200 * time.Millisecond, 4: 800 * time.Millisecond, 10: time.Second} {
		lo := b.Delay(attempt, func() float64 { return 0 })
		hi := b.Delay(attempt, func() float64 { return 0.999999 })
		if lo != want/2 || hi < want*99/100 || hi > want {
			t.Errorf("attempt %d: delays %v..%v, want %v..%v", attempt, lo, hi, want/2, want)
		}
	}
}

func TestControllerHandsSlotsOverInOrderAndOnCancel(t *testing.T) {
	c := NewController(1)
	ctx := context.Background()
	_ = c.Acquire(ctx, 0)
	order := make(chan int, 3)
	cancelled, cancel := context.WithCancel(ctx)
	for i := range 3 {
		waitCtx := ctx
		if i == 1 {
			waitCtx = cancelled
		}
		go func() {
			if err := c.Acquire(waitCtx, 0); err != nil {
				order <- -i
				return
			}
			order <- i
			c.Release(false)
		}()
		waitFor(t, func() bool { // queued in order
			c.mu.Lock()
			defer c.mu.Unlock()
			return len(c.waiting) == i+1
		})
	}
	cancel()
	if got := <-order; got != -1 {
		t.Fatalf("the cancelled waiter got %d", got)
	}
	c.Release(false)
	if a, b := <-order, <-order; a != 0 || b != 2 {
		t.Fatalf("slots went to %d then %d, want 0 then 2", a, b)
	}
	waitFor(t, func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.inUse == 0 && len(c.waiting) == 0
	})
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached within 10s")
		}
		time.Sleep(time.Millisecond)
	}
}

func TestControllerServesTheOldestPageFirst(t *testing.T) {
	c := NewController(1)
	ctx := context.Background()
	_ = c.Acquire(ctx, 0)
	order := make(chan int, 3)
	for i, page := range []int{7, 3, 5} {
		go func() {
			_ = c.Acquire(ctx, page)
			order <- page
			c.Release(false)
		}()
		waitFor(t, func() bool {
			c.mu.Lock()
			defer c.mu.Unlock()
			return len(c.waiting) == i+1
		})
	}
	c.Release(false)
	if a, b, d := <-order, <-order, <-order; a != 3 || b != 5 || d != 7 {
		t.Fatalf("slots went to pages %d, %d, %d; want 3, 5, 7", a, b, d)
	}
}
