package migrate

import (
	"context"
	"sync"
	"time"
)

// Controller bounds how many transfers run at once and adapts the bound to
// the stores: each SlowDown/503 answer (at most once per Cooldown) cuts it
// by a quarter, down to Min; each success grows it by 1/limit, so about one
// step per round of transfers, back up to Max (additive increase,
// multiplicative decrease, as TCP does). Sustained throttling therefore slows
// a job down instead of failing it. One Controller is shared by every
// transfer of a worker process towards one store.
type Controller struct {
	mu       sync.Mutex
	limit    float64
	min, max int
	inUse    int
	cooldown time.Duration
	lastCut  time.Time
	now      func() time.Time
	wake     chan struct{} // closed and replaced when a slot frees up
}

// NewController starts at max transfers at once.
func NewController(max int) *Controller {
	if max < 1 {
		max = 1
	}
	return &Controller{limit: float64(max), min: 1, max: max, cooldown: time.Second, now: time.Now, wake: make(chan struct{})}
}

// Limit is the current bound.
func (c *Controller) Limit() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return int(c.limit)
}

// SetMax changes the ceiling (a job's setting), keeping the current limit
// within it.
func (c *Controller) SetMax(max int) {
	if max < 1 {
		max = 1
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.max = max
	if c.limit > float64(max) {
		c.limit = float64(max)
	}
	c.signal()
}

// Acquire waits for a slot.
func (c *Controller) Acquire(ctx context.Context) error {
	for {
		c.mu.Lock()
		if c.inUse < int(c.limit) {
			c.inUse++
			c.mu.Unlock()
			return nil
		}
		wake := c.wake
		c.mu.Unlock()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-wake:
		}
	}
}

// Release frees a slot, saying how the transfer went.
func (c *Controller) Release(throttled bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.inUse--
	if throttled {
		c.throttledLocked()
	} else if c.limit < float64(c.max) {
		c.limit = min(float64(c.max), c.limit+1/c.limit)
	}
	c.signal()
}

// Throttled records a SlowDown answer without releasing a slot (the caller
// backs off and tries again while holding it).
func (c *Controller) Throttled() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.throttledLocked()
}

func (c *Controller) throttledLocked() {
	now := c.now()
	if now.Sub(c.lastCut) < c.cooldown {
		return // one cut per burst: answers to requests sent before the cut
	}
	c.lastCut = now
	c.limit = max(float64(c.min), c.limit*0.75)
}

func (c *Controller) signal() {
	close(c.wake)
	c.wake = make(chan struct{})
}
