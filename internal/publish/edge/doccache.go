package edge

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/edgeflow/edgeflow/internal/objectstore"
)

// docCache keeps decoded metadata documents in memory so that serving a file
// costs no bucket round trip for its package and version documents.
//
//   - A present document is fresh for ttl (ttl 0: forever, for immutable
//     documents); a missing one for negativeTTL, so a flood of requests for
//     names that do not exist reaches the bucket once per name and period.
//   - An expired entry is still answered at once while one background fetch
//     refreshes it (stale-while-revalidate): a slow or unreachable metadata
//     store never adds latency to requests once a document has been seen.
//   - If the refresh fails (other than not-found), the stale entry is kept and
//     retried after errorBackoff (stale-if-error).
//   - Concurrent misses for one key share a single fetch (singleflight).
type docCache[T any] struct {
	kind         string // for logs: "package", "version", "index"
	entries      *lru[string, *docEntry[T]]
	flight       singleflight.Group
	ttl          time.Duration
	negativeTTL  time.Duration
	errorBackoff time.Duration
	fetchTimeout time.Duration
	cost         func(T) int64
	log          *slog.Logger
	now          func() time.Time
}

// docEntry is immutable once stored; a refresh replaces it.
type docEntry[T any] struct {
	value   T
	found   bool
	expires time.Time // zero: never
	fetched time.Time // when the store was read (kept across a failed refresh)
}

func (e *docEntry[T]) fresh(now time.Time) bool {
	return e.expires.IsZero() || now.Before(e.expires)
}

// negativeCost is what a remembered absence costs in the budget: small, but
// not zero, so a flood of distinct missing names still evicts old entries.
const negativeCost = 128

// get returns the document under key: found is false when it does not exist.
// err is set only when the document could not be fetched and nothing (not
// even a stale copy) is known about it.
func (c *docCache[T]) get(key string, fetch func(context.Context) (T, error)) (value T, found bool, err error) {
	now := c.now()
	if e, ok := c.entries.Get(key); ok {
		if !e.fresh(now) {
			// Refresh in the background; the channel is buffered, so nobody
			// has to read it.
			c.flight.DoChan(key, func() (any, error) { return c.refresh(key, fetch) })
		}
		return e.value, e.found, nil
	}
	res, err, _ := c.flight.Do(key, func() (any, error) { return c.refresh(key, fetch) })
	if err != nil {
		var zero T
		return zero, false, err
	}
	e := res.(*docEntry[T])
	return e.value, e.found, nil
}

// peek returns the document under key when it is cached and fresh, with
// ok true: get's hot path, which builds no fetch function.
func (c *docCache[T]) peek(key string) (value T, found, ok bool) {
	if e, hit := c.entries.Get(key); hit && e.fresh(c.now()) {
		return e.value, e.found, true
	}
	return value, false, false
}

// cached is get when key is cached, fresh or not; ok is false, and
// nothing is fetched, when it is not. fetch builds get's fetch function,
// only for a refresh.
func (c *docCache[T]) cached(key string, fetch func(string) func(context.Context) (T, error)) (value T, found, ok bool) {
	e, hit := c.entries.Get(key)
	if !hit {
		return value, false, false
	}
	if !e.fresh(c.now()) {
		f := fetch(key)
		c.flight.DoChan(key, func() (any, error) { return c.refresh(key, f) })
	}
	return e.value, e.found, true
}

// refresh fetches key and stores the outcome. It runs detached from any one
// request: the requests waiting on it may come and go.
func (c *docCache[T]) refresh(key string, fetch func(context.Context) (T, error)) (*docEntry[T], error) {
	ctx, cancel := context.WithTimeout(context.Background(), c.fetchTimeout)
	defer cancel()
	value, err := fetch(ctx)
	now := c.now()
	switch {
	case err == nil:
		e := &docEntry[T]{value: value, found: true, fetched: now}
		if c.ttl > 0 {
			e.expires = now.Add(c.ttl)
		}
		c.entries.Add(key, e, c.cost(value)+int64(len(key)))
		return e, nil
	case errors.Is(err, objectstore.ErrNotFound):
		e := &docEntry[T]{expires: now.Add(c.negativeTTL), fetched: now}
		c.entries.Add(key, e, negativeCost+int64(len(key)))
		return e, nil
	}
	if stale, ok := c.entries.Get(key); ok {
		c.log.Warn("metadata refresh failed; serving the cached copy", "kind", c.kind, "key", key, "error", err)
		retry := *stale
		retry.expires = now.Add(c.errorBackoff)
		c.entries.Add(key, &retry, c.costOf(&retry)+int64(len(key)))
		return &retry, nil
	}
	c.log.Error("metadata fetch failed", "kind", c.kind, "key", key, "error", err)
	return nil, err
}

func (c *docCache[T]) costOf(e *docEntry[T]) int64 {
	if !e.found {
		return negativeCost
	}
	return c.cost(e.value)
}

// revalidate reads key afresh, waiting for it, when the cached copy was read
// from the store at least minAge ago; otherwise it returns the cached copy
// (ok false when nothing is cached). However many requests ask, the store
// is read at most once per key and minAge.
func (c *docCache[T]) revalidate(key string, minAge time.Duration, fetch func(context.Context) (T, error)) (value T, found, ok bool) {
	e, hit := c.entries.Get(key)
	if !hit {
		return value, false, false
	}
	if c.now().Sub(e.fetched) < minAge {
		return e.value, e.found, true
	}
	res, err, _ := c.flight.Do(key, func() (any, error) { return c.refresh(key, fetch) })
	if err != nil {
		return e.value, e.found, true
	}
	e = res.(*docEntry[T])
	return e.value, e.found, true
}

// forget drops key, so that the next get fetches it afresh and does not
// join a fetch already under way (which may return what was there before).
func (c *docCache[T]) forget(key string) {
	c.flight.Forget(key)
	c.entries.Remove(key)
}
