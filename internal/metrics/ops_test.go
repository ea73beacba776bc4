package metrics

import (
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
)

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func TestServeOpsServesMetricsAndTheProcessRoutes(t *testing.T) {
	ops, err := ServeOps("127.0.0.1:0", map[string]http.Handler{
		"GET /healthz": http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok\n") }),
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if strings.HasSuffix(ops.Addr, ":0") {
		t.Fatalf("Addr %q: want the port bound", ops.Addr)
	}
	if code, body := get(t, ops.MetricsURL()); code != http.StatusOK || !strings.Contains(body, "go_goroutines") {
		t.Errorf("/metrics: %d, %.200q", code, body)
	}
	if code, body := get(t, "http://"+ops.Addr+"/healthz"); code != http.StatusOK || body != "ok\n" {
		t.Errorf("/healthz: %d %q", code, body)
	}
	if code, _ := get(t, "http://"+ops.Addr+"/other"); code != http.StatusNotFound {
		t.Errorf("/other: %d, want 404", code)
	}
	if err := ops.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := http.Get(ops.MetricsURL()); err == nil {
		t.Error("still serving after Close")
	}
}

func TestServeOpsReportsATakenAddress(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if ops, err := ServeOps(ln.Addr().String(), nil, nil); err == nil {
		ops.Close()
		t.Fatal("served on a taken address")
	}
}
