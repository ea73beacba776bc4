// Package devstack starts the local parts the system runs on — the Temporal
// dev server, MinIO and Redis — as child processes, for `make run` and for
// integration tests (which use free ports so they never collide with a
// running stack). The binaries are the pinned ones `make tools` builds into
// .tools/bin, or ones already on PATH.
package devstack

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// RepoRoot finds the module root by walking up from the working directory.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("go.mod not found above the working directory")
		}
		dir = parent
	}
}

// FindTool locates a dev tool: $EDGEFLOW_<NAME>_BIN (dashes as
// underscores: EDGEFLOW_REDIS_SERVER_BIN), then the repo's .tools/bin, then
// PATH.
func FindTool(name string) (string, error) {
	envName := "EDGEFLOW_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_")) + "_BIN"
	if p := os.Getenv(envName); p != "" {
		return p, nil
	}
	if root, err := RepoRoot(); err == nil {
		p := filepath.Join(root, ".tools", "bin", name)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("%s not found in .tools/bin or on PATH: run `make tools` (or set %s)", name, envName)
}

// FreePort finds a free TCP port on loopback. The port is free now, not
// when a process binds it later: servers started on one are started again
// on another if it was taken meanwhile (see startServer). It is taken below
// the kernel's range of ephemeral ports where that range is known (Linux),
// so that no outgoing connection is given it as its local port before the
// server binds it (make cluster-test lost a gate so: its supervisor
// restarts it on the same port); elsewhere the kernel picks one.
func FreePort() (int, error) {
	if lo, _, ok := ephemeralRange(); ok && lo > lowestPort+1000 {
		for range 100 {
			p := lowestPort + rand.IntN(lo-lowestPort)
			if l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p))); err == nil {
				l.Close()
				return p, nil
			}
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// lowestPort is where FreePort starts looking: above the ports well-known
// servers use by default (PostgreSQL 5432, Redis 6379, MinIO 9000, the
// dev stack's own).
const lowestPort = 10000

// ephemeralRange is the kernel's range of local ports for outgoing
// connections (/proc/sys/net/ipv4/ip_local_port_range).
func ephemeralRange() (lo, hi int, ok bool) {
	data, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0, 0, false
	}
	f := strings.Fields(string(data))
	if len(f) != 2 {
		return 0, 0, false
	}
	lo, err1 := strconv.Atoi(f[0])
	hi, err2 := strconv.Atoi(f[1])
	return lo, hi, err1 == nil && err2 == nil && lo <= hi
}

// choosePort picks the ports left to this package (a variable so a test can
// hand out a taken one).
var choosePort = FreePort

func freePortOr(p int) (int, error) {
	if p != 0 {
		return p, nil
	}
	return choosePort()
}
