package metrics

import (
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// The SDK tags one metric differently at different places; the export
// stays valid, with Prometheus's names for counters and timers.
func TestSDKHandlerNamesAndMixedTags(t *testing.T) {
	h := SDKHandler().WithTags(map[string]string{"namespace": "default"})
	h.WithTags(map[string]string{"task_queue": "compress"}).Counter("temporal_test_poll").Inc(2)
	h.WithTags(map[string]string{"worker_type": "ActivityWorker"}).Counter("temporal_test_poll").Inc(3)
	h.Gauge("temporal_test_slots_available").Update(7)
	h.WithTags(map[string]string{"activity_type": "CompressBatch"}).Timer("temporal_test_latency").Record(30 * time.Millisecond)

	rec := httptest.NewRecorder()
	Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body := rec.Body.String()
	if rec.Code != 200 {
		t.Fatalf("%d %s", rec.Code, body)
	}
	for _, want := range []string{
		`temporal_test_poll_total{namespace="default",task_queue="compress",worker_type=""} 2`,
		`temporal_test_poll_total{namespace="default",task_queue="",worker_type="ActivityWorker"} 3`,
		`temporal_test_slots_available{namespace="default"} 7`,
		`temporal_test_latency_seconds_bucket{activity_type="CompressBatch",namespace="default",le="0.05"} 1`,
		`temporal_test_latency_seconds_bucket{activity_type="CompressBatch",namespace="default",le="0.025"} 0`,
		`go_goroutines`, `process_cpu_seconds_total`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("missing %s in\n%s", want, grep(body, "temporal_test"))
		}
	}
}

func grep(body, s string) string {
	var out []string
	for _, l := range strings.Split(body, "\n") {
		if strings.Contains(l, s) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
