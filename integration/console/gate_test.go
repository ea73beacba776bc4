package console

import (
	"os/exec"
	"regexp"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/edgeflow/edgeflow/internal/testenv"
)

var gateListening = regexp.MustCompile(`msg="gate listening".* addr=(127\.0\.0\.1:\d+)`)

// runGate runs cmd/gate (bin) in front of origin, on the test's Temporal,
// until the test ends, and returns its URL once it listens.
func runGate(t *testing.T, bin, origin, cookieKeys string, environ []string) string {
	t.Helper()
	url, _ := runStoppableGate(t, bin, origin, cookieKeys, environ)
	return url
}

// runStoppableGate is runGate, and a function that stops the gate
// before the test ends (as a supervisor does: SIGINT, then SIGKILL).
func runStoppableGate(t *testing.T, bin, origin, cookieKeys string, environ []string) (string, func()) {
	t.Helper()
	logs := &testenv.SyncBuffer{}
	cmd := exec.Command(bin, "--addr", "127.0.0.1:0", "--ops-addr", "127.0.0.1:0", "--origin", origin,
		"--data-center", "local", "--gate-id", "console-it", "--hosts", "127.0.0.1,localhost",
		"--snapshot-every", "200ms", "--report-every", "200ms", "--discover-every", "300ms")
	cmd.Env = append(environ, "TEMPORAL_ADDRESS="+env.Temporal.HostPort, "GATE_COOKIE_KEYS="+cookieKeys, "LOG_FORMAT=")
	cmd.Stdout, cmd.Stderr = logs, logs
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGINT)
			select {
			case <-exited:
			case <-time.After(20 * time.Second):
				_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
				<-exited
			}
		})
	}
	t.Cleanup(func() {
		stop()
		if t.Failed() {
			t.Logf("gate log:\n%s", logs.String())
		}
	})
	deadline := time.Now().Add(time.Minute)
	for {
		select {
		case <-exited:
			t.Fatalf("the gate exited:\n%s", logs.String())
		default:
		}
		if m := gateListening.FindStringSubmatch(logs.String()); m != nil {
			return "http://" + m[1], stop
		}
		if time.Now().After(deadline) {
			t.Fatalf("the gate did not listen within a minute:\n%s", logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}
