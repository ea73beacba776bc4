package gate

import (
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/edgeflow/edgeflow/internal/admit"
)

// queuedRoom is a room that queues every visitor, so every request gets
// the room's page.
func queuedRoom(page string) admit.Settings {
	return admit.Settings{Name: "shop", TotalActiveUsers: 5, NewUsersPerMinute: 5, QueueAll: true, CustomPageHTML: page}
}

const defaultPageMarker = "<title>You are in line</title>"

// A page naming a partial reads no file, whatever reaches the gate (the
// room refuses such a page when saved; a room saved before that, or a
// forged answer, still reaches the gate): the visitor gets the default
// page, never the file.
func TestCustomPageReadsNoFile(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "environ")
	if err := os.WriteFile(secret, []byte("GATE_COOKIE_KEYS=k1:c2VjcmV0"), 0o600); err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, queuedRoom("<p>ours</p>"))
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(h.g.Collector())
	pages := []string{
		"<p>{{> " + secret + "}}</p>",
		"{{#inWaitingRoom}}{{#waitTimeKnown}}x{{/waitTimeKnown}}{{>" + secret + "}}{{/inWaitingRoom}}",
		"{{> /dev/zero}}",
	}
	for _, page := range pages {
		if err := h.reg.Update(h.room.Snapshot, &page, h.now); err == nil || !strings.Contains(err.Error(), "partial") {
			t.Errorf("the gate took %q: %v", page, err)
		}
		res := h.get(newVisitor(), "/")
		if res.fromOrigin() || strings.Contains(res.body, "GATE_COOKIE_KEYS") || !strings.Contains(res.body, defaultPageMarker) {
			t.Errorf("page %q: %d %.300s", page, res.status, res.body)
		}
	}
	if v := metricValue(t, reg, "edgeflow_gate_page_fallbacks_total", "room", "shop", "reason", "error"); v != float64(len(pages)) {
		t.Errorf("fallbacks for error: %v, want %d", v, len(pages))
	}
}

// A page that renders over 256 KiB is replaced by the default page and
// counted; the gate does not render it again for a minute.
func TestCustomPageTooLarge(t *testing.T) {
	head, tail := "{{=< >=}}<#lastUpdated>", "</lastUpdated>"
	page := head + strings.Repeat("<.>", (admit.MaxCustomPageSize-len(head)-len(tail))/3) + tail
	h := newHarness(t, queuedRoom(page)) // a valid page: the room takes it
	var renders atomic.Int64
	h.g.renderClock = func() time.Time { renders.Add(1); return t0 } // never too slow: this is about size
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(h.g.Collector())
	if v := metricValue(t, reg, "edgeflow_gate_page_fallbacks_total", "room", "shop", "reason", "size"); v != 0 {
		t.Errorf("fallbacks before any request: %v", v)
	}
	for i := range 3 {
		res := h.get(newVisitor(), "/")
		if len(res.body) > admit.MaxRenderedPageBytes || !strings.Contains(res.body, defaultPageMarker) {
			t.Fatalf("request %d: %d bytes, not the default page", i, len(res.body))
		}
	}
	if v := metricValue(t, reg, "edgeflow_gate_page_fallbacks_total", "room", "shop", "reason", "size"); v != 3 {
		t.Errorf("fallbacks for size: %v, want 3", v)
	}
	rendered := renders.Load()
	if rendered == 0 {
		t.Fatal("the page was never rendered")
	}
	h.advance(pageRetryAfter - time.Second)
	h.get(newVisitor(), "/")
	if renders.Load() != rendered {
		t.Errorf("the page was rendered again within a minute")
	}
	h.advance(2 * time.Second)
	h.get(newVisitor(), "/")
	if renders.Load() == rendered {
		t.Errorf("the page was not tried again after a minute")
	}
	if problems, err := testutil.CollectAndLint(h.g.Collector()); err != nil || len(problems) > 0 {
		t.Errorf("lint: %v %v", problems, err)
	}
}

// A page whose rendering takes over 50 ms is replaced by the default page
// and counted; a minute later, rendering in time, it is served again.
func TestCustomPageTooSlow(t *testing.T) {
	page := "<p>custom</p>" + strings.Repeat("{{#inWaitingRoom}}<i>{{waitTime}}</i>{{/inWaitingRoom}}", 200)
	h := newHarness(t, queuedRoom(page))
	var clock atomic.Int64 // ms; every read of the render clock takes 1 ms
	h.g.renderClock = func() time.Time { return t0.Add(time.Duration(clock.Add(1)) * time.Millisecond) }
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(h.g.Collector())
	if res := h.get(newVisitor(), "/"); strings.Contains(res.body, "<p>custom</p>") || !strings.Contains(res.body, defaultPageMarker) {
		t.Fatalf("a slow page was served: %.200s", res.body)
	}
	if v := metricValue(t, reg, "edgeflow_gate_page_fallbacks_total", "room", "shop", "reason", "time"); v != 1 {
		t.Errorf("fallbacks for time: %v, want 1", v)
	}
	h.g.renderClock = func() time.Time { return t0 } // the machine is fast again
	h.advance(pageRetryAfter + time.Second)
	if res := h.get(newVisitor(), "/"); !strings.Contains(res.body, "<p>custom</p>") {
		t.Errorf("the page is not back a minute later: %.200s", res.body)
	}
	if res := h.get(newVisitor(), "/"); !strings.Contains(res.body, "<p>custom</p>") {
		t.Errorf("the page is not back for good: %.200s", res.body)
	}
	if v := metricValue(t, reg, "edgeflow_gate_page_fallbacks_total", "room", "shop", "reason", "time"); v != 1 {
		t.Errorf("fallbacks for time: %v, want still 1", v)
	}
}
