package devstack

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// RedisClusterOptions configures StartRedisCluster: Debian's redis-server
// in cluster mode on free ports, joined by redis-cli (redis-tools).
type RedisClusterOptions struct {
	Dir  string // one directory per node for its cluster config
	Logs io.Writer
	// Primaries is how many nodes share the slots (default 3, the fewest
	// redis-cli accepts); no replicas.
	Primaries int
	// ServerArgs are more arguments for every node (an ACL user).
	ServerArgs []string
}

// RedisCluster is a running Redis Cluster.
type RedisCluster struct {
	Nodes []*Redis
	URL   string // redis-cluster://host:port,…
}

// StartRedisCluster starts the nodes, has redis-cli assign them the slots
// and waits until every node says the cluster is ok.
func StartRedisCluster(ctx context.Context, o RedisClusterOptions) (c *RedisCluster, err error) {
	if o.Primaries == 0 {
		o.Primaries = 3
	}
	cli, err := FindTool("redis-cli")
	if err != nil {
		return nil, fmt.Errorf("%w (Debian: apt-get install redis-tools; `make test` installs it)", err)
	}
	c = &RedisCluster{}
	defer func() {
		if err != nil {
			c.Stop(5 * time.Second)
		}
	}()
	var addrs []string
	for i := range o.Primaries {
		dir := filepath.Join(o.Dir, "node-"+strconv.Itoa(i+1))
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return c, err
		}
		n, err := StartRedis(ctx, RedisOptions{Dir: dir, Logs: o.Logs, Args: append([]string{"--cluster-enabled", "yes",
			"--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "2000"}, o.ServerArgs...)})
		if err != nil {
			return c, err
		}
		c.Nodes = append(c.Nodes, n)
		addrs = append(addrs, n.Addr)
	}
	create := exec.CommandContext(ctx, cli, append(append([]string{"--cluster", "create"}, addrs...), "--cluster-replicas", "0", "--cluster-yes")...)
	if out, err := create.CombinedOutput(); err != nil {
		return c, fmt.Errorf("redis-cli --cluster create %s: %w\n%s", strings.Join(addrs, " "), err, out)
	}
	for _, n := range c.Nodes {
		if err := waitUntil(ctx, "node "+n.Addr+" to see the cluster ok", func(ctx context.Context) error {
			return clusterOK(ctx, n.Addr)
		}); err != nil {
			return c, err
		}
	}
	c.URL = "redis-cluster://" + strings.Join(addrs, ",")
	return c, nil
}

// Stop stops every node.
func (c *RedisCluster) Stop(grace time.Duration) {
	for _, n := range c.Nodes {
		_ = n.Stop(grace)
	}
}

func clusterOK(ctx context.Context, addr string) error {
	c := redis.NewClient(&redis.Options{Addr: addr, DialTimeout: time.Second, ReadTimeout: time.Second, MaxRetries: -1})
	defer func() { _ = c.Close() }() // a probe: nothing to flush
	info, err := c.ClusterInfo(ctx).Result()
	if err != nil {
		return err
	}
	if !strings.Contains(info, "cluster_state:ok") {
		return fmt.Errorf("not ok yet: %.80s", info)
	}
	return nil
}
