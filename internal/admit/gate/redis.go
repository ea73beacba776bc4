package gate

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/edgeflow/edgeflow/internal/admit"
)

// RedisCounter is the engine's Counter on Redis: the shared data center
// counter of "How Waiting Room makes queueing decisions on Cloudflare's
// highly distributed network", for several gates of one data center (their
// data center's Redis) and for the Anywhere pool (one Redis every gate of the
// room reaches). Each take is one atomic script call: the count only grows,
// only below the limit, and the key expires with its minute.
type RedisCounter struct{ Client redis.UniversalClient }

// takeBelow adds one to KEYS[1] if it is below ARGV[1], and (re)sets the
// key's expiry to ARGV[2] (Unix ms), atomically.
var takeBelow = redis.NewScript(`
local n = tonumber(redis.call('GET', KEYS[1]) or '0')
if n >= tonumber(ARGV[1]) then return 0 end
redis.call('INCR', KEYS[1])
redis.call('PEXPIREAT', KEYS[1], ARGV[2])
return 1
`)

// TakeBelow implements admit.Counter.
func (c RedisCounter) TakeBelow(ctx context.Context, key string, limit int64, expireAt time.Time) (bool, error) {
	if limit <= 0 {
		return false, nil
	}
	n, err := takeBelow.Run(ctx, c.Client, []string{key}, limit, expireAt.UnixMilli()).Int64()
	if err != nil {
		return false, fmt.Errorf("redis take: %w", err)
	}
	return n == 1, nil
}

// Load implements admit.Counter.
func (c RedisCounter) Load(ctx context.Context, key string) (int64, error) {
	n, err := c.Client.Get(ctx, key).Int64()
	if errors.Is(err, redis.Nil) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("redis load: %w", err)
	}
	return n, nil
}

// Ping checks that the server answers: on a Cluster, every primary (a
// take on a dead one's slots would fail).
func (c RedisCounter) Ping(ctx context.Context) error {
	if cc, ok := c.Client.(*redis.ClusterClient); ok {
		return cc.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error { return node.Ping(ctx).Err() })
	}
	return c.Client.Ping(ctx).Err()
}

// firstVisit tells whether a gate is the first of the room to count a
// visitor in a minute: KEYS[1] holds the last minute (Unix ms) any gate
// counted the visitor in. ARGV: the minute, the minute the gate would move
// the session from (0: none), the key's expiry (Unix ms). It returns -1 if
// the visitor is counted in this minute already, else the minute to move
// the session from: the later of the gate's and the last counted one.
var firstVisit = redis.NewScript(`
local last = tonumber(redis.call('GET', KEYS[1]) or '0')
local minute = tonumber(ARGV[1])
if last >= minute then return -1 end
redis.call('SET', KEYS[1], ARGV[1])
redis.call('PEXPIREAT', KEYS[1], ARGV[3])
local from = tonumber(ARGV[2])
if from > 0 and last > from then from = last end
return from
`)

// firstVisitBatch is how many sightings go in one pipelined round trip.
const firstVisitBatch = 1000

func visitKey(room, visitor string) string {
	return "admit/" + room + "/visitor/" + visitor + "/counted"
}

// FirstVisits implements VisitStore: one pipelined round trip per
// firstVisitBatch sightings, from the reporter, never from a request.
func (c RedisCounter) FirstVisits(ctx context.Context, room string, seen []admit.Sighting, keep time.Duration) (first, unsettled []admit.Sighting, err error) {
	if len(seen) == 0 {
		return nil, nil, nil
	}
	if err := firstVisit.Load(ctx, c.Client).Err(); err != nil {
		return nil, seen, fmt.Errorf("redis visits: %w", err)
	}
	for i := 0; i < len(seen); i += firstVisitBatch {
		batch := seen[i:min(len(seen), i+firstVisitBatch)]
		pipe := c.Client.Pipeline()
		cmds := make([]*redis.Cmd, len(batch))
		for j, s := range batch {
			from := int64(0)
			if !s.From.IsZero() {
				from = s.From.UnixMilli()
			}
			cmds[j] = firstVisit.EvalSha(ctx, pipe, []string{visitKey(room, s.Visitor)},
				s.Minute.UnixMilli(), from, s.Minute.Add(keep).UnixMilli())
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return first, seen[i:], fmt.Errorf("redis visits: %w", err)
		}
		for j, cmd := range cmds {
			n, err := cmd.Int64()
			if err != nil {
				return first, seen[i+j:], fmt.Errorf("redis visits: %w", err)
			}
			if n < 0 {
				continue
			}
			s := batch[j]
			s.From = time.Time{}
			if n > 0 {
				s.From = time.UnixMilli(n).UTC()
			}
			first = append(first, s)
		}
	}
	return first, nil, nil
}
