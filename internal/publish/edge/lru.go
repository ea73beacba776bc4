package edge

import (
	"container/list"
	"sync"
)

// lru is a least-recently-used map bounded by the total cost of its values
// (bytes for file bodies, an estimate of memory for documents). It is safe for
// concurrent use. A zero or negative budget disables it: every Get misses and
// every Add is dropped.
type lru[K comparable, V any] struct {
	mu      sync.Mutex
	budget  int64
	used    int64
	order   *list.List // front = most recently used; elements hold *lruEntry
	entries map[K]*list.Element
}

type lruEntry[K comparable, V any] struct {
	key   K
	value V
	cost  int64
}

func newLRU[K comparable, V any](budget int64) *lru[K, V] {
	return &lru[K, V]{budget: budget, order: list.New(), entries: make(map[K]*list.Element)}
}

// Get returns the value under key and marks it recently used.
func (c *lru[K, V]) Get(key K) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.entries[key]; ok {
		c.order.MoveToFront(el)
		return el.Value.(*lruEntry[K, V]).value, true
	}
	var zero V
	return zero, false
}

// Contains reports whether key is cached, without marking it used.
func (c *lru[K, V]) Contains(key K) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.entries[key]
	return ok
}

// Add stores value under key, replacing any previous value, and evicts the
// least recently used entries until the total cost fits the budget. A value
// costing more than the whole budget is not stored.
func (c *lru[K, V]) Add(key K, value V, cost int64) {
	if cost > c.budget {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.entries[key]; ok {
		e := el.Value.(*lruEntry[K, V])
		c.used += cost - e.cost
		e.value, e.cost = value, cost
		c.order.MoveToFront(el)
	} else {
		c.entries[key] = c.order.PushFront(&lruEntry[K, V]{key: key, value: value, cost: cost})
		c.used += cost
	}
	for c.used > c.budget {
		oldest := c.order.Back()
		e := oldest.Value.(*lruEntry[K, V])
		c.order.Remove(oldest)
		delete(c.entries, e.key)
		c.used -= e.cost
	}
}

// Remove drops key if present.
func (c *lru[K, V]) Remove(key K) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.entries[key]; ok {
		c.order.Remove(el)
		delete(c.entries, key)
		c.used -= el.Value.(*lruEntry[K, V]).cost
	}
}

// Stats returns the number of entries and their total cost.
func (c *lru[K, V]) Stats() (entries int, used int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries), c.used
}
