package devstack

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// The Sentinel harness: a primary, a replica and three Sentinels on free
// ports; the primary killed, the Sentinels promote the replica, and what
// was written before is on it.
func TestRedisSentinelPromotesTheReplica(t *testing.T) {
	requireTool(t, "redis-server")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := StartRedisSentinel(ctx, RedisSentinelOptions{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop(5 * time.Second)
	if len(s.Servers) != 2 || len(s.SentinelAddrs) != 3 || s.URL == "" {
		t.Fatalf("%d servers, Sentinels %v, URL %q", len(s.Servers), s.SentinelAddrs, s.URL)
	}
	first, err := s.Primary(ctx)
	if err != nil || first != s.Servers[0].Addr {
		t.Fatalf("primary %s (%v), want %s", first, err, s.Servers[0].Addr)
	}
	c := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: s.Master, SentinelAddrs: s.SentinelAddrs})
	defer c.Close()
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.Do(ctx, "WAIT", 1, 1000).Err(); err != nil {
		t.Fatal(err)
	}
	s.Server(first).Kill()
	var now string
	for now, _ = s.Primary(ctx); now == first || now == ""; now, _ = s.Primary(ctx) {
		select {
		case <-ctx.Done():
			t.Fatalf("no replica promoted: the Sentinels still name %s", first)
		case <-time.After(100 * time.Millisecond):
		}
	}
	if now != s.Servers[1].Addr {
		t.Errorf("promoted %s, want the replica %s", now, s.Servers[1].Addr)
	}
	for {
		v, err := c.Get(ctx, "k").Result()
		if err == nil {
			if v != "v" {
				t.Errorf("the promoted replica holds %q, want what the primary held", v)
			}
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the failover client never reached the promoted replica: %v", err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
