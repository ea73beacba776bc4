package devstack

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// Child is a process the Supervisor keeps running: a worker, the edge, the
// gate. Every start runs Path with Args and Env afresh, so a restarted
// process is a new instance with the same settings (ports included).
type Child struct {
	Name string // unique: "compress-2"
	Path string
	Args []string
	Env  []string
	Logs io.Writer // its output; nil discards it
}

// SupervisorOptions tune the restart policy. Zero fields take the defaults.
type SupervisorOptions struct {
	// InitialBackoff is the wait before the first restart (1 s); every
	// further failure in a row doubles it, up to MaxBackoff (30 s).
	InitialBackoff time.Duration
	MaxBackoff     time.Duration
	// HealthyAfter is how long a process must run for its next death to
	// count as a new failure rather than one more in a row (30 s): the
	// backoff and the crash-loop count start again.
	HealthyAfter time.Duration
	// CrashLoop is how many failures in a row (each within HealthyAfter of
	// its start) mean the process cannot run: the supervisor gives up on it
	// and reports it on Failed (5).
	CrashLoop int
	// Say receives what happens: deaths, restarts, give-ups. Nil drops them.
	Say func(format string, args ...any)
}

func (o SupervisorOptions) withDefaults() SupervisorOptions {
	if o.InitialBackoff <= 0 {
		o.InitialBackoff = time.Second
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = 30 * time.Second
	}
	if o.HealthyAfter <= 0 {
		o.HealthyAfter = 30 * time.Second
	}
	if o.CrashLoop <= 0 {
		o.CrashLoop = 5
	}
	if o.Say == nil {
		o.Say = func(string, ...any) {}
	}
	return o
}

// Supervisor runs children and restarts the ones that die, with a backoff
// that grows while they keep dying young and resets once one has run
// healthily. A child that crash-loops is given up and reported on Failed:
// the caller decides what that means (make run stops the stack).
type Supervisor struct {
	o      SupervisorOptions
	failed chan error

	mu       sync.Mutex
	stopping bool
	children map[string]*supervised
	order    []string
	wg       sync.WaitGroup
}

type supervised struct {
	child    Child
	cmd      *exec.Cmd // the current instance; nil between instances
	exited   chan struct{}
	restarts int
	log      *tail
	wake     chan struct{} // cuts a backoff short when stopping
}

// NewSupervisor makes a supervisor; Start adds children to it.
func NewSupervisor(o SupervisorOptions) *Supervisor {
	return &Supervisor{o: o.withDefaults(), failed: make(chan error, 1), children: map[string]*supervised{}}
}

// Failed delivers the first child the supervisor gave up on, with why.
func (s *Supervisor) Failed() <-chan error { return s.failed }

// Start runs c and keeps it running. An error means its first start failed
// (the binary is missing, say): nothing was started.
func (s *Supervisor) Start(c Child) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopping {
		return errors.New("supervisor is stopping")
	}
	if _, dup := s.children[c.Name]; dup {
		return fmt.Errorf("a child named %s already runs", c.Name)
	}
	sv := &supervised{child: c, log: &tail{max: 4 << 10}, wake: make(chan struct{})}
	if err := s.launch(sv); err != nil {
		return err
	}
	s.children[c.Name] = sv
	s.order = append(s.order, c.Name)
	s.wg.Add(1)
	go s.watch(sv)
	return nil
}

// launch starts one instance of sv's child; the caller holds s.mu.
func (s *Supervisor) launch(sv *supervised) error {
	c := sv.child
	cmd := exec.Command(c.Path, c.Args...)
	cmd.Env = c.Env
	logs := c.Logs
	if logs == nil {
		logs = io.Discard
	}
	w := io.MultiWriter(logs, sv.log)
	cmd.Stdout, cmd.Stderr = w, w
	cmd.SysProcAttr = childAttr()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", c.Name, err)
	}
	sv.cmd = cmd
	sv.exited = make(chan struct{})
	return nil
}

// watch waits for each instance of sv to end and starts the next one.
func (s *Supervisor) watch(sv *supervised) {
	defer s.wg.Done()
	inARow := 0
	for {
		s.mu.Lock()
		cmd, exited := sv.cmd, sv.exited
		s.mu.Unlock()
		started := time.Now()
		err := cmd.Wait()
		ran := time.Since(started)
		close(exited)

		s.mu.Lock()
		if s.stopping {
			s.mu.Unlock()
			return
		}
		s.mu.Unlock()

		if ran >= s.o.HealthyAfter {
			inARow = 0
		}
		inARow++
		how := ExitDescription(cmd.ProcessState, err)
		if inARow >= s.o.CrashLoop {
			s.o.Say("%s %s after %s; it failed %d times in a row within %s of starting: giving up on it",
				sv.child.Name, how, ran.Round(time.Millisecond), inARow, s.o.HealthyAfter)
			select {
			case s.failed <- &CrashLoopError{Name: sv.child.Name, Failures: inARow, Last: how, Log: sv.log.String()}:
			default:
			}
			return
		}
		backoff := s.o.InitialBackoff << (inARow - 1)
		if backoff > s.o.MaxBackoff || backoff <= 0 {
			backoff = s.o.MaxBackoff
		}
		died := time.Now()
		s.o.Say("%s (pid %d) %s after %s; restarting it in %s", sv.child.Name, cmd.Process.Pid, how, ran.Round(time.Millisecond), backoff)
		select {
		case <-time.After(backoff):
		case <-sv.wake:
			return
		}
		for {
			s.mu.Lock()
			if s.stopping {
				s.mu.Unlock()
				return
			}
			err := s.launch(sv)
			if err == nil {
				sv.restarts++
				pid := sv.cmd.Process.Pid
				n := sv.restarts
				s.mu.Unlock()
				s.o.Say("%s is back (pid %d), %s after it died (restart %d)", sv.child.Name, pid, time.Since(died).Round(100*time.Millisecond), n)
				break
			}
			s.mu.Unlock()
			// The binary itself went away (a rebuild in progress): try again.
			s.o.Say("%s could not be restarted: %v; trying again in %s", sv.child.Name, err, s.o.MaxBackoff)
			select {
			case <-time.After(s.o.MaxBackoff):
			case <-sv.wake:
				return
			}
		}
	}
}

// Pid is the process id of a child's current instance (0 between instances).
func (s *Supervisor) Pid(name string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	sv, ok := s.children[name]
	if !ok || sv.cmd == nil || sv.cmd.Process == nil {
		return 0
	}
	select {
	case <-sv.exited:
		return 0
	default:
	}
	return sv.cmd.Process.Pid
}

// Restarts is how often a child has been started again.
func (s *Supervisor) Restarts(name string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sv, ok := s.children[name]; ok {
		return sv.restarts
	}
	return 0
}

// Stop interrupts every child (SIGINT to its process group, so workers
// drain their in-flight activities), waits up to grace, then kills what is
// left. Nothing is restarted once Stop has begun.
func (s *Supervisor) Stop(grace time.Duration) {
	s.mu.Lock()
	if s.stopping {
		s.mu.Unlock()
		s.wg.Wait()
		return
	}
	s.stopping = true
	var running []*supervised
	for _, name := range s.order {
		sv := s.children[name]
		close(sv.wake)
		running = append(running, sv)
		_ = syscall.Kill(-sv.cmd.Process.Pid, syscall.SIGINT) // an exited group is simply not found
	}
	s.mu.Unlock()
	deadline := time.After(grace)
	for _, sv := range running {
		select {
		case <-sv.exited:
		case <-deadline:
			for _, sv := range running {
				_ = syscall.Kill(-sv.cmd.Process.Pid, syscall.SIGKILL)
			}
		}
	}
	s.wg.Wait()
}

// CrashLoopError is a child the supervisor gave up on.
type CrashLoopError struct {
	Name     string
	Failures int
	Last     string // how it last ended
	Log      string // its last log lines
}

func (e *CrashLoopError) Error() string {
	msg := fmt.Sprintf("%s keeps dying (%d times in a row soon after starting; last: %s)", e.Name, e.Failures, e.Last)
	if e.Log != "" {
		msg += "\n--- its last log lines ---\n" + e.Log
	}
	return msg
}

// ExitDescription says how a process ended, for people: "exited with code
// 2", "was killed by signal SIGKILL (killed)".
func ExitDescription(state *os.ProcessState, waitErr error) string {
	if state == nil {
		if waitErr != nil {
			return "ended: " + waitErr.Error()
		}
		return "ended"
	}
	if st, ok := state.Sys().(syscall.WaitStatus); ok {
		switch {
		case st.Signaled():
			sig := st.Signal()
			return fmt.Sprintf("was killed by signal %s (%s)", signalName(sig), sig)
		case st.Exited():
			return fmt.Sprintf("exited with code %d", st.ExitStatus())
		}
	}
	if waitErr != nil {
		return "ended: " + waitErr.Error()
	}
	return "exited with code 0"
}

func signalName(sig syscall.Signal) string {
	switch sig {
	case syscall.SIGKILL:
		return "SIGKILL"
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGSEGV:
		return "SIGSEGV"
	case syscall.SIGABRT:
		return "SIGABRT"
	case syscall.SIGQUIT:
		return "SIGQUIT"
	case syscall.SIGHUP:
		return "SIGHUP"
	}
	return fmt.Sprintf("%d", int(sig))
}
