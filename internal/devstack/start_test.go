package devstack

import (
	"context"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// impostor serves on a port as another process would that took it first:
// it answers every health check with 200.
func impostor(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().(*net.TCPAddr).Port
}

// handOutFirst makes the next port choice return taken, then free ones.
func handOutFirst(t *testing.T, taken int) *atomic.Int32 {
	t.Helper()
	var calls atomic.Int32
	choosePort = func() (int, error) {
		if calls.Add(1) == 1 {
			return taken, nil
		}
		return FreePort()
	}
	t.Cleanup(func() { choosePort = FreePort })
	return &calls
}

func requireTool(t *testing.T, name string) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a real server")
	}
	if _, err := FindTool(name); err != nil {
		t.Skip(err)
	}
}

// A port taken between choosing and binding: the server is started again on
// another, and what it answers is really the server started.
func TestMinIOStartsAgainOnAPortTakenMeanwhile(t *testing.T) {
	requireTool(t, "minio")
	taken := impostor(t)
	calls := handOutFirst(t, taken)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	m, err := StartMinIO(ctx, MinIOOptions{DataDir: t.TempDir(), AccessKey: "devstack", SecretKey: "devstack-secret"})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Stop(10 * time.Second)
	if strings.HasSuffix(m.Endpoint, ":"+strconv.Itoa(taken)) || calls.Load() < 3 {
		t.Errorf("minio at %s after %d port choices; want it started again off the taken port %d", m.Endpoint, calls.Load(), taken)
	}
	resp, err := http.Get("http://" + m.Endpoint + "/minio/health/cluster")
	if err != nil || resp.StatusCode != http.StatusOK || resp.Header.Get("Server") == "" {
		t.Errorf("the started minio does not answer: %v %v", resp, err)
	}
}

// With its ports fixed by the caller there is nothing to choose again: the
// error says why the server failed, from its own log.
func TestMinIOStartFailureKeepsTheLog(t *testing.T) {
	requireTool(t, "minio")
	ln, err := net.Listen("tcp", "127.0.0.1:0") // holds the port, answers nothing
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	taken := ln.Addr().(*net.TCPAddr).Port
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	console, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	m, err := StartMinIO(ctx, MinIOOptions{DataDir: t.TempDir(), Port: taken, ConsolePort: console, AccessKey: "devstack", SecretKey: "devstack-secret"})
	if err == nil {
		m.Stop(10 * time.Second)
		t.Fatal("minio started on a port another process holds")
	}
	if !strings.Contains(err.Error(), "its last log lines") || !strings.Contains(err.Error(), strconv.Itoa(taken)) {
		t.Errorf("error %q; want the failed server's log and the port", err)
	}
}

func TestTemporalStartsAgainOnAPortTakenMeanwhile(t *testing.T) {
	requireTool(t, "temporal")
	taken := impostor(t)
	calls := handOutFirst(t, taken)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	tp, err := StartTemporal(ctx, TemporalOptions{Headless: true})
	if err != nil {
		t.Fatal(err)
	}
	defer tp.Stop(10 * time.Second)
	if strings.HasSuffix(tp.HostPort, ":"+strconv.Itoa(taken)) || calls.Load() < 4 {
		t.Errorf("temporal at %s after %d port choices; want it started again off the taken port %d", tp.HostPort, calls.Load(), taken)
	}
}

func TestTail(t *testing.T) {
	tl := &tail{max: 10}
	tl.Write([]byte("0123456789"))
	tl.Write([]byte("abc\n"))
	if got := tl.String(); got != "456789abc" {
		t.Errorf("tail = %q", got)
	}
}
