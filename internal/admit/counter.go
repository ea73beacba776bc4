package admit

import (
	"context"
	"strings"
	"sync"
	"time"
)

// Counter hands out slot tickets: a shared count per key that only grows, and
// only while it is below a limit (the data center counters of "How Waiting
// Room makes queueing decisions"). The gate has two implementations: this
// package's in-process MemoryCounter (one gate per data center, the fallback,
// the simulator) and one on Redis (several gates of a data center, and the
// Anywhere pool).
type Counter interface {
	// TakeBelow adds one to the count at key if the count is below limit,
	// and reports whether it did. The key may be forgotten after expireAt.
	TakeBelow(ctx context.Context, key string, limit int64, expireAt time.Time) (bool, error)
	// Load returns the count at key, 0 if it has none.
	Load(ctx context.Context, key string) (int64, error)
}

// MemoryCounter is a Counter in process memory, safe for concurrent use.
type MemoryCounter struct {
	// Now says what time it is, to forget expired keys; nil is time.Now.
	// The simulator passes its virtual clock.
	Now func() time.Time

	mu      sync.Mutex
	counts  map[string]*memoryCount
	checked time.Time
}

type memoryCount struct {
	n        int64
	expireAt time.Time
}

// NewMemoryCounter returns an empty counter on the given clock (nil: the
// wall clock).
func NewMemoryCounter(now func() time.Time) *MemoryCounter {
	return &MemoryCounter{Now: now, counts: map[string]*memoryCount{}}
}

// TakeBelow implements Counter.
func (c *MemoryCounter) TakeBelow(_ context.Context, key string, limit int64, expireAt time.Time) (bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.forgetExpired()
	e := c.counts[key]
	if e == nil {
		if c.counts == nil {
			c.counts = map[string]*memoryCount{}
		}
		e = &memoryCount{}
		c.counts[key] = e
	}
	if expireAt.After(e.expireAt) {
		e.expireAt = expireAt
	}
	if e.n >= limit {
		return false, nil
	}
	e.n++
	return true, nil
}

// Load implements Counter.
func (c *MemoryCounter) Load(_ context.Context, key string) (int64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.counts[key]; e != nil {
		return e.n, nil
	}
	return 0, nil
}

// Len is the number of keys held, for tests.
func (c *MemoryCounter) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.counts)
}

// forgetExpired drops expired keys, at most once a second of the clock.
func (c *MemoryCounter) forgetExpired() {
	now := time.Now
	if c.Now != nil {
		now = c.Now
	}
	t := now()
	if t.Sub(c.checked) < time.Second {
		return
	}
	c.checked = t
	for k, e := range c.counts {
		if t.After(e.expireAt) {
			delete(c.counts, k)
		}
	}
}

// ScopeStores is a Counter that keeps the Anywhere scope's counters in one
// store and every other scope's in another, for strategies that take one
// store: a gate gives SharedCounters its data center's store (shared by the
// data center's gates) for the data center scopes and the Anywhere store
// (shared by every gate of the room) for the Anywhere scope, as source
// document 000's Anywhere counter is one for all data centers. Keys it
// cannot read a scope from (not made by CounterKey) go to DataCenter.
type ScopeStores struct{ DataCenter, Anywhere Counter }

// TakeBelow implements Counter.
func (s ScopeStores) TakeBelow(ctx context.Context, key string, limit int64, expireAt time.Time) (bool, error) {
	return s.storeOf(key).TakeBelow(ctx, key, limit, expireAt)
}

// Load implements Counter.
func (s ScopeStores) Load(ctx context.Context, key string) (int64, error) {
	return s.storeOf(key).Load(ctx, key)
}

func (s ScopeStores) storeOf(key string) Counter {
	if CounterScope(key) == Anywhere {
		return s.Anywhere
	}
	return s.DataCenter
}

// CounterScope reads the scope from a key CounterKey made (with or without a
// strategy's per-gate suffix); "" if key is not one.
func CounterScope(key string) string {
	// admit/<room>/<minute>/<pool>/<scope>[/gate=<id>]: room names, pools
	// and scopes hold no slash (ValidName, ValidLabel, Anywhere).
	parts := strings.SplitN(key, "/", 6)
	if len(parts) < 5 || parts[0] != "admit" {
		return ""
	}
	return parts[4]
}
