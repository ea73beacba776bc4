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
}

// Redis is a running Redis server.
type Redis struct {
	*Process
	Addr string // host:port
	URL  string // redis://host:port/0
}

// StartRedis starts redis-server without persistence (the gates' counters
// live a few minutes) and waits until it answers PING. On a free port it
// retries on a new one if another process took the port meanwhile.
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
	attempts := 1
	if o.Port == 0 {
		attempts = 5
	}
	for attempt := 1; ; attempt++ {
		port, err := freePortOr(o.Port)
		if err != nil {
			return nil, err
		}
		r, err := startRedis(ctx, o, port)
		if err == nil || attempt >= attempts || ctx.Err() != nil {
			return r, err
		}
	}
}

func startRedis(ctx context.Context, o RedisOptions, port int) (*Redis, error) {
	addr := net.JoinHostPort(o.IP, strconv.Itoa(port))
	cmd := exec.Command(o.Bin,
		"--bind", o.IP, "--port", strconv.Itoa(port),
		"--save", "", "--appendonly", "no", "--dir", o.Dir,
		"--daemonize", "no", "--loglevel", "warning", "--databases", "16")
	p, err := start("redis", cmd, o.Logs)
	if err != nil {
		return nil, err
	}
	r := &Redis{Process: p, Addr: addr, URL: "redis://" + addr + "/0"}
	deadline := time.Now().Add(20 * time.Second)
	for {
		if exited, err := p.Exited(); exited {
			return nil, fmt.Errorf("redis-server on %s exited during start (port taken?): %v", addr, err)
		}
		if err := pingRedis(addr); err == nil {
			return r, nil
		}
		if time.Now().After(deadline) {
			_ = p.Stop(5 * time.Second)
			return nil, fmt.Errorf("redis-server on %s not ready after 20s", addr)
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
