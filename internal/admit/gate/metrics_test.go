package gate

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"

	"github.com/edgeflow/edgeflow/internal/admit"
)

// The gate's metrics: every outcome of a known room exported at zero
// before the first request, then admissions and queued requests counted,
// the room's queue, slots and snapshot age read from its snapshot, all
// passing Prometheus's own lint and a pedantic registry.
func TestGateMetrics(t *testing.T) {
	h := newHarness(t, admit.Settings{Name: "shop"})
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(h.g.Collector())
	if v := metricValue(t, reg, "edgeflow_gate_requests_total", "room", "shop", "outcome", "admit"); v != 0 {
		t.Errorf("admissions before any request: %v", v)
	}
	for _, v := range []*visitor{newVisitor(), newVisitor(), newVisitor()} {
		h.get(v, "/")
	}
	h.advance(3 * time.Second)
	if v := metricValue(t, reg, "edgeflow_gate_requests_total", "room", "shop", "outcome", "admit"); v != 2 {
		t.Errorf("admissions: %v, want 2 (the room's limit)", v)
	}
	if v := metricValue(t, reg, "edgeflow_gate_requests_total", "room", "shop", "outcome", "queue"); v != 1 {
		t.Errorf("queued: %v, want 1", v)
	}
	if v := metricValue(t, reg, "edgeflow_gate_snapshot_age_seconds", "room", "shop"); v < 3 {
		t.Errorf("snapshot age %v s, want at least the 3 s the clock moved", v)
	}
	if v := metricValue(t, reg, "edgeflow_room_slots_available", "room", "shop"); v != 2 {
		t.Errorf("slots available in the snapshot: %v, want 2", v)
	}
	metricValue(t, reg, "edgeflow_room_waiting_visitors", "room", "shop")
	problems, err := testutil.CollectAndLint(h.g.Collector())
	if err != nil || len(problems) > 0 {
		t.Errorf("lint: %v %v", problems, err)
	}
}

// metricValue gathers reg and returns the value of name with the labels
// (name, value pairs), failing the test when there is none.
func metricValue(t *testing.T, reg *prometheus.Registry, name string, labels ...string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	next:
		for _, m := range f.Metric {
			for i := 0; i+1 < len(labels); i += 2 {
				if labelValue(m, labels[i]) != labels[i+1] {
					continue next
				}
			}
			switch {
			case m.Counter != nil:
				return m.Counter.GetValue()
			case m.Gauge != nil:
				return m.Gauge.GetValue()
			}
		}
	}
	t.Fatalf("no %s%v", name, labels)
	return 0
}

func labelValue(m *dto.Metric, name string) string {
	for _, l := range m.Label {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}
