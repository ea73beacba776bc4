package gate

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/edgeflow/edgeflow/internal/keyring"
)

// Revocations are the sessions the origin revoked, per room, held in this
// gate's memory so that no admitted visitor's request waits on Redis to be
// checked against them. A revocation made here is authoritative here at
// once, whatever Redis does; it is written to the Redis every gate of the
// room shares in the background (batched, retried until Redis takes it),
// and every gate pulls the others' from there in the background (Run). A
// revocation is kept until the session it ended would have ended anyway.
//
// On Redis, a room's revocations are a stream (admit/<room>/revoked-sessions)
// read incrementally from the last entry a gate saw: entries are ordered by
// Redis's own clock, so no gate misses one by a skewed clock of its own.
type Revocations struct {
	// Client is the Redis every gate of the room shares (the Anywhere
	// Redis); nil: revocations stay in this gate.
	Client redis.UniversalClient
	// Rooms lists the rooms whose revocations this gate pulls (nil: none).
	Rooms func() []string
	// Cap bounds the revocations held per room (0: DefaultRevocationCap).
	// Past it, a revocation still ends the session it was made for (its
	// cookie is deleted) but is not remembered: a copy of the old cookie
	// passes until its session ends, and the drop is counted in
	// edgeflow_gate_revocations_dropped_total.
	Cap    int
	Now    func() time.Time // nil: time.Now
	Logger *slog.Logger
	// Signer signs the revocations written to Redis and checks those read
	// (NewRedisSigner): an entry no gate signed is dropped and counted in
	// Drops. Without one nothing read is believed.
	Signer *keyring.Signer
	Drops  *RedisDrops

	total atomic.Int64 // revocations held, every room: at 0 a check costs one atomic load
	rooms sync.Map     // room name → *roomRevocations

	mu      sync.Mutex
	pending []revocation      // made here, not yet written to Redis
	cursors map[string]string // room → the last stream entry read
	failing bool              // the last write or read failed (logged once)
}

// DefaultRevocationCap is the default bound on the revocations a gate holds
// per room: at about 100 bytes each, 10 MB. A revocation needs an admitted
// session, so a room reaches it only with that many sessions revoked within
// one session duration.
const DefaultRevocationCap = 100_000

const (
	// revocationShards spreads a room's revocations over locks so that
	// concurrent checks and revocations seldom share one.
	revocationShards = 64
	// revocationBatch is how many stream entries one read takes.
	revocationBatch = 1000
	// revocationIOTimeout bounds one background write or read.
	revocationIOTimeout = 2 * time.Second
)

type revocation struct {
	room, visitor string
	until         int64 // Unix ms: when the revoked session would have ended
}

type roomRevocations struct {
	n         atomic.Int64
	dropped   atomic.Uint64
	lastPrune atomic.Int64 // Unix ms
	shards    [revocationShards]revocationShard
}

type revocationShard struct {
	mu sync.RWMutex
	m  map[string]int64 // visitor → until (Unix ms)
}

func revokedStreamKey(room string) string { return "admit/" + room + "/revoked-sessions" }

func shardOf(visitor string) int {
	h := uint32(2166136261) // FNV-1a, without an allocation
	for i := 0; i < len(visitor); i++ {
		h ^= uint32(visitor[i])
		h *= 16777619
	}
	return int(h % revocationShards)
}

func (r *Revocations) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

func (r *Revocations) limit() int64 {
	if r.Cap > 0 {
		return int64(r.Cap)
	}
	return DefaultRevocationCap
}

// Revoked reports whether a visitor's session in a room was revoked, from
// this gate's memory only.
func (r *Revocations) Revoked(room, visitor string, now time.Time) bool {
	if r == nil || r.total.Load() == 0 {
		return false
	}
	v, ok := r.rooms.Load(room)
	if !ok {
		return false
	}
	s := &v.(*roomRevocations).shards[shardOf(visitor)]
	s.mu.RLock()
	until, ok := s.m[visitor]
	s.mu.RUnlock()
	return ok && now.UnixMilli() < until
}

// Revoke marks a visitor's session revoked at now until it would have
// ended: here at once, on Redis at the next write (Run).
func (r *Revocations) Revoke(room, visitor string, until, now time.Time) {
	if !r.add(room, visitor, until.UnixMilli(), now.UnixMilli()) || r.Client == nil {
		return
	}
	r.mu.Lock()
	r.pending = append(r.pending, revocation{room: room, visitor: visitor, until: until.UnixMilli()})
	r.mu.Unlock()
}

// add holds a revocation; false if it is over already or the room is full.
func (r *Revocations) add(room, visitor string, until, now int64) bool {
	if until <= now {
		return false
	}
	v, ok := r.rooms.Load(room)
	if !ok {
		v, _ = r.rooms.LoadOrStore(room, new(roomRevocations))
	}
	rr := v.(*roomRevocations)
	s := &rr.shards[shardOf(visitor)]
	s.mu.Lock()
	if old, ok := s.m[visitor]; ok {
		s.m[visitor] = max(old, until)
		s.mu.Unlock()
		return true
	}
	s.mu.Unlock()
	if rr.n.Add(1) > r.limit() {
		rr.n.Add(-1)
		// Full: forget what has expired (at most once a second), then try once more.
		if last := rr.lastPrune.Load(); now-last < 1000 || !rr.lastPrune.CompareAndSwap(last, now) {
			rr.dropped.Add(1)
			return false
		}
		r.pruneRoom(rr, now)
		if rr.n.Add(1) > r.limit() {
			rr.n.Add(-1)
			rr.dropped.Add(1)
			return false
		}
	}
	s.mu.Lock()
	if s.m == nil {
		s.m = map[string]int64{}
	}
	if old, ok := s.m[visitor]; ok { // added meanwhile by another request
		s.m[visitor] = max(old, until)
		s.mu.Unlock()
		rr.n.Add(-1)
		return true
	}
	s.m[visitor] = until
	s.mu.Unlock()
	r.total.Add(1)
	return true
}

// Prune forgets the revocations whose sessions would have ended by now.
func (r *Revocations) Prune(now time.Time) {
	ms := now.UnixMilli()
	r.rooms.Range(func(_, v any) bool {
		r.pruneRoom(v.(*roomRevocations), ms)
		return true
	})
}

func (r *Revocations) pruneRoom(rr *roomRevocations, now int64) {
	for i := range rr.shards {
		s := &rr.shards[i]
		s.mu.Lock()
		for visitor, until := range s.m {
			if until <= now {
				delete(s.m, visitor)
				rr.n.Add(-1)
				r.total.Add(-1)
			}
		}
		s.mu.Unlock()
	}
}

// Held is the number of revocations held for a room (expired ones until
// they are pruned), and how many were dropped past the cap.
func (r *Revocations) Held(room string) (held int64, dropped uint64) {
	if v, ok := r.rooms.Load(room); ok {
		rr := v.(*roomRevocations)
		return rr.n.Load(), rr.dropped.Load()
	}
	return 0, 0
}

// Unsent is the number of revocations made here not yet written to Redis.
func (r *Revocations) Unsent() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.pending)
}

// appendRevocations writes a room's revocations to its stream in one call:
// the stream keeps about ARGV[1] entries and lives as long as its
// longest-lasting one (ARGV[2], ms from now on Redis's clock, so that a
// gate's skewed clock cannot expire it early); then visitor, until, tag
// triples.
var appendRevocations = redis.NewScript(`
for i = 3, #ARGV, 3 do
  redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[1], '*', 'v', ARGV[i], 'u', ARGV[i+1], 's', ARGV[i+2])
end
if redis.call('PTTL', KEYS[1]) < tonumber(ARGV[2]) then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 1
`)

// Flush writes the revocations made here to Redis, in one round trip; what
// could not be written is kept for the next try.
func (r *Revocations) Flush(ctx context.Context) error {
	if r.Client == nil {
		return nil
	}
	r.mu.Lock()
	batch := r.pending
	r.pending = nil
	r.mu.Unlock()
	now := r.now().UnixMilli()
	byRoom := map[string][]revocation{}
	var order []string
	for _, rv := range batch {
		if rv.until <= now {
			continue // over: nothing left to revoke
		}
		if _, ok := byRoom[rv.room]; !ok {
			order = append(order, rv.room)
		}
		byRoom[rv.room] = append(byRoom[rv.room], rv)
	}
	if len(order) == 0 {
		return nil
	}
	pipe := r.Client.Pipeline()
	for _, room := range order {
		args := []any{r.limit(), int64(0)}
		var longest int64
		for _, rv := range byRoom[room] {
			until := strconv.FormatInt(rv.until, 10)
			args = append(args, rv.visitor, until, r.sign(room, rv.visitor, until))
			longest = max(longest, rv.until-now)
		}
		args[1] = longest + 60_000 // a minute's margin for the gates' clocks
		appendRevocations.Eval(ctx, pipe, []string{revokedStreamKey(room)}, args...)
	}
	cmds, err := pipe.Exec(ctx)
	if err == nil {
		return nil
	}
	// Keep the rooms whose write failed (a failed pipeline may have run
	// some; a second copy of an entry is harmless).
	var retry []revocation
	for i, room := range order {
		if i >= len(cmds) || cmds[i].Err() != nil {
			retry = append(retry, byRoom[room]...)
		}
	}
	r.mu.Lock()
	r.pending = append(retry, r.pending...)
	r.mu.Unlock()
	return err
}

// Pull reads the revocations other gates wrote since the last pull, for
// every room Rooms lists.
func (r *Revocations) Pull(ctx context.Context) error {
	if r.Client == nil || r.Rooms == nil {
		return nil
	}
	rooms := r.Rooms()
	r.mu.Lock()
	if r.cursors == nil {
		r.cursors = map[string]string{}
	}
	cursors := make([]string, len(rooms))
	for i, room := range rooms {
		if cursors[i] = r.cursors[room]; cursors[i] == "" {
			cursors[i] = "0-0"
		}
	}
	r.mu.Unlock()
	// A gate that starts reads a whole stream: batch after batch, as long
	// as a room's batch comes back full.
	for round := int64(0); len(rooms) > 0 && round <= r.limit()/revocationBatch+1; round++ {
		pipe := r.Client.Pipeline()
		reads := make([]*redis.XStreamSliceCmd, len(rooms))
		for i, room := range rooms {
			reads[i] = pipe.XRead(ctx, &redis.XReadArgs{Streams: []string{revokedStreamKey(room), cursors[i]}, Count: revocationBatch, Block: -1})
		}
		if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
			return err
		}
		now := r.now().UnixMilli()
		var more []string
		var moreCursors []string
		for i, room := range rooms {
			streams, err := reads[i].Result()
			if err != nil || len(streams) == 0 {
				continue // redis.Nil: nothing new, or no stream
			}
			msgs := streams[0].Messages
			for _, m := range msgs {
				visitor, untilText := stringValue(m.Values["v"]), stringValue(m.Values["u"])
				until, err := strconv.ParseInt(untilText, 10, 64)
				if err != nil || visitor == "" || !r.Signer.Verify(stringValue(m.Values["s"]), revokedStreamKey(room), visitor, untilText) {
					r.Drops.add(dropRevocation, reasonUnsigned)
					continue
				}
				r.add(room, visitor, until, now)
			}
			if len(msgs) > 0 {
				cursors[i] = msgs[len(msgs)-1].ID
				r.mu.Lock()
				r.cursors[room] = cursors[i]
				r.mu.Unlock()
			}
			if len(msgs) == revocationBatch {
				more, moreCursors = append(more, room), append(moreCursors, cursors[i])
			}
		}
		rooms, cursors = more, moreCursors
	}
	return nil
}

// sign is the tag of a revocation entry (empty without a signer: such an
// entry is believed by no gate).
func (r *Revocations) sign(room, visitor, until string) string {
	if r.Signer == nil {
		return ""
	}
	return r.Signer.Sign(revokedStreamKey(room), visitor, until)
}

func stringValue(v any) string {
	s, _ := v.(string)
	return s
}

// Run writes this gate's revocations and pulls the other gates' every
// interval, and forgets expired ones, until ctx ends; it makes a last write
// then, so that revocations made just before a gate stops reach the others.
func (r *Revocations) Run(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			fctx, cancel := context.WithTimeout(context.Background(), revocationIOTimeout)
			_ = r.Flush(fctx)
			cancel()
			return
		case <-t.C:
		}
		r.Prune(r.now())
		if r.Client == nil {
			continue
		}
		ioctx, cancel := context.WithTimeout(ctx, revocationIOTimeout)
		err := r.Flush(ioctx)
		if err == nil {
			err = r.Pull(ioctx)
		}
		cancel()
		r.noteResult(err)
	}
}

func (r *Revocations) noteResult(err error) {
	r.mu.Lock()
	was := r.failing
	r.failing = err != nil
	unsent := len(r.pending)
	r.mu.Unlock()
	if r.Logger == nil || was == (err != nil) {
		return
	}
	if err != nil {
		r.Logger.Warn("revoked sessions: Redis unreachable; this gate's revocations hold here and are written when it answers again, other gates' arrive then",
			"err", err, "unsent", unsent)
	} else {
		r.Logger.Info("revoked sessions: Redis answers again")
	}
}

// RevokingRooms lists the rooms of a registry that honour the origin's
// revoke command, for Revocations.Rooms.
func RevokingRooms(reg *Registry) func() []string {
	return func() []string {
		var names []string
		for _, room := range reg.Rooms() {
			if st := room.state.Load(); st != nil && st.snap != nil && st.snap.Settings.RevokeEnabled() {
				names = append(names, room.name)
			}
		}
		return names
	}
}
