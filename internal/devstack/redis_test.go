package devstack

import (
	"context"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A port taken between choosing and binding: redis-server is started again
// on another, and the one answering PING is the one started.
func TestRedisStartsAgainOnAPortTakenMeanwhile(t *testing.T) {
	requireTool(t, "redis-server")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	taken := ln.Addr().(*net.TCPAddr).Port
	calls := handOutFirst(t, taken)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r, err := StartRedis(ctx, RedisOptions{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Stop(10 * time.Second)
	if strings.HasSuffix(r.Addr, ":"+strconv.Itoa(taken)) || calls.Load() < 2 {
		t.Errorf("redis at %s after %d port choices; want it started again off the taken port %d", r.Addr, calls.Load(), taken)
	}
	if err := pingRedis(r.Addr); err != nil {
		t.Errorf("the started redis does not answer PING: %v", err)
	}
	if r.URL != "redis://"+r.Addr+"/0" {
		t.Errorf("URL %q", r.URL)
	}
}
