package devstack

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Process is a started child process.
type Process struct {
	Name string
	cmd  *exec.Cmd
	done chan error
	// ended is closed when the process has ended; state says how.
	ended chan struct{}
	state *os.ProcessState
	log   *tail // the last lines of its output, for errors
}

func start(name string, cmd *exec.Cmd, logs io.Writer) (*Process, error) {
	if logs == nil {
		logs = io.Discard
	}
	tl := &tail{max: 8 << 10}
	w := io.MultiWriter(logs, tl)
	cmd.Stdout = w
	cmd.Stderr = w
	cmd.SysProcAttr = childAttr()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &Process{Name: name, cmd: cmd, done: make(chan error, 1), ended: make(chan struct{}), log: tl}
	go func() {
		err := cmd.Wait()
		p.state = cmd.ProcessState
		close(p.ended)
		p.done <- err
	}()
	return p, nil
}

// Exited reports, without blocking, whether the process has ended.
func (p *Process) Exited() (bool, error) {
	select {
	case err := <-p.done:
		p.done <- err
		return true, err
	default:
		return false, nil
	}
}

// PID is the process's ID (benchmarks read its CPU time from /proc).
func (p *Process) PID() int { return p.cmd.Process.Pid }

// Ended is closed once the process has ended, for whatever reason.
func (p *Process) Ended() <-chan struct{} { return p.ended }

// Died describes how an ended process ended, with its last log lines.
func (p *Process) Died() string {
	<-p.ended
	msg := p.Name + " " + ExitDescription(p.state, nil)
	if l := p.log.String(); l != "" {
		msg += "\n--- its last log lines ---\n" + l
	}
	return msg
}

// Stop interrupts the process and waits for it, killing it after grace.
func (p *Process) Stop(grace time.Duration) error {
	if p == nil || p.cmd.Process == nil {
		return nil
	}
	if exited, _ := p.Exited(); exited {
		return nil
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGINT)
	select {
	case err := <-p.done:
		p.done <- err // a second Stop or Exited still sees the end
		return nil
	case <-time.After(grace):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		p.done <- <-p.done
		return fmt.Errorf("%s did not stop within %s and was killed", p.Name, grace)
	}
}

// Kill ends the process with SIGKILL, as a crash would (no shutdown: a
// Redis primary replicates nothing more), and waits for it.
func (p *Process) Kill() {
	if exited, _ := p.Exited(); exited || p.cmd.Process == nil {
		return
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.ended
}

// Freeze stops the process group with SIGSTOP, as a hung server would:
// its connections stay open and nothing answers. thaw (SIGCONT) is safe
// to call more than once, so a test can thaw mid-way and again in cleanup.
func (p *Process) Freeze() (thaw func(), err error) {
	pgid := -p.cmd.Process.Pid
	if err := syscall.Kill(pgid, syscall.SIGSTOP); err != nil {
		return func() {}, fmt.Errorf("freezing %s: %w", p.Name, err)
	}
	var once sync.Once
	return func() { once.Do(func() { _ = syscall.Kill(pgid, syscall.SIGCONT) }) }, nil
}

// startFailure is a server that started but did not become ready: it
// exited, or another process answers on its port. It carries the server's
// last log lines, which say why.
type startFailure struct {
	what string
	log  string
}

func (f *startFailure) Error() string {
	if f.log == "" {
		return f.what + " (it logged nothing)"
	}
	return f.what + "\n--- its last log lines ---\n" + f.log
}

// failed stops p (if it still runs) and describes why its start failed.
func (p *Process) failed(format string, args ...any) error {
	_ = p.Stop(5 * time.Second)
	return &startFailure{what: fmt.Sprintf(format, args...), log: p.log.String()}
}

// startAttempts bounds how often a server is started again on new ports.
const startAttempts = 5

// startServer runs attempt until a server is ready. A port chosen by
// FreePort can be taken by another process before the server binds it (a
// parallel test package starting its own server): when retry is set (some
// port is chosen by each attempt), such a start fails with a startFailure
// and is tried again on new ports; the error keeps every failed attempt's log.
func startServer[S any](ctx context.Context, name string, retry bool, attempt func() (S, error)) (S, error) {
	var failures []error
	for n := 1; ; n++ {
		s, err := attempt()
		var sf *startFailure
		if err == nil || !retry || !errors.As(err, &sf) || ctx.Err() != nil {
			if err != nil && len(failures) > 0 {
				err = fmt.Errorf("%w\n(after %d failed starts: %w)", err, len(failures), errors.Join(failures...))
			}
			return s, err
		}
		failures = append(failures, fmt.Errorf("start %d: %w", n, err))
		if n == startAttempts {
			var zero S
			return zero, fmt.Errorf("%s did not start in %d attempts on fresh ports:\n%w", name, startAttempts, errors.Join(failures...))
		}
	}
}

// tail keeps the last max bytes written to it.
type tail struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSpace(string(t.buf))
}

// listensOn reports whether process pid holds the socket listening on TCP
// port: a server answering on its port may be another one that bound the
// port first. It reads /proc; where there is none it cannot tell and
// reports true.
func listensOn(pid, port int) bool {
	inodes, ok := listeningInodes(port)
	if !ok {
		return true
	}
	fds, err := os.ReadDir(filepath.Join("/proc", strconv.Itoa(pid), "fd"))
	if err != nil {
		return true
	}
	for _, fd := range fds {
		link, err := os.Readlink(filepath.Join("/proc", strconv.Itoa(pid), "fd", fd.Name()))
		if err == nil && inodes[strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")] {
			return true
		}
	}
	return false
}

// listeningInodes are the socket inodes listening on port, from
// /proc/net/tcp and tcp6; ok is false when /proc cannot be read.
func listeningInodes(port int) (map[string]bool, bool) {
	inodes := map[string]bool{}
	read := false
	for _, file := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		data, err := os.ReadFile(file)
		if err != nil {
			continue
		}
		read = true
		sc := bufio.NewScanner(bytes.NewReader(data))
		for sc.Scan() {
			// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
			f := strings.Fields(sc.Text())
			if len(f) < 10 || f[3] != "0A" { // 0A: LISTEN
				continue
			}
			_, hexPort, ok := strings.Cut(f[1], ":")
			if p, err := strconv.ParseInt(hexPort, 16, 32); ok && err == nil && int(p) == port {
				inodes[f[9]] = true
			}
		}
	}
	return inodes, read
}
