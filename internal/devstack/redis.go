package devstack

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// RedisOptions configures a Redis server (Debian's redis-server). A zero
// port means a free one.
type RedisOptions struct {
	Bin  string // default FindTool("redis-server")
	IP   string // default 127.0.0.1
	Port int
	Dir  string // working directory; nothing is persisted there
	Logs io.Writer
	// Args are more redis-server arguments (a replica's --replicaof, a
	// password).
	Args []string
}

// Redis is a running Redis server.
type Redis struct {
	*Process
	Addr string // host:port
	URL  string // redis://host:port/0
}

// StartRedis starts redis-server without persistence (the gates' counters
// live a few minutes) and waits until it answers PING. A port it chooses
// itself is chosen again if the server cannot bind it.
func StartRedis(ctx context.Context, o RedisOptions) (*Redis, error) {
	var err error
	if o.Bin == "" {
		if o.Bin, err = FindTool("redis-server"); err != nil {
			return nil, fmt.Errorf("%w (Debian: apt-get install redis-server; `make run` and `make test` install it)", err)
		}
	}
	if o.IP == "" {
		o.IP = "127.0.0.1"
	}
	if o.Dir == "" {
		o.Dir = os.TempDir()
	}
	return startServer(ctx, "redis-server", o.Port == 0, func() (*Redis, error) { return startRedisOnce(ctx, o) })
}

func startRedisOnce(ctx context.Context, o RedisOptions) (*Redis, error) {
	port, err := freePortOr(o.Port)
	if err != nil {
		return nil, err
	}
	addr := net.JoinHostPort(o.IP, strconv.Itoa(port))
	cmd := exec.Command(o.Bin, append([]string{
		"--bind", o.IP, "--port", strconv.Itoa(port),
		"--save", "", "--appendonly", "no", "--dir", o.Dir,
		"--daemonize", "no", "--loglevel", "warning"}, o.Args...)...)
	p, err := start("redis", cmd, o.Logs)
	if err != nil {
		return nil, err
	}
	r := &Redis{Process: p, Addr: addr, URL: "redis://" + addr + "/0"}
	deadline := time.Now().Add(20 * time.Second)
	for {
		if exited, err := p.Exited(); exited {
			return nil, p.failed("redis-server on %s exited during start: %v", addr, err)
		}
		if err := pingRedis(addr); err == nil {
			if !listensOn(p.cmd.Process.Pid, port) {
				return nil, p.failed("another process answers on %s, the port redis-server was to bind", addr)
			}
			return r, nil
		}
		if time.Now().After(deadline) {
			_ = p.Stop(5 * time.Second)
			return nil, fmt.Errorf("redis-server on %s not ready after 20s\n--- its last log lines ---\n%s", addr, p.log.String())
		}
		select {
		case <-ctx.Done():
			_ = p.Stop(5 * time.Second)
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// pingRedis sends PING in Redis's inline protocol and expects +PONG.
func pingRedis(addr string) error {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	buf := make([]byte, 16)
	n, err := c.Read(buf)
	if err != nil {
		return err
	}
	if !strings.HasPrefix(string(buf[:n]), "+PONG") {
		return errors.New("unexpected answer to PING: " + strings.TrimSpace(string(buf[:n])))
	}
	return nil
}
