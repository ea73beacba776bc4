package devstack

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The test binary doubles as the supervised child: DEVSTACK_TEST_CHILD
// selects what it does instead of running the tests.
func TestMain(m *testing.M) {
	switch os.Getenv("DEVSTACK_TEST_CHILD") {
	case "":
		os.Exit(m.Run())
	case "serve": // a healthy worker: runs until interrupted, then drains
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, os.Interrupt)
		fmt.Printf("serving as pid %d\n", os.Getpid())
		<-sig
		fmt.Println("drained")
		os.Exit(0)
	case "crash": // a worker that cannot start
		fmt.Println("cannot reach Temporal: connection refused")
		os.Exit(3)
	case "stack": // a stack supervising one worker, until killed
		self, _ := os.Executable()
		s := NewSupervisor(SupervisorOptions{})
		env := append(os.Environ(), "DEVSTACK_TEST_CHILD=serve")
		// The child has written all it writes before its pid is told:
		// a child writing to a pipe whose reader died would die of
		// SIGPIPE, parent-death signal or not.
		serving := make(chan struct{})
		var once sync.Once
		logs := writerFunc(func(p []byte) (int, error) { once.Do(func() { close(serving) }); return len(p), nil })
		if err := s.Start(Child{Name: "compress-1", Path: self, Env: env, Logs: logs}); err != nil {
			fmt.Println(err)
			os.Exit(1)
		}
		<-serving
		fmt.Printf("child pid %d\n", s.Pid("compress-1"))
		select {}
	}
}

// kill -9 of the stack itself: its children die with it (the parent-death
// signal), instead of living on, holding ports, with no one to stop them.
func TestChildrenDieWithAKilledStack(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	stack := exec.Command(self)
	stack.Env = append(os.Environ(), "DEVSTACK_TEST_CHILD=stack")
	out, err := stack.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := stack.Start(); err != nil {
		t.Fatal(err)
	}
	defer stack.Process.Kill()
	var pid int
	if _, err := fmt.Fscanf(bufio.NewReader(out), "child pid %d\n", &pid); err != nil || pid == 0 {
		t.Fatalf("no child pid: %v", err)
	}
	if !alive(pid) {
		t.Fatalf("child %d is not running", pid)
	}
	if err := stack.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = stack.Wait()
	waitFor(t, "the child dies with its stack", 10*time.Second, func() bool { return !alive(pid) },
		func() string { return fmt.Sprintf("pid %d still runs", pid) })
}

// alive reports whether pid runs: it exists and is not a zombie waiting
// for a reaper.
func alive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// pid (comm) state ...: the state follows the last ')'.
	i := strings.LastIndexByte(string(stat), ')')
	return i < 0 || i+2 >= len(stat) || stat[i+2] != 'Z'
}

// events collects what the supervisor says.
type events struct {
	mu    sync.Mutex
	lines []string
}

func (e *events) say(format string, args ...any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.lines = append(e.lines, fmt.Sprintf(format, args...))
}

func (e *events) String() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return strings.Join(e.lines, "\n")
}

func child(t *testing.T, name, mode string) Child {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return Child{Name: name, Path: self, Env: append(os.Environ(), "DEVSTACK_TEST_CHILD="+mode)}
}

func waitFor(t *testing.T, what string, within time.Duration, ok func() bool, state func() string) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s\n%s", what, within, state())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// kill -9 of a supervised worker: it comes back as a new process, its
// sibling is untouched, the log says what died, how and when it came back,
// and nothing is reported as failed.
func TestSupervisorRestartsAKilledChild(t *testing.T) {
	var ev events
	s := NewSupervisor(SupervisorOptions{InitialBackoff: 200 * time.Millisecond, Say: ev.say})
	defer s.Stop(10 * time.Second)
	for _, name := range []string{"compress-1", "publish-1"} {
		if err := s.Start(child(t, name, "serve")); err != nil {
			t.Fatal(err)
		}
	}
	first, sibling := s.Pid("compress-1"), s.Pid("publish-1")
	if first == 0 || sibling == 0 {
		t.Fatalf("pids %d %d", first, sibling)
	}
	if err := syscall.Kill(first, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "compress-1 is back as a new process", 10*time.Second, func() bool {
		pid := s.Pid("compress-1")
		return pid != 0 && pid != first
	}, ev.String)
	if s.Restarts("compress-1") != 1 || s.Restarts("publish-1") != 0 || s.Pid("publish-1") != sibling {
		t.Errorf("restarts %d/%d, sibling pid %d→%d", s.Restarts("compress-1"), s.Restarts("publish-1"), sibling, s.Pid("publish-1"))
	}
	log := ev.String()
	for _, want := range []string{fmt.Sprintf("compress-1 (pid %d) was killed by signal SIGKILL", first), "restarting it in 200ms", "compress-1 is back (pid"} {
		if !strings.Contains(log, want) {
			t.Errorf("the log lacks %q:\n%s", want, log)
		}
	}
	select {
	case err := <-s.Failed():
		t.Fatalf("reported failed: %v", err)
	default:
	}
}

// A child that dies young again and again waits longer each time, and after
// CrashLoop failures is given up with its exit code and last log lines.
func TestSupervisorGivesUpOnACrashLoop(t *testing.T) {
	var ev events
	s := NewSupervisor(SupervisorOptions{InitialBackoff: 50 * time.Millisecond, CrashLoop: 4, Say: ev.say})
	defer s.Stop(10 * time.Second)
	start := time.Now()
	if err := s.Start(child(t, "migrate-1", "crash")); err != nil {
		t.Fatal(err)
	}
	var err error
	select {
	case err = <-s.Failed():
	case <-time.After(30 * time.Second):
		t.Fatalf("no give-up reported\n%s", ev.String())
	}
	// Backoffs 50, 100 and 200 ms before the fourth failure.
	if took := time.Since(start); took < 350*time.Millisecond {
		t.Errorf("gave up after %s: the backoff did not grow", took)
	}
	cl, ok := err.(*CrashLoopError)
	if !ok || cl.Name != "migrate-1" || cl.Failures != 4 || cl.Last != "exited with code 3" || !strings.Contains(cl.Log, "connection refused") {
		t.Fatalf("error %#v", err)
	}
	log := ev.String()
	for _, want := range []string{"restarting it in 50ms", "restarting it in 100ms", "restarting it in 200ms", "giving up on it"} {
		if !strings.Contains(log, want) {
			t.Errorf("the log lacks %q:\n%s", want, log)
		}
	}
}

// A child that ran healthily starts a new count: its next death waits the
// initial backoff again and is not a step towards a crash loop.
func TestSupervisorResetsTheBackoffAfterAHealthyRun(t *testing.T) {
	var ev events
	s := NewSupervisor(SupervisorOptions{InitialBackoff: 100 * time.Millisecond, HealthyAfter: 300 * time.Millisecond, CrashLoop: 2, Say: ev.say})
	defer s.Stop(10 * time.Second)
	if err := s.Start(child(t, "admit-1", "serve")); err != nil {
		t.Fatal(err)
	}
	for round := 1; round <= 3; round++ {
		pid := s.Pid("admit-1")
		time.Sleep(400 * time.Millisecond) // healthy: longer than HealthyAfter
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "admit-1 is back", 10*time.Second, func() bool { p := s.Pid("admit-1"); return p != 0 && p != pid }, ev.String)
	}
	if n := strings.Count(ev.String(), "restarting it in 100ms"); n != 3 {
		t.Errorf("%d restarts after the initial backoff, want 3:\n%s", n, ev.String())
	}
	select {
	case err := <-s.Failed():
		t.Fatalf("three healthy runs were taken for a crash loop: %v", err)
	default:
	}
}

// Stop interrupts every child, which drains and exits; none is restarted.
func TestSupervisorStopDrainsAndRestartsNothing(t *testing.T) {
	var ev events
	var out strings.Builder
	var mu sync.Mutex
	s := NewSupervisor(SupervisorOptions{InitialBackoff: 10 * time.Millisecond, Say: ev.say})
	c := child(t, "edge", "serve")
	c.Logs = writerFunc(func(p []byte) (int, error) { mu.Lock(); defer mu.Unlock(); return out.Write(p) })
	if err := s.Start(c); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the child serves", 10*time.Second, func() bool { mu.Lock(); defer mu.Unlock(); return strings.Contains(out.String(), "serving") }, ev.String)
	s.Stop(10 * time.Second)
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(out.String(), "drained") || s.Restarts("edge") != 0 || s.Pid("edge") != 0 {
		t.Errorf("output %q, restarts %d, pid %d\n%s", out.String(), s.Restarts("edge"), s.Pid("edge"), ev.String())
	}
}

func TestSupervisorRefusesAMissingBinary(t *testing.T) {
	s := NewSupervisor(SupervisorOptions{})
	defer s.Stop(time.Second)
	if err := s.Start(Child{Name: "gate", Path: "/nonexistent/gate"}); err == nil || !strings.Contains(err.Error(), "start gate") {
		t.Errorf("error %v", err)
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

func TestPoolSizes(t *testing.T) {
	queues := []string{"publish", "compress", "migrate", "admit"}
	env := func(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }
	got, err := PoolSizes(queues, env(map[string]string{"WORKERS": "compress=2, migrate=0", "COMPRESS_WORKERS": "3"}))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"publish": 1, "compress": 3, "migrate": 0, "admit": 1}
	for q, n := range want {
		if got[q] != n {
			t.Errorf("%s: %d, want %d", q, got[q], n)
		}
	}
	for _, bad := range []map[string]string{
		{"WORKERS": "gpu=2"}, {"WORKERS": "compress"}, {"COMPRESS_WORKERS": "lots"}, {"PUBLISH_WORKERS": "-1"}, {"WORKERS": "admit=99"},
	} {
		_, err := PoolSizes(queues, env(bad))
		if err == nil {
			t.Errorf("%v accepted", bad)
			continue
		}
		for k := range bad {
			if !strings.Contains(err.Error(), k) {
				t.Errorf("%v: error %q does not name %s", bad, err, k)
			}
		}
	}
}

// Every process gets its own ops port, the same across runs: pool k's
// process i at base+k+10(i−1), the edge just below the base.
func TestPlanProcesses(t *testing.T) {
	base, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	base = base%50000 + 10000 // room above it
	queues := []string{"publish", "compress", "migrate", "admit"}
	edge := fmt.Sprintf("127.0.0.1:%d", base-1)
	plan, err := PlanProcesses(queues, map[string]int{"publish": 1, "compress": 3, "migrate": 0, "admit": 1}, "127.0.0.1", "/bin", base, edge)
	if err != nil {
		t.Skip("a port of the plan is taken here:", err)
	}
	var got []string
	for _, p := range plan {
		got = append(got, p.Name+" "+p.Bin+" "+p.MetricsURL)
	}
	want := []string{
		fmt.Sprintf("publish-1 /bin/publish http://127.0.0.1:%d/metrics", base),
		fmt.Sprintf("compress-1 /bin/compress http://127.0.0.1:%d/metrics", base+1),
		fmt.Sprintf("compress-2 /bin/compress http://127.0.0.1:%d/metrics", base+11),
		fmt.Sprintf("compress-3 /bin/compress http://127.0.0.1:%d/metrics", base+21),
		fmt.Sprintf("admit-1 /bin/admit http://127.0.0.1:%d/metrics", base+3),
		fmt.Sprintf("edge /bin/edge http://%s/metrics", edge),
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("plan:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// A taken port is named before anything starts.
	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", base+11))
	if err != nil {
		t.Skip(err)
	}
	defer ln.Close()
	if _, err := PlanProcesses(queues, map[string]int{"compress": 2}, "127.0.0.1", "/bin", base, edge); err == nil || !strings.Contains(err.Error(), "compress-2") {
		t.Errorf("error %v; want compress-2's port named", err)
	}
}
