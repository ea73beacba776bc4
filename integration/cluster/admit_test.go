//go:build cluster

package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/edgeflow/edgeflow/integration/e2echeck"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	engine "github.com/edgeflow/edgeflow/internal/admit"
	"github.com/edgeflow/edgeflow/internal/admit/gate"
	"github.com/edgeflow/edgeflow/internal/admit/roomclient"
	"github.com/edgeflow/edgeflow/internal/devstack"
	"github.com/edgeflow/edgeflow/internal/keyring"
)

// admitMinute is the room's minute: short, so that the spike, the outage
// and the recovery each span several room minutes in a few real ones.
const admitMinute = 12 * time.Second

// The room's limits. Sessions of 4 room minutes (not renewed) let
// new_users_per_minute alone allow 32 active: total_active_users binds
// too, and the slots ending sessions free let admissions go on.
const (
	admitRate    = 8
	admitTotal   = 24
	admitSession = 4
)

// testAdmit puts a room in front of the edges' API. A few visitors arrive
// through all four gates of both data centers, well below the limits; each
// admitted one is let in by every gate (one cookie, every gate). Then a
// spike of new visitors arrives through all four gates, and once it admits
// its first dc1's Redis is stopped while it goes on: dc1's gates admit no
// one new in the room minute they find it gone and count on their own even
// split after (docs/admit.md, "Counters"), dc2's keep admitting on their
// Redis, admitted visitors pass every gate, and once Redis is back dc1's
// gates count on it again and admit. The room's counts, and the visitors'
// admissions by their cookies' times, never exceed either limit.
func testAdmit(t *testing.T) {
	f := &figures{product: "admit"}
	defer record(f)
	ctx := context.Background()
	target := "/libraries/"
	if len(publishedNames) > 0 {
		target += publishedNames[0]
	}
	s := engine.Settings{Name: fmt.Sprintf("cluster-%d", time.Now().UnixNano()%1e6), Path: "/libraries/",
		TotalActiveUsers: admitTotal, NewUsersPerMinute: admitRate, SessionDuration: admitSession, DisableSessionRenewal: true,
		QueueingStatusCode: 429, RefreshIntervalSeconds: 2}
	rc := roomclient.Client{C: tc}
	if _, err := rc.Create(ctx, s, roomclient.CreateOptions{MinuteSeconds: int(admitMinute / time.Second)}); err != nil {
		t.Fatal(err)
	}
	f.operations++
	defer func() { _, _ = rc.Delete(context.Background(), s.Name) }()
	// The test holds the gates' cookie key (the cluster's key file), so it
	// reads when each visitor was admitted: the gate's own decision time.
	keys, err := keyring.LoadFile(keyring.GateCookie.DevPath(dir))
	if err != nil {
		t.Fatal(err)
	}
	cookies = e2echeck.CookieReader{Codec: gate.Codec{Keys: keys}, Room: s.Name, Name: gate.CookieNameFor(s.CookieSuffix)}
	eventually(t, 2*time.Minute, "every gate holds the room's snapshot", func() (bool, string) {
		for _, g := range cl.Gates {
			if r := gateRoom(g, s.Name); r == nil || r.Stale {
				return false, g.Name + " has no fresh snapshot yet"
			}
		}
		return true, ""
	})
	say("admit: room %s on %s at all %d gates (%d new visitors a %s room minute, %d active, sessions of %d room minutes)",
		s.Name, s.Path, len(cl.Gates), admitRate, admitMinute, admitTotal, admitSession)

	// Steady: two visitors at each gate, below both limits.
	l := newLoad(target)
	var steady []*visitor
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range 2 * len(cl.Gates) {
		g := cl.Gates[i%len(cl.Gates)]
		wg.Go(func() {
			if v := l.arrive(g); v != nil {
				mu.Lock()
				steady = append(steady, v)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(steady) == 0 {
		t.Fatalf("nobody was admitted through four gates: %v", l.problems())
	}
	for _, v := range steady {
		for _, g := range cl.Gates {
			l.recheck(v, g)
		}
	}
	say("admit: %d of %d visitors admitted through %d gates, each let in by every gate", len(steady), 2*len(cl.Gates), len(cl.Gates))

	// The spike: four new visitors a second through the four gates, far
	// more than the room lets in; dc1's Redis stops once it admits.
	l.start()
	eventually(t, 2*time.Minute, "the spike's first admission", func() (bool, string) {
		n := l.admittedSince(l.spikeFrom, "")
		return n > 0, fmt.Sprintf("%d admitted", n)
	})
	before := len(l.result().admissions)
	if before >= admitTotal {
		t.Fatalf("%d admitted before the fault: the room is full, the fault would prove nothing", before)
	}
	if err := cl.StopRedis("dc1"); err != nil {
		t.Fatal(err)
	}
	f.faults++
	stoppedAt := time.Now()
	say("admit: stopped dc1's Redis (%s) mid-spike, %d admitted so far (limit %d)", cl.Redis["dc1"].Addr, before, admitTotal)
	eventually(t, time.Minute, "dc1's gates count without their Redis", func() (bool, string) {
		return gatesIn("dc1", gate.StateDown)
	})
	downAt := time.Now()
	say("admit: dc1's gates count on their own (%s)", gate.StateDown)
	// Four room minutes without it: the minute it failed and three of the
	// even split, the spike going on.
	time.Sleep(4 * admitMinute)
	if err := cl.StartRedisAgain(ctx, "dc1"); err != nil {
		t.Fatal(err)
	}
	backAt := time.Now()
	say("admit: dc1's Redis is back")
	eventually(t, 3*time.Minute, "dc1's gates count on their Redis again", func() (bool, string) {
		return gatesIn("dc1", gate.StateShared)
	})
	sharedAt := time.Now()
	// A new visitor at dc1 gets a slot only when the room's few slots
	// (total_active_users binds) are not all reserved for the queue or
	// taken elsewhere: 2m41s of the 3 minutes this waited before, on a
	// machine faster than a newcomer's.
	eventually(t, 6*time.Minute, "dc1's gates admit on their Redis again", func() (bool, string) {
		n := l.admittedSince(sharedAt, "dc1")
		return n > 0, fmt.Sprintf("%d admitted", n)
	})
	res := l.stop()
	res.save(t, filepath.Join(dir, "logs", "admit-admissions.tsv"))
	say("admit: the spike: %d requests, %d admitted (%d by dc1, %d by dc2 while dc1's Redis was down)",
		res.requests, len(res.admissions), res.count("dc1", downAt, backAt), res.count("dc2", downAt, backAt))

	// The way dc1's gates fail: no one new for the rest of the room minute
	// a gate finds its Redis gone in (it may have given the minute away).
	// Until then a gate may still admit on the Anywhere Redis, which
	// answers: its data center's scope is empty, or not yet asked.
	var failedOpen int64
	for _, g := range cl.Gates {
		if g.DataCenter != "dc1" {
			continue
		}
		failed := failedAt(t, g, stoppedAt)
		say("admit: %s found its Redis gone at %s", g.Name, failed.Format("15:04:05.000"))
		for _, a := range res.admissions {
			if a.gate == g.Name && !a.at.Before(failed) && engine.MinuteOf(a.at, admitMinute).Equal(engine.MinuteOf(failed, admitMinute)) {
				t.Errorf("%s admitted a visitor at %s, in the room minute it found its Redis gone in", a.gate, a.at.Format("15:04:05.000"))
				failedOpen++
			}
		}
	}
	if n := res.count("dc2", downAt, backAt); n == 0 {
		t.Errorf("dc2's gates admitted no one while dc1's Redis was down")
	}
	// The limits, as the visitors saw them and as the room counted.
	over := res.overLimits(t)
	roomMinutes, roomOver, roomUnder := roomCounts(t, rc, s.Name, res)

	f.operations += res.requests
	f.verified += int64(len(res.admissions)) + res.letIn + roomMinutes
	f.lost += over + failedOpen + roomOver + roomUnder + res.refused + int64(len(res.problems))
	for _, p := range res.problems {
		t.Errorf("visitor: %s", p)
	}
	if res.refused > 0 {
		t.Errorf("%d times an admitted visitor was refused by another gate", res.refused)
	}
}

// failedAt is when gate g logged, first after from, that its shared
// counters do not answer (the moment it stops admitting for the minute).
func failedAt(t *testing.T, g devstack.Gate, from time.Time) time.Time {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "logs", g.Name+".log"))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		var rec struct {
			Time time.Time `json:"time"`
			Msg  string    `json:"msg"`
		}
		if json.Unmarshal([]byte(line), &rec) == nil && strings.HasPrefix(rec.Msg, "shared counters unreachable") && !rec.Time.Before(from) {
			return rec.Time
		}
	}
	t.Fatalf("%s never logged its shared counters unreachable after %s, though its status said %s", g.Name, from.Format("15:04:05"), gate.StateDown)
	return time.Time{}
}

// gatesIn reports whether every gate of the data center is in the
// counters' state.
func gatesIn(dc, state string) (bool, string) {
	for _, g := range cl.Gates {
		if g.DataCenter != dc {
			continue
		}
		st, ok := gateStatus(g)
		if !ok || st.State != state {
			return false, fmt.Sprintf("%s is %q", g.Name, st.State)
		}
	}
	return true, ""
}

// roomCounts waits until the room has closed every minute the load ran in,
// then checks each against the limits (over) and against the admissions
// the visitors saw in it by their cookies (under: a minute the room counts
// short could hide an overshoot).
func roomCounts(t *testing.T, rc roomclient.Client, room string, res loadResult) (minutes, over, under int64) {
	last := engine.MinuteOf(res.last, admitMinute)
	var recent []engine.MinuteSummary
	eventually(t, 2*time.Minute, "the room closes the load's last minute", func() (bool, string) {
		d, err := rc.Describe(context.Background(), room)
		if err != nil {
			return false, err.Error()
		}
		recent = d.Recent
		for _, r := range recent {
			if !r.Minute.Before(last) {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d minutes closed", len(recent))
	})
	seen := res.perMinute()
	for _, r := range recent {
		minutes++
		if r.Admitted > admitRate || r.ActiveUsers > admitTotal {
			t.Errorf("room minute %s: %d admitted, %d active; limits %d and %d", r.Minute.Format("15:04:05"), r.Admitted, r.ActiveUsers, admitRate, admitTotal)
			over++
		}
		if n := seen[r.Minute.UTC()]; r.Admitted < n {
			t.Errorf("room minute %s: the room counted %d admissions, the visitors saw %d", r.Minute.Format("15:04:05"), r.Admitted, n)
			under += int64(n - r.Admitted)
		}
	}
	return minutes, over, under
}

func gateRoom(g devstack.Gate, room string) *gate.RoomStatus {
	st, ok := gateStatus(g)
	if !ok {
		return nil
	}
	for _, r := range st.Rooms {
		if r.Room == room && !r.Minute.IsZero() {
			return &r
		}
	}
	return nil
}
