//go:build chaos

package chaos

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync"
	"syscall"
	"testing"
	"time"
)

// proc is a worker or edge process under a supervisor: when it dies (killed
// by the suite, or exiting because Temporal is away) it is started again
// after a short pause, as a process manager would.
type proc struct {
	name string
	bin  string
	env  []string
	logs *lockedBuffer

	mu       sync.Mutex
	cmd      *exec.Cmd
	exited   chan struct{}
	stopping bool
	starts   int
	kills    int
	done     chan struct{}
}

// supervise starts the binary name under a supervisor until the test ends.
func supervise(t testing.TB, name, bin string, env []string) *proc {
	t.Helper()
	p := &proc{name: name, bin: bin, env: append(os.Environ(), env...), logs: &lockedBuffer{}, done: make(chan struct{})}
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

func (p *proc) start() error {
	cmd := exec.Command(p.bin)
	cmd.Env = p.env
	cmd.Stdout, cmd.Stderr = p.logs, p.logs
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", p.name, err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	p.mu.Lock()
	p.cmd, p.exited = cmd, exited
	p.starts++
	p.mu.Unlock()
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
		stopping := p.stopping
		p.mu.Unlock()
		if stopping {
			return
		}
		time.Sleep(300 * time.Millisecond)
		if err := p.start(); err != nil {
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

func (p *proc) stop() {
	p.mu.Lock()
	p.stopping = true
	cmd, exited := p.cmd, p.exited
	p.mu.Unlock()
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	<-exited
	<-p.done
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

type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Clone(b.buf.Bytes())
}
