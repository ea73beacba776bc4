package roomclient

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/edgeflow/edgeflow/internal/admit"
)

// LiveSource reads rooms' live views where the gates' data centers write
// them: the Anywhere Redis (admit.LiveKey). See docs/admit.md, "The live
// view".
type LiveSource struct {
	Redis redis.UniversalClient
}

// ErrNoLiveSource is the cause of a live view read with no Redis given.
var ErrNoLiveSource = errors.New("no Redis given to read the live view from (--redis-url, env ADMIT_REDIS_URL: the gates' Anywhere Redis)")

// Read returns the room's live view beside its snapshot. It is never nil:
// one that cannot be read is stale, with no figures, and says so in words
// safe to show anyone (err is the cause, for the caller's log). Values
// that do not parse are left out, and named in err.
func (l *LiveSource) Read(ctx context.Context, room string, snap *admit.Snapshot) (*admit.Live, error) {
	if l == nil || l.Redis == nil {
		return admit.LiveUnavailable("no live view: the reader has no Redis to read it from (ADMIT_REDIS_URL)"), ErrNoLiveSource
	}
	// Ages are measured on Redis's clock, the one the writers stamp with.
	pipe := l.Redis.Pipeline()
	now := pipe.Time(ctx)
	all := pipe.HGetAll(ctx, admit.LiveKey(room))
	if _, err := pipe.Exec(ctx); err != nil {
		return admit.LiveUnavailable("no live view: the gates' Redis did not answer"), fmt.Errorf("read the live view of room %s: %w", room, err)
	}
	var counts []admit.LiveCounts
	var bad []error
	for field, value := range all.Val() {
		c, err := admit.ParseLiveCounts(field, value)
		if err != nil {
			bad = append(bad, err)
			continue
		}
		counts = append(counts, c)
	}
	return admit.LiveView(snap, counts, now.Val()), errors.Join(bad...)
}

// Live is the room's live view from c.Live (stale, saying why, without
// one); err is the cause of a view that could not be read, for a log.
func (c Client) Live(ctx context.Context, room string, snap *admit.Snapshot) (*admit.Live, error) {
	return c.LiveSource.Read(ctx, room, snap)
}

// Status is the room's status API answer and its live view.
func (c Client) Status(ctx context.Context, room string, snap *admit.Snapshot) (admit.LiveStatus, error) {
	live, err := c.Live(ctx, room, snap)
	return admit.LiveStatus{StatusAPI: snap.StatusAPI(), Live: live}, err
}
