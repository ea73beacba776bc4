package migrate

import (
	"cmp"
	"context"
	"slices"
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
	// waiting are the transfers waiting for a slot, by priority then
	// arrival; a freed slot wakes one of them, never all (hundreds may wait).
	waiting []waiter
	arrived uint64
}

// waiter is a transfer waiting for a slot.
type waiter struct {
	priority int
	arrival  uint64
	ready    chan struct{}
}

// NewController starts at max transfers at once.
func NewController(max int) *Controller {
	if max < 1 {
		max = 1
	}
	return &Controller{limit: float64(max), min: 1, max: max, cooldown: time.Second, now: time.Now}
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
	c.handOver()
}

// Acquire waits for a slot. Waiting transfers get slots in order of
// priority, lowest first, then of arrival: transfers of a job's oldest page
// go first, so pages finish one after another and progress is steady.
func (c *Controller) Acquire(ctx context.Context, priority int) error {
	c.mu.Lock()
	if len(c.waiting) == 0 && c.inUse < int(c.limit) {
		c.inUse++
		c.mu.Unlock()
		return nil
	}
	ready := make(chan struct{})
	c.arrived++
	w := waiter{priority: priority, arrival: c.arrived, ready: ready}
	i, _ := slices.BinarySearchFunc(c.waiting, w, func(a, b waiter) int {
		return cmp.Or(cmp.Compare(a.priority, b.priority), cmp.Compare(a.arrival, b.arrival))
	})
	c.waiting = slices.Insert(c.waiting, i, w)
	c.mu.Unlock()
	select {
	case <-ready:
		return nil // the slot was handed over: inUse counts it already
	case <-ctx.Done():
		c.mu.Lock()
		defer c.mu.Unlock()
		for i, w := range c.waiting {
			if w.ready == ready {
				c.waiting = append(c.waiting[:i], c.waiting[i+1:]...)
				return ctx.Err()
			}
		}
		// Handed over just as ctx ended: give it back.
		c.inUse--
		c.handOver()
		return ctx.Err()
	}
}

// ReleaseFailed frees a slot after an attempt that failed otherwise than
// by throttling: no cut, and no growth either, which is for successes (a
// page of retries must not raise the limit a SlowDown just cut).
func (c *Controller) ReleaseFailed() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.inUse--
	c.handOver()
}

// Release frees a slot after a success (throttled false: the limit grows)
// or a SlowDown answer (true: it is cut).
func (c *Controller) Release(throttled bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.inUse--
	if throttled {
		c.throttledLocked()
	} else if c.limit < float64(c.max) {
		c.limit = min(float64(c.max), c.limit+1/c.limit)
	}
	c.handOver()
}

// StepAside frees a transfer's slot while it waits without making a
// request (its batch being written by another); Rejoin takes one back, in
// the order of Acquire. Neither says how a transfer went.
func (c *Controller) StepAside() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.inUse--
	c.handOver()
}

// Rejoin waits for a slot as Acquire does; if ctx ends first, it takes one
// anyway (the caller is about to Release it, having stopped).
func (c *Controller) Rejoin(ctx context.Context, priority int) {
	if c.Acquire(ctx, priority) != nil {
		c.mu.Lock()
		c.inUse++
		c.mu.Unlock()
	}
}

func (c *Controller) throttledLocked() {
	now := c.now()
	if now.Sub(c.lastCut) < c.cooldown {
		return // one cut per burst: answers to requests sent before the cut
	}
	c.lastCut = now
	c.limit = max(float64(c.min), c.limit*0.75)
}

// handOver gives free slots to the longest waiting transfers.
func (c *Controller) handOver() {
	for len(c.waiting) > 0 && c.inUse < int(c.limit) {
		c.inUse++
		close(c.waiting[0].ready)
		c.waiting = c.waiting[1:]
	}
}
