package gate

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/edgeflow/edgeflow/internal/testenv"
)

// A revocation in Redis that no gate signed ends no session: it is
// dropped and counted. Before, any entry in the room's stream revoked the
// visitor it named (visitor ids are in Redis for anyone reading it).
func TestUnsignedRevocationIsDropped(t *testing.T) {
	testenv.Require(t, env)
	ctx := context.Background()
	client := redisCounter(t, env.Redis.URL).Client
	room := "revoke" + strconv.FormatInt(time.Now().UnixNano()%1e12, 36)
	signer := NewRedisSigner(testRing(t, testKey(t, "k1")))
	now := time.Now()
	until := strconv.FormatInt(now.Add(time.Hour).UnixMilli(), 10)

	writer := &Revocations{Client: client, Signer: signer}
	writer.Revoke(room, "signed-visitor", now.Add(time.Hour), now)
	if err := writer.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := client.XAdd(ctx, &redis.XAddArgs{Stream: revokedStreamKey(room), Values: []any{"v", "victim", "u", until}}).Err(); err != nil {
		t.Fatal(err)
	}
	if err := client.XAdd(ctx, &redis.XAddArgs{Stream: revokedStreamKey(room), Values: []any{"v", "victim2", "u", until, "s", signer.Sign(revokedStreamKey("other"), "victim2", until)}}).Err(); err != nil {
		t.Fatal(err)
	}

	drops := &RedisDrops{}
	reader := &Revocations{Client: client, Signer: signer, Drops: drops, Rooms: func() []string { return []string{room} }}
	if err := reader.Pull(ctx); err != nil {
		t.Fatal(err)
	}
	if !reader.Revoked(room, "signed-visitor", now) {
		t.Error("a gate's signed revocation was not read")
	}
	for _, v := range []string{"victim", "victim2"} {
		if reader.Revoked(room, v, now) {
			t.Errorf("a forged revocation ended %s's session", v)
		}
	}
	if got := drops.Count(dropRevocation, reasonUnsigned); got != 2 {
		t.Errorf("dropped %d revocations, want 2", got)
	}
}
