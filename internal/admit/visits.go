package admit

import (
	"sync"
	"sync/atomic"
	"time"
)

// Visits counts each admitted visitor at most once per minute at one gate
// of a room. A running session's first request in a minute moves it into
// that minute (Effect.Seen, Effect.Renewed); without Visits, every replayed
// copy of an old cookie and every one of a browser's parallel requests at a
// minute boundary moved it again, and each move left a session behind in
// the room's count once the minute it left fell out of the window.
//
// Visits also remembers the minute it last counted each visitor in (for a
// session's length), so a visitor's move is counted from where the room
// counted it last, not from the minute its (possibly old) cookie names.
//
// Requests take one shard's small mutex, chosen by the visitor: there is no
// lock of the whole room and no I/O. With a store shared by the room's gates
// (Deferred), first sightings wait in the shard for the gate's reporter,
// which asks the store which of them this gate was first to see in the room
// (Drain, then Count what the store confirms).
type Visits struct {
	// Cap bounds the visitors remembered (0: DefaultVisitsCap). Past it, a
	// visitor not remembered is counted at each of its requests that moves
	// its session, as if there were no Visits (Overflow counts them).
	Cap int

	once     sync.Once
	shards   [visitShards]visitShard
	overflow atomic.Uint64
	alone    atomic.Uint64
}

// DefaultVisitsCap is the default number of visitors a gate remembers per
// room (about 100 bytes each).
const DefaultVisitsCap = 500_000

const visitShards = 64

type visitShard struct {
	mu      sync.Mutex
	last    map[string]int64 // visitor → the minute (Unix ms) it was last counted in
	swept   int64            // the minute of the last sweep
	pending []Sighting
}

// Sighting is a visitor's first request in a minute at this gate, waiting
// for the shared store to say whether it was the room's first.
type Sighting struct {
	Visitor string
	Minute  time.Time
	// From is the minute its session is counted in as far as this gate
	// knows (Effect.Renewed); zero when sessions are not renewed.
	From time.Time
}

// Effect turns one decision's effect into what the gate counts: a session
// moving into minute (Seen) is counted only at the visitor's first request
// in it, moved from the latest minute it was counted in. keep is how long
// a visitor is remembered (at least a session's length plus a minute: no
// cookie older than that still opens). deferred: the room's gates share a
// store, so the move waits for Drain instead of being counted here.
func (v *Visits) Effect(e Effect, visitor string, keep time.Duration, deferred bool) Effect {
	if !e.Seen || e.Admitted || visitor == "" {
		return e // admissions are counted by their slot, once
	}
	minute := e.Minute.UnixMilli()
	s := v.shard(visitor)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sweep(e.Minute, keep) // no cookie still opening names an older minute
	last, known := s.last[visitor]
	switch {
	case known && last >= minute:
		e.Seen, e.Renewed = false, time.Time{} // counted in this minute already
		return e
	case !known && len(s.last) >= v.shardCap():
		v.overflow.Add(1)
		return e
	}
	s.last[visitor] = minute
	if known && !e.Renewed.IsZero() && last > e.Renewed.UnixMilli() {
		e.Renewed = fromMillis(last)
	}
	if deferred {
		s.pending = append(s.pending, Sighting{Visitor: visitor, Minute: e.Minute, From: e.Renewed})
		e.Seen, e.Renewed = false, time.Time{}
	}
	return e
}

// Once reports whether this is the visitor's first time in minute here,
// and remembers it for keep: a queued visitor is counted waiting once a
// minute however many copies of its cookie check in. Past the cap it is
// always the first time (and Overflow counts it).
func (v *Visits) Once(minute time.Time, visitor string, keep time.Duration) bool {
	if visitor == "" {
		return true
	}
	m := minute.UnixMilli()
	s := v.shard(visitor)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sweep(minute, keep)
	last, known := s.last[visitor]
	switch {
	case known && last >= m:
		return false
	case !known && len(s.last) >= v.shardCap():
		v.overflow.Add(1)
		return true
	}
	s.last[visitor] = m
	return true
}

// sweep forgets, once a minute, the visitors whose last minute is older
// than keep.
func (s *visitShard) sweep(minute time.Time, keep time.Duration) {
	m := minute.UnixMilli()
	if m <= s.swept {
		return
	}
	oldest := minute.Add(-keep).UnixMilli()
	for k, last := range s.last {
		if last < oldest {
			delete(s.last, k)
		}
	}
	s.swept = m
}

// Drain returns the sightings waiting for the shared store and forgets
// them.
func (v *Visits) Drain() []Sighting {
	var out []Sighting
	for i := range v.shards {
		s := &v.shards[i]
		s.mu.Lock()
		out = append(out, s.pending...)
		s.pending = nil
		s.mu.Unlock()
	}
	return out
}

// Pending reports whether sightings wait for the shared store.
func (v *Visits) Pending() bool {
	for i := range v.shards {
		s := &v.shards[i]
		s.mu.Lock()
		n := len(s.pending)
		s.mu.Unlock()
		if n > 0 {
			return true
		}
	}
	return false
}

// Overflow is how many moves were counted without de-duplication because
// the cap was reached.
func (v *Visits) Overflow() uint64 { return v.overflow.Load() }

// Alone notes n sightings counted without the shared store's word (it
// failed): a visitor seen at two gates then counts at both.
func (v *Visits) Alone(n int) { v.alone.Add(uint64(max(0, n))) }

// Unconfirmed is how many sightings were counted without the shared
// store's word (see Alone).
func (v *Visits) Unconfirmed() uint64 { return v.alone.Load() }

// Effect of a confirmed sighting, for a Tally.
func (s Sighting) Effect() Effect { return Effect{Minute: s.Minute, Seen: true, Renewed: s.From} }

func (v *Visits) shard(visitor string) *visitShard {
	v.once.Do(func() {
		for i := range v.shards {
			v.shards[i].last = map[string]int64{}
		}
	})
	// FNV-1a: visitor ids are random already, and this draws nothing.
	h := uint32(2166136261)
	for i := 0; i < len(visitor); i++ {
		h = (h ^ uint32(visitor[i])) * 16777619
	}
	return &v.shards[h%visitShards]
}

func (v *Visits) shardCap() int {
	c := v.Cap
	if c <= 0 {
		c = DefaultVisitsCap
	}
	return max(1, c/visitShards)
}
