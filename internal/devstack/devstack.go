// Package devstack starts the local parts the system runs on — the Temporal
// dev server, MinIO and Redis — as child processes, for `make run` and for
// integration tests (which use free ports so they never collide with a
// running stack). The binaries are the pinned ones `make tools` builds into
// .tools/bin, or ones already on PATH.
package devstack

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
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

// FreePort asks the kernel for a free TCP port on loopback. The port is free
// now, not when a process binds it later: servers started on one are
// started again on another if it was taken meanwhile (see startServer).
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
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
