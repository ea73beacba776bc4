package deploy

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/edgeflow/edgeflow/internal/admit"
	"github.com/edgeflow/edgeflow/internal/admit/gate"
	"github.com/edgeflow/edgeflow/internal/devstack"
)

// A gate counts on a Redis Cluster (redis-cluster://, three primaries on
// real redis-server nodes), logged in as a user holding gate.RedisACL on
// every node: every counter, session ledger, aggregate and revocation call
// works, its scripts' keys each in one hash slot (a script over keys of
// two slots fails with CROSSSLOT), its pipelines spread over the nodes,
// and no node denies the user anything.
func TestGateOnARedisCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts redis-server")
	}
	const pass = "gate-cluster-password-0123456789"
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cluster, err := devstack.StartRedisCluster(ctx, devstack.RedisClusterOptions{Dir: t.TempDir(),
		ServerArgs: append([]string{"--user", gateUser, "on", ">" + pass}, strings.Fields(gate.RedisACL)...)})
	if err != nil {
		t.Fatal(err)
	}
	defer cluster.Stop(5 * time.Second)
	client, err := gate.NewRedisClient(strings.Replace(cluster.URL, "://", "://"+gateUser+":"+pass+"@", 1))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	if _, ok := client.(*redis.ClusterClient); !ok {
		t.Fatalf("a %T for a redis-cluster:// URL", client)
	}
	exerciseGateRedis(ctx, t, client)

	// Many visitors' marks in one pipelined round trip, and several rooms'
	// counters: keys on every node.
	store := gate.RedisCounter{Client: client}
	length := 12 * time.Second
	minute := admit.MinuteOf(time.Now(), length)
	var seen []admit.Sighting
	for i := range 200 {
		seen = append(seen, admit.Sighting{Visitor: "visitor-" + string(rune('a'+i%26)) + strings.Repeat("x", i/26), Minute: minute})
	}
	first, unsettled, err := store.FirstVisits(ctx, "shop", seen, 3*length)
	if err != nil || len(first) != len(seen) || len(unsettled) != 0 {
		t.Errorf("first visits of %d visitors over the nodes: %d first, %d unsettled, %v", len(seen), len(first), len(unsettled), err)
	}
	if first, _, err := store.FirstVisits(ctx, "shop", seen, 3*length); err != nil || len(first) != 0 {
		t.Errorf("the same visitors again: %d first (%v), want none", len(first), err)
	}
	for _, room := range []string{"a", "b", "c", "d", "e", "f"} {
		key := admit.CounterKey(room, minute, admit.PoolNew, admit.Anywhere)
		for i := range 3 {
			if ok, err := store.TakeBelow(ctx, key, 2, minute.Add(3*length)); err != nil || ok != (i < 2) {
				t.Errorf("room %s, take %d of a limit of 2: %t, %v", room, i+1, ok, err)
			}
		}
	}
	nodesWithKeys := 0
	for _, n := range cluster.Nodes {
		admin := redis.NewClient(&redis.Options{Addr: n.Addr})
		if denied, err := admin.Do(ctx, "ACL", "LOG").Slice(); err != nil || len(denied) > 0 {
			t.Errorf("node %s denied the gate user %d times (ACL LOG, %v): %v", n.Addr, len(denied), err, denied)
		}
		if size, err := admin.DBSize(ctx).Result(); err == nil && size > 0 {
			nodesWithKeys++
		}
		_ = admin.Close()
	}
	if nodesWithKeys != len(cluster.Nodes) {
		t.Errorf("the gate's keys are on %d of %d nodes: the test did not spread them", nodesWithKeys, len(cluster.Nodes))
	}
}
