package gate

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/edgeflow/edgeflow/internal/admit"
	"github.com/edgeflow/edgeflow/internal/admit/roomclient"
	"github.com/edgeflow/edgeflow/internal/devstack"
	"github.com/edgeflow/edgeflow/internal/testenv"
)

// A gate counts, reports, aggregates and revokes on a Redis that requires
// a password, as an ACL user holding RedisACL and no more: the user and
// password come in the gate's URL. Without them, or with a wrong one,
// nothing is read, and no error shows the password.
func TestGateOnRedisWithACLUser(t *testing.T) {
	testenv.Require(t, env)
	ctx := context.Background()
	srv, err := devstack.StartRedis(ctx, devstack.RedisOptions{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Stop(5 * time.Second) })
	admin := redis.NewClient(&redis.Options{Addr: srv.Addr})
	defer admin.Close()
	if err := admin.Do(ctx, append([]any{"ACL", "SETUSER", "gate", "on", ">gate-secret-pw"}, aclArgs()...)...).Err(); err != nil {
		t.Fatalf("ACL SETUSER with RedisACL: %v", err)
	}
	if err := admin.ConfigSet(ctx, "requirepass", "admin-secret-pw").Err(); err != nil {
		t.Fatal(err)
	}

	for url, want := range map[string]string{
		"redis://" + srv.Addr + "/0":                       "NOAUTH",
		"redis://gate:wrong-pw@" + srv.Addr + "/0":         "WRONGPASS",
		"redis://nobody:gate-secret-pw@" + srv.Addr + "/0": "WRONGPASS",
	} {
		c, err := NewRedisClient(url)
		if err != nil {
			t.Fatal(err)
		}
		_, err = RedisCounter{Client: c}.TakeBelow(ctx, "admit/x/1/new/*", 5, time.Now().Add(time.Minute))
		_ = c.Close()
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "pw") {
			t.Errorf("%s: take %v, want an error saying %s without the password", strings.Split(url, "@")[0], err, want)
		}
	}

	c, err := NewRedisClient("redis://gate:gate-secret-pw@" + srv.Addr + "/0")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	rc := RedisCounter{Client: c}
	now := time.Now()
	minute := admit.MinuteOf(now, time.Minute)
	if err := rc.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	if ok, err := rc.TakeBelow(ctx, admit.CounterKey("shop", minute, admit.PoolNew, admit.Anywhere), 5, now.Add(time.Minute)); !ok || err != nil {
		t.Fatalf("take: %v %v", ok, err)
	}
	if n, err := rc.Load(ctx, admit.CounterKey("shop", minute, admit.PoolNew, admit.Anywhere)); n != 1 || err != nil {
		t.Fatalf("load: %d %v", n, err)
	}
	if first, _, err := rc.FirstVisits(ctx, "shop", []admit.Sighting{{Visitor: "v1", Minute: minute}}, time.Hour); len(first) != 1 || err != nil {
		t.Fatalf("visits: %v %v", first, err)
	}
	if err := rc.MoveSession(ctx, "shop", time.Time{}, now.Add(2*time.Second)); err != nil {
		t.Fatalf("session ledger: %v", err)
	}
	if _, err := rc.SessionsEnded(ctx, "shop", now, now.Add(3*time.Second)); err != nil {
		t.Fatalf("session ledger: %v", err)
	}

	signer := NewRedisSigner(testRing(t, testKey(t, "k1")))
	revs := &Revocations{Client: c, Signer: signer, Rooms: func() []string { return []string{"shop"} }}
	revs.Revoke("shop", "v1", now.Add(time.Hour), now)
	if err := revs.Flush(ctx); err != nil {
		t.Fatalf("revocations: %v", err)
	}
	other := &Revocations{Client: c, Signer: signer, Rooms: func() []string { return []string{"shop"} }}
	if err := other.Pull(ctx); err != nil || !other.Revoked("shop", "v1", now) {
		t.Fatalf("revocations read: %v", err)
	}

	agg := &Aggregator{Client: c, DataCenter: "dc", Holder: "g1/1", Signer: signer, Logger: quietLogger()}
	rep := admit.Report{Room: "shop", DataCenter: "dc", Gate: "g1", Minute: minute.Add(-time.Minute), Incarnation: 1, Seq: 1,
		NewVisitors: 1, Admitted: 1, Final: true, Leaving: true}
	if err := agg.Write(ctx, rep, time.Minute); err != nil {
		t.Fatalf("aggregate write: %v", err)
	}
	var sent []admit.Report
	agg.Tick(ctx, minute.Add(time.Second), []AggregateRoom{{Name: "shop", Length: time.Minute, Bound: 100}},
		func(_ context.Context, r admit.Report) error { sent = append(sent, r); return nil })
	if !agg.Holds(minute.Add(time.Second)) || len(sent) != 1 || sent[0].Admitted != 1 {
		t.Fatalf("the aggregator holds the lease %v, sent %+v; want the gate's final counts", agg.Holds(minute.Add(time.Second)), sent)
	}

	// The data center's live counts, written by the holder and read as
	// room status and the console read them.
	agg.Live = c
	agg.Tick(ctx, minute.Add(5*time.Second), []AggregateRoom{{Name: "shop", Length: time.Minute, Bound: 100}},
		func(context.Context, admit.Report) error { return nil })
	live, err := (&roomclient.LiveSource{Redis: c}).Read(ctx, "shop", &admit.Snapshot{})
	if err != nil || len(live.DataCenters) != 1 || live.DataCenters[0].DataCenter != "dc" {
		t.Fatalf("the live view as the gates' user: %+v, %v", live, err)
	}

	// The user can do nothing else.
	if err := c.FlushAll(ctx).Err(); err == nil || !strings.Contains(err.Error(), "NOPERM") {
		t.Errorf("FLUSHALL as the gates' user: %v, want NOPERM", err)
	}
	if err := c.Set(ctx, "other/key", "x", 0).Err(); err == nil || !strings.Contains(err.Error(), "NOPERM") {
		t.Errorf("a key outside admit/ as the gates' user: %v, want NOPERM", err)
	}
}

func aclArgs() []any {
	var out []any
	for _, f := range strings.Fields(RedisACL) {
		out = append(out, f)
	}
	return out
}
