package devstack

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// RedisSentinelOptions configures StartRedisSentinel: a primary, its
// replicas and the Sentinels watching them (Debian's redis-server and
// redis-sentinel), on free ports.
type RedisSentinelOptions struct {
	Dir  string // the Sentinels' config files (they rewrite them); nothing else is kept
	Logs io.Writer
	// Master is the name the Sentinels know the primary by (default
	// "edgeflow").
	Master string
	// Replicas (default 1) and Sentinels (default 3; the quorum is a
	// majority of them).
	Replicas, Sentinels int
	// DownAfter is how long a primary may not answer before the Sentinels
	// call it down and promote a replica (default 1 s; Sentinel's own
	// default is 30 s).
	DownAfter time.Duration
	// ServerArgs are more arguments for every redis-server (an ACL user).
	ServerArgs []string
}

// RedisSentinel is a running primary with replicas, watched by Sentinels.
type RedisSentinel struct {
	Master    string
	Servers   []*Redis // the first primary first, then its replicas
	Sentinels []*Process
	// SentinelAddrs are the Sentinels' host:port; URL is the gates'
	// redis-sentinel:// URL of the primary.
	SentinelAddrs []string
	URL           string
}

// StartRedisSentinel starts the primary, then its replicas, waits until
// each replicates, then starts the Sentinels and waits until each knows
// every replica and every other Sentinel (so that a failover can happen at
// once).
func StartRedisSentinel(ctx context.Context, o RedisSentinelOptions) (s *RedisSentinel, err error) {
	if o.Master == "" {
		o.Master = "edgeflow"
	}
	if o.Replicas == 0 {
		o.Replicas = 1
	}
	if o.Sentinels == 0 {
		o.Sentinels = 3
	}
	if o.DownAfter == 0 {
		o.DownAfter = time.Second
	}
	bin, sentinelFlag, err := sentinelBin()
	if err != nil {
		return nil, err
	}
	s = &RedisSentinel{Master: o.Master}
	defer func() {
		if err != nil {
			s.Stop(5 * time.Second)
		}
	}()
	primary, err := StartRedis(ctx, RedisOptions{Dir: o.Dir, Logs: o.Logs, Args: o.ServerArgs})
	if err != nil {
		return s, err
	}
	s.Servers = append(s.Servers, primary)
	host, port, _ := net.SplitHostPort(primary.Addr)
	for range o.Replicas {
		r, err := StartRedis(ctx, RedisOptions{Dir: o.Dir, Logs: o.Logs, Args: append([]string{"--replicaof", host, port}, o.ServerArgs...)})
		if err != nil {
			return s, err
		}
		s.Servers = append(s.Servers, r)
		if err := waitUntil(ctx, "replica "+r.Addr+" to replicate "+primary.Addr, func(ctx context.Context) error {
			return replicating(ctx, r.Addr)
		}); err != nil {
			return s, err
		}
	}
	quorum := o.Sentinels/2 + 1
	for i := range o.Sentinels {
		conf := fmt.Sprintf("port %%d\nbind 127.0.0.1\ndaemonize no\nloglevel warning\ndir %s\n"+
			"sentinel monitor %s %s %s %d\nsentinel down-after-milliseconds %s %d\n"+
			"sentinel failover-timeout %s %d\nsentinel parallel-syncs %s 1\n",
			o.Dir, o.Master, host, port, quorum, o.Master, o.DownAfter.Milliseconds(), o.Master, (10 * o.DownAfter).Milliseconds(), o.Master)
		file := filepath.Join(o.Dir, fmt.Sprintf("sentinel-%d.conf", i+1))
		sp, err := startServer(ctx, "redis-sentinel", true, func() (sentinelProc, error) {
			return startSentinelOnce(ctx, bin, sentinelFlag, file, conf, o.Logs)
		})
		if err != nil {
			return s, err
		}
		s.Sentinels = append(s.Sentinels, sp.Process)
		s.SentinelAddrs = append(s.SentinelAddrs, sp.addr)
	}
	for _, addr := range s.SentinelAddrs {
		if err := waitUntil(ctx, "Sentinel "+addr+" to know every replica and Sentinel", func(ctx context.Context) error {
			return sentinelReady(ctx, addr, o.Master, o.Replicas, o.Sentinels-1)
		}); err != nil {
			return s, err
		}
	}
	s.URL = "redis-sentinel://" + strings.Join(s.SentinelAddrs, ",") + "/" + o.Master
	return s, nil
}

// sentinelProc is a started Sentinel and its address.
type sentinelProc struct {
	*Process
	addr string
}

// startSentinelOnce starts a Sentinel on a free port (conf's %d) and waits
// until it answers PING.
func startSentinelOnce(ctx context.Context, bin string, sentinelFlag bool, file, conf string, logs io.Writer) (sentinelProc, error) {
	port, err := choosePort()
	if err != nil {
		return sentinelProc{}, err
	}
	if err := os.WriteFile(file, fmt.Appendf(nil, conf, port), 0o600); err != nil {
		return sentinelProc{}, err
	}
	args := []string{file}
	if sentinelFlag {
		args = append(args, "--sentinel")
	}
	p, err := start("redis-sentinel", exec.Command(bin, args...), logs)
	if err != nil {
		return sentinelProc{}, err
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	deadline := time.Now().Add(20 * time.Second)
	for {
		if exited, err := p.Exited(); exited {
			return sentinelProc{}, p.failed("redis-sentinel on %s exited during start: %v", addr, err)
		}
		if err := pingRedis(addr); err == nil {
			if !listensOn(p.cmd.Process.Pid, port) {
				return sentinelProc{}, p.failed("another process answers on %s, the port redis-sentinel was to bind", addr)
			}
			return sentinelProc{Process: p, addr: addr}, nil
		}
		if time.Now().After(deadline) {
			_ = p.Stop(5 * time.Second)
			return sentinelProc{}, fmt.Errorf("redis-sentinel on %s not ready after 20s\n--- its last log lines ---\n%s", addr, p.log.String())
		}
		select {
		case <-ctx.Done():
			_ = p.Stop(5 * time.Second)
			return sentinelProc{}, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// sentinelBin is Debian's redis-sentinel, or redis-server in Sentinel
// mode (the same program) where only that is installed.
func sentinelBin() (bin string, sentinelFlag bool, err error) {
	if bin, err = FindTool("redis-sentinel"); err == nil {
		return bin, false, nil
	}
	if bin, err = FindTool("redis-server"); err == nil {
		return bin, true, nil
	}
	return "", false, fmt.Errorf("%w (Debian: apt-get install redis-sentinel; `make test` installs it)", err)
}

// Primary is the address the Sentinels name as the primary now.
func (s *RedisSentinel) Primary(ctx context.Context) (string, error) {
	var errs []error
	for _, addr := range s.SentinelAddrs {
		c := redis.NewSentinelClient(&redis.Options{Addr: addr, DialTimeout: time.Second, ReadTimeout: time.Second})
		hp, err := c.GetMasterAddrByName(ctx, s.Master).Result()
		_ = c.Close()
		if err == nil && len(hp) == 2 {
			return net.JoinHostPort(hp[0], hp[1]), nil
		}
		errs = append(errs, err)
	}
	return "", fmt.Errorf("no Sentinel names a primary: %w", errors.Join(errs...))
}

// Server is the server at addr (nil: none of them).
func (s *RedisSentinel) Server(addr string) *Redis {
	for _, r := range s.Servers {
		if r.Addr == addr {
			return r
		}
	}
	return nil
}

// Stop stops the Sentinels first (so they promote nothing meanwhile), then
// the servers.
func (s *RedisSentinel) Stop(grace time.Duration) {
	for _, p := range s.Sentinels {
		_ = p.Stop(grace)
	}
	for _, r := range s.Servers {
		_ = r.Stop(grace)
	}
}

// replicating tells whether the server at addr is a replica whose link to
// its primary is up.
func replicating(ctx context.Context, addr string) error {
	c := redis.NewClient(&redis.Options{Addr: addr, DialTimeout: time.Second, ReadTimeout: time.Second, MaxRetries: -1})
	defer func() { _ = c.Close() }() // a probe: nothing to flush
	info, err := c.Info(ctx, "replication").Result()
	if err != nil {
		return err
	}
	if !strings.Contains(info, "master_link_status:up") {
		return errors.New("its link to the primary is not up")
	}
	return nil
}

// sentinelReady tells whether the Sentinel at addr sees the primary up
// with its replicas and the other Sentinels.
func sentinelReady(ctx context.Context, addr, master string, replicas, others int) error {
	c := redis.NewSentinelClient(&redis.Options{Addr: addr, DialTimeout: time.Second, ReadTimeout: time.Second, MaxRetries: -1})
	defer func() { _ = c.Close() }() // a probe: nothing to flush
	m, err := c.Master(ctx, master).Result()
	if err != nil {
		return err
	}
	if m["flags"] != "master" || m["num-slaves"] != strconv.Itoa(replicas) || m["num-other-sentinels"] != strconv.Itoa(others) {
		return fmt.Errorf("flags %s, %s replicas, %s other Sentinels", m["flags"], m["num-slaves"], m["num-other-sentinels"])
	}
	return nil
}

// waitUntil polls cond until it holds, for up to 30 s.
func waitUntil(ctx context.Context, what string, cond func(context.Context) error) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := cond(ctx)
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("waiting for %s: %w", what, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}
