package devstack

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// A frozen server is stopped, not dead (a hung server's connections stay
// open), and thawing it twice is harmless: tests thaw mid-way and in cleanup.
func TestFreezeStopsTheProcessAndThawResumesIt(t *testing.T) {
	p, err := start("sleeper", exec.Command("sleep", "600"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Kill)
	thaw, err := p.Freeze()
	if err != nil {
		t.Fatal(err)
	}
	waitState(t, p.PID(), "T")
	thaw()
	thaw()
	waitState(t, p.PID(), "S")
	if exited, _ := p.Exited(); exited {
		t.Fatal("the thawed process exited")
	}
}

// waitState waits for the process's state in /proc (T: stopped, S:
// sleeping); a signal's effect is asynchronous.
func waitState(t *testing.T, pid int, want string) {
	t.Helper()
	var state string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			t.Fatal(err)
		}
		// The state follows the command name, which is in parentheses.
		fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		if state = fields[0]; state == want {
			return
		}
	}
	t.Fatalf("process %d is in state %q, want %q", pid, state, want)
}
