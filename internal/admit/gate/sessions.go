package gate

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/edgeflow/edgeflow/internal/admit"
)

// The room's sub-minute session ledger (admit.SessionLedger) on Redis: one
// hash per room and expiry minute, a field per expiry second. The room's
// keys share a hash tag, so a move between two minutes is one atomic
// script call on a cluster too, and each key expires ledgerKeep after its
// minute: memory stays bounded by the sessions alive.

// ledgerKeep is how long an expiry minute's hash outlives its minute: a
// read reaches back to the start of the current minute.
const ledgerKeep = 2 * time.Minute

func expiryKey(room string, sec int64) string {
	return "{admit/" + room + "/expiries}/" + strconv.FormatInt(sec-sec%60, 10)
}

func expiryKeyExpireAt(sec int64) int64 { return sec - sec%60 + 60 + int64(ledgerKeep/time.Second) }

// moveSession takes one from field ARGV[1] of KEYS[1] (none if empty) and
// adds one to field ARGV[2] of KEYS[2] (none if empty); ARGV[3], ARGV[4]
// are the keys' expiries (Unix seconds).
var moveSession = redis.NewScript(`
if ARGV[1] ~= '' then
  redis.call('HINCRBY', KEYS[1], ARGV[1], -1)
  redis.call('EXPIREAT', KEYS[1], ARGV[3])
end
if ARGV[2] ~= '' then
  redis.call('HINCRBY', KEYS[2], ARGV[2], 1)
  redis.call('EXPIREAT', KEYS[2], ARGV[4])
end
return 1
`)

// MoveSession implements admit.SessionLedger.
func (c RedisCounter) MoveSession(ctx context.Context, room string, from, to time.Time) error {
	keys := []string{"", ""}
	args := []any{"", "", 0, 0}
	for i, t := range []time.Time{from, to} {
		if t.IsZero() {
			keys[i] = expiryKey(room, 0)
			continue
		}
		sec := admit.SessionExpirySecond(t)
		keys[i], args[i], args[2+i] = expiryKey(room, sec), strconv.FormatInt(sec, 10), expiryKeyExpireAt(sec)
	}
	if err := moveSession.Run(ctx, c.Client, keys, args...).Err(); err != nil {
		return fmt.Errorf("redis session ledger: %w", err)
	}
	return nil
}

// sessionsEnded sums the fields of KEYS between ARGV[1] and ARGV[2].
var sessionsEnded = redis.NewScript(`
local lo, hi, n = tonumber(ARGV[1]), tonumber(ARGV[2]), 0
for _, key in ipairs(KEYS) do
  local kv = redis.call('HGETALL', key)
  for i = 1, #kv, 2 do
    local sec = tonumber(kv[i])
    if sec >= lo and sec <= hi then n = n + tonumber(kv[i + 1]) end
  end
end
return n
`)

// SessionsEnded implements admit.SessionLedger: one script call over the
// expiry minutes the range touches.
func (c RedisCounter) SessionsEnded(ctx context.Context, room string, from, to time.Time) (int64, error) {
	lo, hi := admit.EndedSeconds(from, to)
	if hi < lo {
		return 0, nil
	}
	var keys []string
	for m := lo - lo%60; m <= hi; m += 60 {
		keys = append(keys, expiryKey(room, m))
		if len(keys) > 3 { // reads span a minute; a longer range is a caller's error
			return 0, fmt.Errorf("redis session ledger: range %d..%d too long", lo, hi)
		}
	}
	n, err := sessionsEnded.Run(ctx, c.Client, keys, lo, hi).Int64()
	if err != nil {
		return 0, fmt.Errorf("redis session ledger: %w", err)
	}
	return max(n, 0), nil
}

// sessionsLive sums the fields of KEYS from ARGV[1] on.
var sessionsLive = redis.NewScript(`
local lo, n = tonumber(ARGV[1]), 0
for _, key in ipairs(KEYS) do
  local kv = redis.call('HGETALL', key)
  for i = 1, #kv, 2 do
    if tonumber(kv[i]) >= lo then n = n + tonumber(kv[i + 1]) end
  end
end
return n
`)

// SessionsLive implements admit.LiveSessionCounter: one script call over
// the expiry minutes from at's to within after it. Every gate sharing this
// Redis as its Anywhere store records its sessions here (SessionRecorder).
func (c RedisCounter) SessionsLive(ctx context.Context, room string, at time.Time, within time.Duration) (int64, error) {
	lo := admit.LiveFromSecond(at)
	hi := admit.SessionExpirySecond(at.Add(within))
	var keys []string
	for m := lo - lo%60; m <= hi; m += 60 {
		keys = append(keys, expiryKey(room, m))
		if len(keys) > admit.MaxSessionMinutes+2 {
			return 0, fmt.Errorf("redis session ledger: range %d..%d too long", lo, hi)
		}
	}
	n, err := sessionsLive.Run(ctx, c.Client, keys, lo).Int64()
	if err != nil {
		return 0, fmt.Errorf("redis session ledger: %w", err)
	}
	return max(n, 0), nil
}

// The gates of a room share the ledger where they share the Anywhere counters.
var (
	_ admit.SessionLedger      = RedisCounter{}
	_ admit.LiveSessionCounter = RedisCounter{}
)

// SessionRecorder applies the session moves of the gate's decisions
// (admit.Effect's SessionFrom, SessionTo: an admission, a renewal, a
// revocation) to the room's ledger in the background, in the order they
// were decided, so that no request waits on Redis for it (passing sessions
// renew every few seconds). A move that fails is logged and lost: a lost
// admission or revocation only frees less; a lost renewal may free its
// session's place up to a renewal interval early, one place per loss.
type SessionRecorder struct {
	Ledger admit.SessionLedger
	Logger *slog.Logger

	once    sync.Once
	moves   chan sessionMove
	lost    atomic.Int64
	pending atomic.Int64 // queued and not yet applied (or dropped)
}

type sessionMove struct {
	room string
	eff  admit.Effect
}

// recorderQueue bounds the moves waiting. Past it a move is dropped, not
// waited for: a request never waits on the ledger (a slow or unreachable
// Redis must not hold the gate's visitors), and a dropped move costs what
// a lost one does.
const recorderQueue = 4096

func (s *SessionRecorder) queue() chan sessionMove {
	s.once.Do(func() { s.moves = make(chan sessionMove, recorderQueue) })
	return s.moves
}

// Record queues the move of eff (none: nothing) for room, or drops it when
// the queue is full.
func (s *SessionRecorder) Record(room string, eff admit.Effect) {
	if eff.SessionFrom.IsZero() && eff.SessionTo.IsZero() {
		return
	}
	s.pending.Add(1)
	select {
	case s.queue() <- sessionMove{room: room, eff: admit.Effect{SessionFrom: eff.SessionFrom, SessionTo: eff.SessionTo}}:
	default:
		s.pending.Add(-1)
		s.lost.Add(1)
	}
}

// Pending is how many moves are queued or being applied: 0 once the
// ledger holds every move recorded so far.
func (s *SessionRecorder) Pending() int64 { return s.pending.Load() }

// Lost is how many moves were dropped or failed so far.
func (s *SessionRecorder) Lost() int64 { return s.lost.Load() }

// Run applies the queued moves until ctx ends, then those still queued
// (for up to a second).
func (s *SessionRecorder) Run(ctx context.Context) {
	q := s.queue()
	var logged time.Time
	apply := func(ctx context.Context, m sessionMove) {
		err := admit.RecordSession(ctx, s.Ledger, m.room, m.eff)
		s.pending.Add(-1)
		if err != nil {
			s.lost.Add(1)
		}
		// At most one line a second, however many visitors pass meanwhile.
		if err != nil && s.Logger != nil && time.Since(logged) >= time.Second {
			logged = time.Now()
			s.Logger.Warn("session ledger: moves are lost", "room", m.room, "lost_so_far", s.lost.Load(), "err", err)
		}
	}
	for {
		select {
		case m := <-q:
			apply(ctx, m)
		case <-ctx.Done():
			drain, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
			defer cancel()
			for {
				select {
				case m := <-q:
					apply(drain, m)
				default:
					return
				}
			}
		}
	}
}
