package gate

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/redis/go-redis/v9"
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

// Ping checks that the server answers.
func (c RedisCounter) Ping(ctx context.Context) error { return c.Client.Ping(ctx).Err() }

// Redis client timeouts: a new visitor waits for the counter, so a slow or
// dead Redis must fail fast and let the gate fall back to the even split;
// no retries, for the same reason.
const (
	redisDialTimeout = 500 * time.Millisecond
	redisIOTimeout   = 250 * time.Millisecond
	redisPoolSize    = 64
	redisPoolTimeout = time.Second
)

func init() {
	// go-redis logs failed dials itself; the gate logs what it does about
	// them (Failover), once, instead of once per request.
	redis.SetLogger(quietRedisLog{})
}

type quietRedisLog struct{}

func (quietRedisLog) Printf(context.Context, string, ...any) {}

// NewRedisClient connects to a Redis URL (redis://[user:password@]host:port[/db],
// or rediss:// for TLS) with the gate's timeouts. Errors never show the
// password.
func NewRedisClient(rawURL string) (*redis.Client, error) {
	opts, err := redis.ParseURL(rawURL)
	if err != nil {
		return nil, fmt.Errorf("redis URL: %s", redactURLError(err))
	}
	opts.DialTimeout = redisDialTimeout
	opts.ReadTimeout = redisIOTimeout
	opts.WriteTimeout = redisIOTimeout
	// A gate under a burst of visitors waits a little for a connection
	// rather than calling a busy store down (see ErrCountersBusy).
	opts.PoolSize = max(opts.PoolSize, redisPoolSize)
	opts.PoolTimeout = redisPoolTimeout
	opts.ContextTimeoutEnabled = true
	opts.MaxRetries = -1 // none: fall back instead
	opts.DisableIdentity = true
	return redis.NewClient(opts), nil
}

// redactURLError keeps the reason a URL did not parse but never the URL
// itself (it may hold a password).
func redactURLError(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		return "malformed URL: " + ue.Err.Error()
	}
	return err.Error()
}
