package gate

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"testing"
	"time"

	engine "github.com/edgeflow/edgeflow/internal/admit"
)

// A gate whose Temporal hangs (the dev server frozen with SIGSTOP: its
// connections stay open and nothing answers) answers every request from
// its memory and Redis, and keeps admitting new visitors past the room's
// snapshot_max_age_seconds (the default, 120) on the shared counters.
// Before, from the snapshot's maximum age on, every new visitor was
// queued for as long as Temporal hung.
func TestGateAnswersWhileTemporalHangs(t *testing.T) {
	if env == nil {
		t.Skip("no test stack (-short)")
	}
	// Twelve-second minutes, so that the snapshot's maximum age (120 s) is
	// ten room minutes: past it, only the outage's rules admit anyone.
	s := engine.Settings{Name: fmt.Sprintf("hung-%d", time.Now().UnixNano()%1e6), Path: "/hung/",
		TotalActiveUsers: 200, NewUsersPerMinute: 20, QueueingStatusCode: http.StatusTooManyRequests}
	rc := createRoom(t, s, 12)
	o := newOrigin(t, nil)
	g := startGate(t, "hung", "hung-1", o.URL, "--redis-url", env.Redis.URL)
	eventually(t, time.Minute, "the gate holds the room's snapshot", func() (bool, string) {
		return !g.roomMinute(t, s.Name).IsZero(), "no snapshot yet"
	})
	if !arrive(t, g, s.Path+"before") {
		t.Fatal("a new visitor was not admitted before Temporal hung")
	}

	thaw, err := env.Temporal.Freeze()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		thaw()
		// The room publishes again before the next test runs.
		eventually(t, 2*time.Minute, "the room answers again", func() (bool, string) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_, err := rc.Snapshot(ctx, s.Name)
			return err == nil, fmt.Sprint(err)
		})
	})

	// New visitors keep coming; every request must be answered (the
	// client gives up after 10 s), each one let in or queued.
	client := &http.Client{Timeout: 10 * time.Second}
	var admitted, queued, pastMaxAge int
	n := 0
	eventually(t, 5*time.Minute, "a new visitor admitted on a snapshot past its maximum age while Temporal hangs", func() (bool, string) {
		n++
		resp, err := client.Get(g.URL + s.Path + "v" + strconv.Itoa(n))
		if err != nil {
			t.Fatalf("request %d while Temporal hangs: %v", n, err)
		}
		resp.Body.Close()
		switch resp.StatusCode {
		case http.StatusOK:
			admitted++
		case http.StatusTooManyRequests:
			queued++
		default:
			t.Fatalf("request %d while Temporal hangs: answered %d", n, resp.StatusCode)
		}
		var stale bool
		for _, r := range g.status(t).Rooms {
			if r.Room == s.Name {
				stale = r.Stale
			}
		}
		if stale && resp.StatusCode == http.StatusOK {
			pastMaxAge++
		}
		time.Sleep(500 * time.Millisecond) // one new visitor every half second: 120 a room minute asked of 20
		return pastMaxAge >= 3, fmt.Sprintf("%d admitted (%d past the maximum age), %d queued", admitted, pastMaxAge, queued)
	})
	t.Logf("while Temporal hung: %d requests answered, %d admitted (%d past the snapshot's maximum age), %d queued", n, admitted, pastMaxAge, queued)
}
