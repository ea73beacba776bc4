package gate

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	engine "github.com/edgeflow/edgeflow/internal/admit"
	"github.com/edgeflow/edgeflow/internal/testenv"
)

// roomStatus runs `room status NAME --json` (the starter's binary) against
// the dev stack and the gates' Redis, and returns its answer and when it
// was asked.
func roomStatus(t *testing.T, room string, args ...string) (engine.LiveStatus, time.Time, string) {
	t.Helper()
	asked := time.Now()
	cmd := exec.Command(roomBin, append([]string{"status", room}, args...)...)
	cmd.Env = append(os.Environ(), "TEMPORAL_ADDRESS="+env.Temporal.HostPort, "ADMIT_REDIS_URL="+env.Redis.URL)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("room status %s: %v\n%s", room, err, out)
	}
	var st engine.LiveStatus
	if len(args) > 0 && args[0] == "--json" {
		if err := json.Unmarshal(out, &st); err != nil || st.Live == nil {
			t.Fatalf("room status --json: %v: %s", err, out)
		}
	}
	return st, asked, string(out)
}

// A spike of queued visitors at a gate shows in `room status --json`'s
// live view while the minute runs, in counts at most 5 s old when read
// (the room's minute is 60 s: its rollup shows them only at the next
// minute); once the gate is gone, the view says it is stale.
func TestLiveViewShowsASpikeWithinSeconds(t *testing.T) {
	testenv.Require(t, env)
	s := engine.Settings{Name: "it-live", Path: "/live/", TotalActiveUsers: 1, NewUsersPerMinute: 1, QueueingStatusCode: 429}
	createRoom(t, s, 0)
	o := newOrigin(t, nil)
	g := startGate(t, "it-live-dc", "it-live-1", o.URL, "--redis-url", env.Redis.URL)

	fresh := func(st engine.LiveStatus, asked time.Time) (bool, string) {
		l := st.Live
		switch {
		case l.Stale || l.AsOf == nil:
			return false, fmt.Sprintf("stale: %+v", l)
		case asked.Sub(*l.AsOf) > engine.LiveMaxAge || l.AgeSeconds > engine.LiveMaxAge.Seconds():
			return false, fmt.Sprintf("as of %s, %.1f s old, read at %s: older than %s", l.AsOf, l.AgeSeconds, asked, engine.LiveMaxAge)
		case len(l.DataCenters) != 1 || l.DataCenters[0].DataCenter != g.dc || l.DataCenters[0].Gates != 1:
			return false, fmt.Sprintf("data centers %+v", l.DataCenters)
		}
		return true, ""
	}
	eventually(t, 30*time.Second, "a fresh live view before the spike", func() (bool, string) {
		st, asked, _ := roomStatus(t, s.Name, "--json")
		return fresh(st, asked)
	})

	// The spike: 20 visitors at once, each checking in again when the
	// gate says (as the queue page makes a browser do). One is admitted.
	const spike = 20
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range spike {
		b := newBrowser(t)
		wg.Go(func() {
			for ctx.Err() == nil {
				admitted, wait := b.visit(t, g, "/live/")
				if admitted {
					wait = 2 * time.Second
				}
				select {
				case <-ctx.Done():
				case <-time.After(wait):
				}
			}
		})
	}
	stopVisitors := func() { stop(); wg.Wait() }
	defer stopVisitors()

	var st engine.LiveStatus
	eventually(t, 45*time.Second, "the spike in room status --json's live view", func() (bool, string) {
		var asked time.Time
		st, asked, _ = roomStatus(t, s.Name, "--json")
		if ok, why := fresh(st, asked); !ok {
			return false, why
		}
		if st.Live.QueuedUsers < spike-1 || st.Live.DataCenters[0].QueuedUsers != st.Live.QueuedUsers {
			return false, fmt.Sprintf("live view %+v, want %d queued", st.Live, spike-1)
		}
		return true, ""
	})
	t.Logf("live: %d queued, %d active, %d admitted this minute, %d min wait, %.1f s old; the minute rollup: %d queued",
		st.Live.QueuedUsers, st.Live.ActiveUsers, st.Live.AdmittedThisMinute, st.Live.EstimatedWaitMinutes, st.Live.AgeSeconds, st.EstimatedQueuedUsers)
	if st.Live.EstimatedWaitMinutes < spike-1 {
		t.Errorf("live wait %d min for %d queued at 1 a minute", st.Live.EstimatedWaitMinutes, st.Live.QueuedUsers)
	}
	_, _, human := roomStatus(t, s.Name)
	if !strings.Contains(human, "live (as of") || strings.Contains(human, "STALE") {
		t.Errorf("room status says:\n%s", human)
	}

	// The gate goes: nothing writes the data center's counts any more, and
	// the view says so rather than show them as live.
	stopVisitors()
	g.stop()
	eventually(t, 30*time.Second, "the live view marked stale once the gate is gone", func() (bool, string) {
		st, _, _ = roomStatus(t, s.Name, "--json")
		l := st.Live
		return l.Stale && len(l.DataCenters) == 1 && l.DataCenters[0].Stale && l.QueuedUsers == 0, fmt.Sprintf("%+v", l)
	})
	if _, _, human = roomStatus(t, s.Name); !strings.Contains(human, "STALE") {
		t.Errorf("room status with the gate gone says:\n%s", human)
	}
}
