package gate

import (
	"context"
	"encoding/json"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/edgeflow/edgeflow/internal/admit"
	"github.com/edgeflow/edgeflow/internal/admit/roomclient"
)

// The data center's live counts (admit.LiveCounts): the holder of its
// aggregator lease sums what its gates wrote of the current minute (and
// the minute before, for the queue) every LiveEvery and writes it into the
// room's live hash on the Anywhere Redis (admit.LiveKey), where room
// status, room list and the console read it. It never goes to the room:
// the room's history stays one report per data center and minute.
//
// Redis stamps each write with its own clock, and readers measure its age
// on that same clock, so gates', consoles' and laptops' clocks do not
// matter. No gate reads it back or decides on it: it is not signed (the
// readers hold no cookie keys) but bounded when read
// (admit.ParseLiveCounts).

// defaultLiveEvery is how often the holder writes the live counts: with
// gates writing their counts every 2 s, what a reader sees is at most
// about 3 s behind the gates' decisions, within admit.LiveMaxAge.
const defaultLiveEvery = time.Second

// writeLive sets the data center's field of a room's live hash to
// "stamp|counts", stamp the Unix milliseconds on Redis's clock, and keeps
// the hash for admit.LiveForget after the last write of any data center.
var writeLive = redis.NewScript(`
local t = redis.call('TIME')
local ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('HSET', KEYS[1], ARGV[1], ms .. '|' .. ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return ms
`)

// liveWriter is the holder's state of the live counts.
type liveWriter struct {
	next    map[string]time.Time // by room: when to write next
	failing bool                 // a failed write was logged
}

// publishLive writes the data center's live counts of a room, if due. A
// Redis that does not answer leaves the last written counts to age: the
// readers mark them stale.
func (a *Aggregator) publishLive(ctx context.Context, now time.Time, r AggregateRoom) {
	if a.Live == nil {
		return
	}
	every := a.LiveEvery
	if every <= 0 {
		every = defaultLiveEvery
	}
	if a.live.next == nil {
		a.live.next = map[string]time.Time{}
	}
	if now.Before(a.live.next[r.Name]) {
		return
	}
	a.live.next[r.Name] = now.Add(every)
	current := admit.MinuteOf(now, r.Length)
	prev, err := a.read(ctx, now, r, current.Add(-r.Length))
	var cur *aggMinute
	if err == nil {
		cur, err = a.read(ctx, now, r, current)
	}
	if err == nil {
		counts := admit.LiveDataCenter(a.DataCenter, current, prev.reports, cur.reports)
		var b []byte
		if b, err = json.Marshal(counts); err == nil {
			err = writeLive.Run(ctx, a.Live, []string{admit.LiveKey(r.Name)}, a.DataCenter, string(b), admit.LiveForget.Milliseconds()).Err()
		}
	}
	switch {
	case err != nil && !a.live.failing && ctx.Err() == nil:
		a.Logger.Warn("cannot write the data center's live counts; readers see them stale until Redis answers", "room", r.Name, "err", err)
		a.live.failing = true
	case err == nil && a.live.failing:
		a.Logger.Info("writing the data center's live counts again", "room", r.Name)
		a.live.failing = false
	}
}

// OpenLiveSource connects the readers of the live view (room status, the
// console) to the gates' Anywhere Redis by its URL, as a gate connects
// (NewRedisClient); an empty URL is none (nil: the live view is shown
// unavailable).
func OpenLiveSource(rawURL string) (*roomclient.LiveSource, error) {
	if rawURL == "" {
		return nil, nil
	}
	c, err := NewRedisClient(rawURL)
	if err != nil {
		return nil, err
	}
	return &roomclient.LiveSource{Redis: c}, nil
}
