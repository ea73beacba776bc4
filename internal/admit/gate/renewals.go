package gate

import (
	"strings"
	"sync"
	"time"

	"github.com/edgeflow/edgeflow/internal/admit"
)

// renewals remembers, per cookie value, the renewal the gate sealed for
// it, so that a visitor whose browser has not taken the new cookie yet
// (requests already in flight, or a client that ignores Set-Cookie) is sent
// the same renewal again rather than one sealed anew on every request. It
// is what the browser would hold had it taken it, so it is sent only while
// it would not be renewed itself (admit.RenewalDue) and has not expired.
// The decision and what it counts are made on the cookie the visitor sent,
// as before. Sharded like the revocations, so that no lock is shared by
// every request, and bounded per shard.
type renewals struct {
	shards [revocationShards]renewalShard
}

// renewalsPerShard bounds each shard: 8,192 visitors in all, at most a few
// MB with the largest cookies.
const renewalsPerShard = 128

type renewalShard struct {
	mu sync.Mutex
	m  map[string]renewal // by the cookie value sent
}

type renewal struct {
	next  Cookie
	value string // next, sealed
}

// get returns the renewal sealed for the cookie value old of room, if it
// is still current at now.
func (r *renewals) get(old, room string, now time.Time, length time.Duration) (*Cookie, string, bool) {
	s := &r.shards[shardOf(old)]
	s.mu.Lock()
	e, ok := s.m[old]
	s.mu.Unlock()
	if !ok || e.next.Room != room || admit.RenewalDue(&e.next.Ticket, now, length) || now.UnixMilli() >= e.next.Expires {
		return nil, "", false
	}
	return &e.next, e.value, true
}

// put remembers next, sealed as value, as the renewal of the cookie value
// old. A full shard drops the renewals that are due, then any.
func (r *renewals) put(old string, next *Cookie, value string, now time.Time, length time.Duration) {
	s := &r.shards[shardOf(old)]
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = make(map[string]renewal, renewalsPerShard)
	}
	if len(s.m) >= renewalsPerShard {
		for k, e := range s.m {
			if admit.RenewalDue(&e.next.Ticket, now, length) {
				delete(s.m, k)
			}
		}
		for k := range s.m {
			if len(s.m) < renewalsPerShard {
				break
			}
			delete(s.m, k)
		}
	}
	s.m[strings.Clone(old)] = renewal{next: *next, value: value} // old is part of the request's header
}
