package gate

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/edgeflow/edgeflow/internal/devstack"
	"github.com/edgeflow/edgeflow/internal/testenv"
)

// answer is one response as a visitor sees it.
type answer struct {
	status  int
	refresh string
	body    string
}

func get(t *testing.T, c *http.Client, url string, accept string) answer {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return answer{resp.StatusCode, resp.Header.Get("Refresh"), string(body)}
}

// The demo as `make run` lays it out — the demo origin behind a gate with
// its data center's Redis and the gate's default intervals, the demo room
// on "/" — then a room created with the room starter on /x/, as the README
// tells: the demo room admits its five and queues the sixth with exactly
// its status code (HTML or JSON); an admitted visitor stays admitted on a
// gate started after the first one stopped (same keys); and the new room
// takes effect on the running gate within seconds.
func TestDemoRoomThenARoomFromTheStarter(t *testing.T) {
	testenv.Require(t, env)
	origin := httptest.NewServer(devstack.DemoOrigin())
	defer origin.Close()
	demo := devstack.DemoRoom()
	rc := createRoom(t, demo, 0)
	defaults := []string{"--redis-url", env.Redis.URL, "--snapshot-every", "2s", "--report-every", "2s", "--discover-every", "3s"}
	g := startGate(t, "dev", "dev-1", origin.URL, defaults...)

	// Five new visitors fit whichever minute they land in (the room holds
	// five active users), unless the rollup runs before the gate reports
	// them: start early in a minute.
	eventually(t, 90*time.Second, "the gate holds the demo room's snapshot, early in its minute", func() (bool, string) {
		m := g.roomMinute(t, demo.Name)
		return !m.IsZero() && time.Since(m) < 40*time.Second, m.String()
	})
	var admitted []*browser
	for i := range demo.TotalActiveUsers {
		b := newBrowser(t)
		if a := get(t, b.c, g.URL+"/page", ""); a.status != 200 || !strings.Contains(a.body, "Welcome to the demo origin") {
			t.Fatalf("visitor %d of %d: %d %.200s, want the demo origin", i+1, demo.TotalActiveUsers, a.status, a.body)
		}
		admitted = append(admitted, b)
	}
	queued := get(t, newBrowser(t).c, g.URL+"/", "")
	if queued.status != demo.QueueingStatusCode || !strings.Contains(queued.body, "You are in line") {
		t.Fatalf("the sixth visitor: %d %.200s, want the queue page with the room's %d", queued.status, queued.body, demo.QueueingStatusCode)
	}
	if secs, err := strconv.Atoi(queued.refresh); err != nil || secs <= 0 {
		t.Errorf("queue page Refresh header %q, want seconds", queued.refresh)
	}
	asJSON := get(t, newBrowser(t).c, g.URL+"/", "application/json")
	var doc struct {
		CfWaitingRoom struct {
			InWaitingRoom bool `json:"inWaitingRoom"`
			WaitTimeKnown bool `json:"waitTimeKnown"`
		} `json:"cfWaitingRoom"`
	}
	if asJSON.status != demo.QueueingStatusCode || json.Unmarshal([]byte(asJSON.body), &doc) != nil || !doc.CfWaitingRoom.InWaitingRoom || asJSON.refresh == "" {
		t.Fatalf("a queued visitor asking for JSON: %d %q %.300s", asJSON.status, asJSON.refresh, asJSON.body)
	}

	// Across a restart: another gate process, the same cookie keys.
	g.stop()
	g2 := startGate(t, "dev", "dev-2", origin.URL, defaults...)
	eventually(t, 30*time.Second, "the new gate holds the demo room", func() (bool, string) {
		return !g2.roomMinute(t, demo.Name).IsZero(), ""
	})
	for i, b := range admitted {
		if a := get(t, b.c, g2.URL+"/", ""); a.status != 200 {
			t.Errorf("admitted visitor %d on the restarted gate: %d, want the origin's 200", i+1, a.status)
		}
	}

	// A room from the starter, on the running gate, within seconds.
	if a := get(t, newVisitorClient, g2.URL+"/x/", ""); a.status != demo.QueueingStatusCode {
		t.Fatalf("before the room exists /x/ is the demo room's (full): %d", a.status)
	}
	t.Cleanup(func() { _, _ = rc.Delete(context.Background(), "it-x") })
	created := time.Now()
	starter := exec.Command(roomBin, "create", "it-x", "--path", "/x/", "--total-active-users", "1",
		"--new-users-per-minute", "1", "--queueing-status-code", "202")
	starter.Env = append(os.Environ(), "TEMPORAL_ADDRESS="+env.Temporal.HostPort)
	if out, err := starter.CombinedOutput(); err != nil {
		t.Fatalf("room create: %v\n%s", err, out)
	}
	var first answer
	eventually(t, 15*time.Second, "the new room takes effect on the gate", func() (bool, string) {
		first = get(t, newVisitorClient, g2.URL+"/x/a", "")
		return first.status != demo.QueueingStatusCode, strconv.Itoa(first.status)
	})
	took := time.Since(created)
	t.Logf("the room created by the starter took effect %s after the command started", took.Round(10*time.Millisecond))
	if first.status != 200 {
		t.Errorf("the new room's first visitor: %d, want admitted", first.status)
	}
	if a := get(t, newVisitorClient, g2.URL+"/x/b", ""); a.status != 202 {
		t.Errorf("the new room's second visitor: %d, want exactly its queueing_status_code 202", a.status)
	}
	if a := get(t, newVisitorClient, g2.URL+"/y", ""); a.status != demo.QueueingStatusCode {
		t.Errorf("outside /x/ the demo room still decides: %d", a.status)
	}
	if took > 10*time.Second {
		t.Errorf("the new room took %s to take effect; want seconds", took)
	}
}

// The gate process enforces its header and body limits (431 and 413),
// before any room or the origin sees the request.
func TestRequestLimitsOfTheProcess(t *testing.T) {
	testenv.Require(t, env)
	o := newOrigin(t, nil)
	g := startGate(t, "dev", "limits-1", o.URL, "--max-header-kib", "2", "--max-body-bytes", "1024")
	req, _ := http.NewRequest(http.MethodGet, g.URL+"/", nil)
	req.Header.Set("X-Big", strings.Repeat("a", 8<<10))
	resp, err := newVisitorClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("8 KiB of headers past a 2 KiB limit: %d, want 431", resp.StatusCode)
	}
	resp, err = newVisitorClient.Post(g.URL+"/upload", "application/octet-stream", strings.NewReader(strings.Repeat("b", 4096)))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("a 4 KiB body past a 1 KiB limit: %d, want 413", resp.StatusCode)
	}
	o.mu.Lock()
	got := o.got
	o.mu.Unlock()
	if got != 0 {
		t.Errorf("%d oversized requests reached the origin", got)
	}
	if !arrive(t, g, "/fine") {
		t.Error("a request within the limits did not reach the origin")
	}
}
