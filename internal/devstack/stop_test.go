package devstack

import (
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// A server that ignores its interrupt is killed at the stack's exit, and
// the stack says so: its data dir may be half-written.
func TestStopSayingTellsOfAKill(t *testing.T) {
	ready := make(chan struct{})
	var once sync.Once
	logs := writerFunc(func(p []byte) (int, error) { once.Do(func() { close(ready) }); return len(p), nil })
	p, err := start("stubborn", exec.Command("sh", "-c", `trap "" INT; echo ready; exec sleep 600`), logs)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Stop(time.Second) })
	<-ready // the trap is set: the interrupt is ignored from here on
	var said []string
	o := Output{Say: func(format string, args ...any) { said = append(said, fmt.Sprintf(format, args...)) }}
	stopSaying(o, p, 100*time.Millisecond)
	if len(said) != 1 || !strings.Contains(said[0], "stubborn did not stop") || !strings.Contains(said[0], "killed") {
		t.Fatalf("said %q, want one line saying stubborn was killed", said)
	}
	if exited, _ := p.Exited(); !exited {
		t.Fatal("the stubborn process still runs")
	}
}
