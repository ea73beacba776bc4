// Package gate runs gate processes (cmd/gate, built here) in front of a
// test origin, on a real Temporal dev server with the admit worker in this
// process, and real Redis servers for their counters. It sits with Admit's
// room tests (integration/admit) but is its own package: those stop and
// start their workers, these keep one running for every test.
package gate

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.temporal.io/sdk/worker"

	engine "github.com/edgeflow/edgeflow/internal/admit"
	"github.com/edgeflow/edgeflow/internal/admit/gate"
	"github.com/edgeflow/edgeflow/internal/admit/roomclient"
	"github.com/edgeflow/edgeflow/internal/keyring"
	"github.com/edgeflow/edgeflow/internal/testenv"
	roomwf "github.com/edgeflow/edgeflow/workflows/admit"
	"github.com/edgeflow/edgeflow/workflows/admit/contract"
)

var (
	env        *testenv.Env
	gateBin    string
	roomBin    string // starters/room
	cookieKeys string // every gate's GATE_COOKIE_KEYS
)

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		os.Exit(m.Run())
	}
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	e, err := testenv.Start(testenv.Options{Temporal: true, Redis: true})
	if err != nil {
		fmt.Fprintln(os.Stderr, "testenv:", err)
		return 1
	}
	env = e
	defer e.Stop()
	dir, err := os.MkdirTemp("", "gate-it-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	for _, b := range []struct {
		bin *string
		pkg string
	}{{&gateBin, "./cmd/gate"}, {&roomBin, "./starters/room"}} {
		if *b.bin, err = testenv.BuildCommand(dir, b.pkg); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	key, err := keyring.Generate("it")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	cookieKeys = key.Encode()
	w := worker.New(env.Client, contract.TaskQueue, worker.Options{})
	roomwf.Register(w)
	if err := w.Start(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer w.Stop()
	return m.Run()
}

// gateProcess is a running cmd/gate.
type gateProcess struct {
	id, dc string
	URL    string // http://host:port
	health string // host:port of /status
	cmd    *exec.Cmd
	logs   *testenv.SyncBuffer
	exited chan struct{}
}

// stop stops the gate as a supervisor does (SIGINT, then SIGKILL after a
// grace period) and waits until it has exited.
func (g *gateProcess) stop() {
	_ = syscall.Kill(-g.cmd.Process.Pid, syscall.SIGINT)
	select {
	case <-g.exited:
	case <-time.After(20 * time.Second):
		_ = syscall.Kill(-g.cmd.Process.Pid, syscall.SIGKILL)
		<-g.exited
	}
}

var (
	listening       = regexp.MustCompile(`msg="gate listening".* addr=(127\.0\.0\.1:\d+)`)
	healthListening = regexp.MustCompile(`msg="health listening".* health=(127\.0\.0\.1:\d+)`)
)

// startGate runs a gate process in front of origin until the test ends.
// Its ports are port 0: it binds free ones itself and logs them, so no
// other process can take them between choosing and binding.
func startGate(t testing.TB, dc, id, origin string, args ...string) *gateProcess {
	t.Helper()
	logs := &testenv.SyncBuffer{}
	cmd := exec.Command(gateBin, append([]string{"--addr", "127.0.0.1:0", "--ops-addr", "127.0.0.1:0",
		"--origin", origin, "--data-center", dc, "--gate-id", id, "--hosts", "127.0.0.1,localhost",
		"--snapshot-every", "200ms", "--report-every", "200ms", "--discover-every", "300ms"}, args...)...)
	cmd.Env = append(os.Environ(), "TEMPORAL_ADDRESS="+env.Temporal.HostPort, "GATE_COOKIE_KEYS="+cookieKeys, "LOG_FORMAT=")
	cmd.Stdout, cmd.Stderr = logs, logs
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	g := &gateProcess{id: id, dc: dc, cmd: cmd, logs: logs, exited: exited}
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		g.stop()
		if t.Failed() {
			t.Logf("gate %s log:\n%s", id, logs.String())
		}
	})
	eventually(t, time.Minute, "gate "+id+" listens", func() (bool, string) {
		select {
		case <-exited:
			t.Fatalf("gate %s exited:\n%s", id, logs.String())
		default:
		}
		m, h := listening.FindStringSubmatch(logs.String()), healthListening.FindStringSubmatch(logs.String())
		if m == nil || h == nil {
			return false, logs.String()
		}
		g.URL, g.health = "http://"+m[1], h[1]
		return true, ""
	})
	return g
}

// status reads the gate's status document.
func (g *gateProcess) status(t testing.TB) gate.GateStatus {
	t.Helper()
	var st gate.GateStatus
	resp, err := http.Get("http://" + g.health + "/status")
	if err != nil {
		return st
	}
	defer resp.Body.Close()
	_ = json.NewDecoder(resp.Body).Decode(&st)
	return st
}

// admits is the gate's count of visitors it let into a room (its metrics).
func (g *gateProcess) admits(t *testing.T, room string) int {
	t.Helper()
	resp, err := http.Get("http://" + g.health + "/metrics")
	if err != nil {
		t.Errorf("gate %s metrics: %v", g.id, err)
		return 0
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	prefix := `edgeflow_gate_requests_total{outcome="admit",room="` + room + `"} `
	for line := range strings.SplitSeq(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, prefix); ok {
			n, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Errorf("gate %s metrics: %q", g.id, line)
			}
			return int(n)
		}
	}
	t.Errorf("gate %s metrics have no %s", g.id, prefix)
	return 0
}

// roomMinute is the minute of the room's snapshot the gate holds (zero if
// it holds none).
func (g *gateProcess) roomMinute(t *testing.T, room string) time.Time {
	for _, r := range g.status(t).Rooms {
		if r.Room == room {
			return r.Minute
		}
	}
	return time.Time{}
}

// eventually polls cond until it holds, failing with its last word at the
// deadline.
func eventually(t testing.TB, within time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	testenv.Eventually(t, within, 50*time.Millisecond, what, cond)
}

// origin is the site behind the gates: it answers 200 on every path and
// counts what reaches it.
type origin struct {
	URL string
	mu  sync.Mutex
	got int
}

func newOrigin(t *testing.T, handler http.Handler) *origin {
	t.Helper()
	o := &origin{}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		o.mu.Lock()
		o.got++
		o.mu.Unlock()
		if handler != nil {
			handler.ServeHTTP(w, r)
			return
		}
		_, _ = io.WriteString(w, "origin:"+r.URL.Path)
	}), ReadHeaderTimeout: 10 * time.Second}
	ln, err := netListen()
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	o.URL = "http://" + ln.Addr().String()
	return o
}

// createRoom creates a room for one test; it is deleted when the test
// ends, so the next test's gates do not route to it.
func createRoom(t testing.TB, s engine.Settings, minuteSeconds int) roomclient.Client {
	t.Helper()
	rc := roomclient.Client{C: env.Client}
	if _, err := rc.Create(context.Background(), s, roomclient.CreateOptions{MinuteSeconds: minuteSeconds}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = rc.Delete(context.Background(), s.Name) })
	return rc
}

// countWatch keeps, per minute and gate, the admissions the gate counted
// (its status page) and those the room holds from its reports (the room's
// open ledger), as the highest seen of each.
type countWatch struct {
	mu          sync.Mutex
	gateCounted map[time.Time]map[string]int
	roomHeld    map[time.Time]map[string]int
	roomReports map[time.Time]map[string]uint64 // the newest report's sequence number
}

func newCountWatch() *countWatch {
	return &countWatch{gateCounted: map[time.Time]map[string]int{}, roomHeld: map[time.Time]map[string]int{},
		roomReports: map[time.Time]map[string]uint64{}}
}

func (w *countWatch) run(ctx context.Context, t *testing.T, rc roomclient.Client, room string, gates []*gateProcess) {
	keep := func(m map[time.Time]map[string]int, minute time.Time, gate string, n int) {
		if m[minute] == nil {
			m[minute] = map[string]int{}
		}
		m[minute][gate] = max(m[minute][gate], n)
	}
	for ctx.Err() == nil {
		for _, g := range gates {
			for _, r := range g.status(t).Rooms {
				if r.Room != room {
					continue
				}
				w.mu.Lock()
				for _, c := range r.Counted {
					keep(w.gateCounted, c.Minute.UTC(), g.id, c.Admitted)
				}
				w.mu.Unlock()
			}
		}
		if d, err := rc.Describe(ctx, room); err == nil {
			w.mu.Lock()
			for _, rep := range d.Ledger.Open {
				keep(w.roomHeld, rep.Minute.UTC(), rep.Gate, rep.Admitted)
				if w.roomReports[rep.Minute.UTC()] == nil {
					w.roomReports[rep.Minute.UTC()] = map[string]uint64{}
				}
				w.roomReports[rep.Minute.UTC()][rep.Gate] = max(w.roomReports[rep.Minute.UTC()][rep.Gate], rep.Seq)
			}
			w.mu.Unlock()
		}
		select {
		case <-ctx.Done():
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func (w *countWatch) log(t *testing.T) {
	w.mu.Lock()
	defer w.mu.Unlock()
	minutes := make([]time.Time, 0, len(w.gateCounted))
	for m := range w.gateCounted {
		minutes = append(minutes, m)
	}
	for m := range w.roomHeld {
		if w.gateCounted[m] == nil {
			minutes = append(minutes, m)
		}
	}
	slices.SortFunc(minutes, time.Time.Compare)
	for _, m := range minutes {
		t.Logf("minute %s: gates counted %v; the room held %v (report seqs %v)", m.Format("15:04:05"), w.gateCounted[m], w.roomHeld[m], w.roomReports[m])
	}
}

// logLedger logs what the room holds of the gates' reports.
func logLedger(t *testing.T, rc roomclient.Client, room string) {
	d, err := rc.Describe(context.Background(), room)
	if err != nil {
		t.Logf("describe %s: %v", room, err)
		return
	}
	for _, c := range d.Ledger.Closed {
		t.Logf("closed minute %s: %d reports, %d admitted", c.Minute.Format("15:04:05"), c.Reports, c.Admitted)
	}
	for _, r := range d.Ledger.Open {
		t.Logf("open report %s %s seq %d: admitted %d seen %d final %t", r.Minute.Format("15:04:05"), r.Gate, r.Seq, r.Admitted, r.Seen, r.Final)
	}
}
