package admit

import (
	"context"
	"errors"
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
	// Ledgered says every gate counting here records its sessions in this
	// store's ledger (RecordSession), so that it may count the sessions
	// still running (LiveSessionCounter); without it SessionsLive answers
	// ErrNoLedger, as an empty ledger would say none run.
	Ledgered bool

	mu      sync.Mutex
	counts  map[string]*memoryCount
	checked time.Time
	// expiries is the sub-minute session ledger (SessionLedger): by room,
	// live sessions by expiry second.
	expiries map[string]map[int64]int64
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
	// A minute's reads go back to its start: keep two minutes of the past.
	past := t.Add(-ledgerKeep).Unix()
	for room, secs := range c.expiries {
		for sec := range secs {
			if sec < past {
				delete(secs, sec)
			}
		}
		if len(secs) == 0 {
			delete(c.expiries, room)
		}
	}
}

// ledgerKeep is how long the session ledger keeps an expiry second that has
// passed: reads reach back to the start of the current minute.
const ledgerKeep = 2 * time.Minute

// MoveSession implements SessionLedger.
func (c *MemoryCounter) MoveSession(_ context.Context, room string, from, to time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.forgetExpired()
	if c.expiries == nil {
		c.expiries = map[string]map[int64]int64{}
	}
	secs := c.expiries[room]
	if secs == nil {
		secs = map[int64]int64{}
		c.expiries[room] = secs
	}
	if !from.IsZero() {
		secs[SessionExpirySecond(from)]--
	}
	if !to.IsZero() {
		secs[SessionExpirySecond(to)]++
	}
	return nil
}

// SessionsEnded implements SessionLedger.
func (c *MemoryCounter) SessionsEnded(_ context.Context, room string, from, to time.Time) (int64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	lo, hi := EndedSeconds(from, to)
	var n int64
	for sec, k := range c.expiries[room] {
		if sec >= lo && sec <= hi {
			n += k
		}
	}
	return max(n, 0), nil
}

// SessionsLive implements LiveSessionCounter.
func (c *MemoryCounter) SessionsLive(_ context.Context, room string, at time.Time, _ time.Duration) (int64, error) {
	if !c.Ledgered {
		return 0, ErrNoLedger
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	lo := LiveFromSecond(at)
	var n int64
	for sec, k := range c.expiries[room] {
		if sec >= lo {
			n += k
		}
	}
	return max(n, 0), nil
}

// Expiries is the number of expiry seconds the ledger holds, for tests.
func (c *MemoryCounter) Expiries() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, secs := range c.expiries {
		n += len(secs)
	}
	return n
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

// MoveSession implements SessionLedger on the Anywhere store, which every
// gate of the room shares (an error if it keeps no ledger).
func (s ScopeStores) MoveSession(ctx context.Context, room string, from, to time.Time) error {
	l, ok := s.Anywhere.(SessionLedger)
	if !ok {
		return errNoLedger
	}
	return l.MoveSession(ctx, room, from, to)
}

// SessionsEnded implements SessionLedger on the Anywhere store; without a
// ledger there, none ended.
func (s ScopeStores) SessionsEnded(ctx context.Context, room string, from, to time.Time) (int64, error) {
	l, ok := s.Anywhere.(SessionLedger)
	if !ok {
		return 0, nil
	}
	return l.SessionsEnded(ctx, room, from, to)
}

// SessionsLive implements LiveSessionCounter on the Anywhere store; an
// error wrapping ErrNoLedger when it keeps no ledger.
func (s ScopeStores) SessionsLive(ctx context.Context, room string, at time.Time, within time.Duration) (int64, error) {
	l, ok := s.Anywhere.(LiveSessionCounter)
	if !ok {
		return 0, ErrNoLedger
	}
	return l.SessionsLive(ctx, room, at, within)
}

// ErrNoLedger is a counter store's answer when it keeps no session ledger.
var ErrNoLedger = errors.New("counter store keeps no session ledger")

var errNoLedger = ErrNoLedger

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
