package gate

import (
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"testing"
	"time"

	engine "github.com/edgeflow/edgeflow/internal/admit"
	"github.com/edgeflow/edgeflow/internal/devstack"
)

// A gate process serves /metrics next to /status: its decisions per room
// and outcome (every outcome at zero before the first request), the room's
// queue and snapshot age, and the Temporal SDK's metrics of its client.
func TestGateServesMetrics(t *testing.T) {
	origin := httptest.NewServer(devstack.DemoOrigin())
	defer origin.Close()
	room := engine.Settings{Name: "it-metrics", Path: "/metrics-room", TotalActiveUsers: 1, NewUsersPerMinute: 1}
	createRoom(t, room, 0)
	g := startGate(t, "dev", "metrics-1", origin.URL, "--snapshot-every", "1s", "--discover-every", "1s")
	scrape := func() string {
		resp, err := http.Get("http://" + g.health + "/metrics")
		if err != nil {
			return err.Error()
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return string(body)
	}
	value := func(body, series string) float64 {
		m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(series) + ` (\S+)$`).FindStringSubmatch(body)
		if m == nil {
			return -1
		}
		v, _ := strconv.ParseFloat(m[1], 64)
		return v
	}
	admits := `edgeflow_gate_requests_total{outcome="admit",room="it-metrics"}`
	eventually(t, 60*time.Second, "the room's metrics at zero once the gate knows the room", func() (bool, string) {
		body := scrape()
		return value(body, admits) == 0 && value(body, `edgeflow_gate_snapshot_age_seconds{room="it-metrics"}`) >= 0, body
	})
	for range 3 {
		resp, err := newBrowser(t).c.Get(g.URL + "/metrics-room/")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	body := scrape()
	if v := value(body, admits); v != 1 {
		t.Errorf("%s = %v, want 1 (the room lets one in)", admits, v)
	}
	if v := value(body, `edgeflow_gate_requests_total{outcome="queue",room="it-metrics"}`); v != 2 {
		t.Errorf("queued requests %v, want 2", v)
	}
	for _, series := range []string{`edgeflow_room_waiting_visitors{room="it-metrics"}`, `edgeflow_room_slots_available{room="it-metrics"}`} {
		if value(body, series) < 0 {
			t.Errorf("no %s", series)
		}
	}
	if !regexp.MustCompile(`(?m)^temporal_request_total\{`).MatchString(body) {
		t.Errorf("no SDK metrics (temporal_request_total) in\n%s", body)
	}
}
