//go:build chaos

package chaos

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/edgeflow/edgeflow/internal/testenv"
)

// proc is a worker or edge process under a supervisor: when it dies (killed
// by the suite, or exiting because Temporal is away) it is started again
// after a short pause, as a process manager would.
type proc struct {
	name string
	bin  string
	env  []string
	logs *testenv.SyncBuffer

	mu       sync.Mutex
	cmd      *exec.Cmd
	exited   chan struct{}
	stopping bool
	held     chan struct{} // set while the process is held down (hold, release)
	starts   int
	kills    int
	done     chan struct{}
}

// supervise starts the binary name under a supervisor until the test ends.
func supervise(t testing.TB, name, bin string, env []string) *proc {
	t.Helper()
	p := &proc{name: name, bin: bin, env: append(os.Environ(), env...), logs: &testenv.SyncBuffer{}, done: make(chan struct{})}
	if err := p.start(); err != nil {
		t.Fatal(err)
	}
	go p.loop()
	t.Cleanup(func() {
		p.stop()
		if t.Failed() {
			path := filepath.Join(envDir(), name+".log")
			_ = os.WriteFile(path, p.logs.Bytes(), 0o644)
			t.Logf("%s log: %s", name, path)
		}
	})
	return p
}

func envDir() string {
	if env == nil {
		return os.TempDir()
	}
	return env.dir
}

// errStopping is start's answer once stop has begun.
var errStopping = fmt.Errorf("stopping")

func (p *proc) start() error {
	// Under the lock: stop either sees this process or this start sees stop.
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopping {
		return errStopping
	}
	cmd := exec.Command(p.bin)
	cmd.Env = p.env
	cmd.Stdout, cmd.Stderr = p.logs, p.logs
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", p.name, err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	p.cmd, p.exited = cmd, exited
	p.starts++
	return nil
}

// loop restarts the process whenever it ends, until stop.
func (p *proc) loop() {
	defer close(p.done)
	for {
		p.mu.Lock()
		exited := p.exited
		p.mu.Unlock()
		<-exited
		p.mu.Lock()
		stopping, held := p.stopping, p.held
		p.mu.Unlock()
		if stopping {
			return
		}
		if held != nil {
			<-held
			p.mu.Lock()
			stopping = p.stopping
			p.mu.Unlock()
			if stopping {
				return
			}
		}
		time.Sleep(300 * time.Millisecond)
		if err := p.start(); err == errStopping {
			return
		} else if err != nil {
			fmt.Fprintf(p.logs, "supervisor: %v\n", err)
			time.Sleep(time.Second)
			// Keep the loop alive with a closed channel: the next round retries.
			p.mu.Lock()
			p.exited = closedChan()
			p.mu.Unlock()
		}
	}
}

func closedChan() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}

// kill ends the process at once with SIGKILL, as a crash or an OOM kill
// would: no drain, no goodbye to Temporal. The supervisor starts it again.
func (p *proc) kill() {
	p.mu.Lock()
	cmd, exited := p.cmd, p.exited
	p.kills++
	p.mu.Unlock()
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	<-exited
}

// hold kills the process and keeps it down until release: a pool taken
// out for a while.
func (p *proc) hold() {
	p.mu.Lock()
	p.held = make(chan struct{})
	p.mu.Unlock()
	p.kill()
}

// release lets the supervisor start the held process again.
func (p *proc) release() {
	p.mu.Lock()
	held := p.held
	p.held = nil
	p.mu.Unlock()
	if held != nil {
		close(held)
	}
}

func (p *proc) stop() {
	p.mu.Lock()
	p.stopping = true
	cmd, exited, held := p.cmd, p.exited, p.held
	p.held = nil
	p.mu.Unlock()
	if held != nil {
		close(held)
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	<-exited
	<-p.done
}

// Starts is how often the process was started (the first start included).
func (p *proc) Starts() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.starts
}

// startsOf sums the starts of procs.
func startsOf(procs []*proc) int {
	n := 0
	for _, p := range procs {
		n += p.Starts()
	}
	return n
}

// Kills is how often the suite killed the process.
func (p *proc) Kills() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.kills
}

// logMatch waits for the process's output to match re and returns the
// first submatch (e.g. an address it logs).
func (p *proc) logMatch(t testing.TB, re *regexp.Regexp, within time.Duration) string {
	t.Helper()
	var found string
	eventually(t, within, p.name+" logs "+re.String(), func() (bool, string) {
		m := re.FindSubmatch(p.logs.Bytes())
		if m == nil {
			return false, tail(p.logs.Bytes())
		}
		found = string(m[1])
		return true, ""
	})
	return found
}

// lastMatch is the first submatch of re's last match in the output so far
// (a restarted process logs its new address after the old one).
func (p *proc) lastMatch(re *regexp.Regexp) string {
	all := re.FindAllSubmatch(p.logs.Bytes(), -1)
	if len(all) == 0 {
		return ""
	}
	return string(all[len(all)-1][1])
}

// matches counts re's matches in the output so far.
func (p *proc) matches(re *regexp.Regexp) int {
	return len(re.FindAllIndex(p.logs.Bytes(), -1))
}

func tail(b []byte) string {
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}

// killer kills a random process of procs every interval (jittered by half
// of it) until stop is closed; it returns the number of kills made.
func killer(procs []*proc, interval time.Duration, seed uint64, stop <-chan struct{}) <-chan int {
	done := make(chan int, 1)
	rng := rand.New(rand.NewPCG(seed, seed+1))
	go func() {
		kills := 0
		for {
			wait := interval/2 + time.Duration(rng.Int64N(int64(interval)))
			select {
			case <-stop:
				done <- kills
				return
			case <-time.After(wait):
			}
			procs[rng.IntN(len(procs))].kill()
			kills++
		}
	}()
	return done
}

func netListen() (net.Listener, error) { return net.Listen("tcp", "127.0.0.1:0") }
