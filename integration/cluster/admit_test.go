//go:build cluster

package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"sync"
	"testing"
	"time"

	engine "github.com/edgeflow/edgeflow/internal/admit"
	"github.com/edgeflow/edgeflow/internal/admit/gate"
	"github.com/edgeflow/edgeflow/internal/admit/roomclient"
	"github.com/edgeflow/edgeflow/internal/devstack"
)

// admitCap is the room's active-user limit. Sessions outlast the test
// (no renewal), so the visitors it admits all together never exceed it.
const admitCap = 30

// testAdmit puts a room in front of the edges' API and sends visitors
// through all four gates of both data centers; every admitted visitor must
// be let in by every other gate too (one cookie, every gate). Then dc1's
// Redis is stopped during a spike of new visitors: no gate fails, the
// room's limit holds, and admitted visitors stay admitted everywhere.
func testAdmit(t *testing.T) {
	f := &figures{product: "admit"}
	defer record(f)
	ctx := context.Background()
	target := "/libraries/"
	if len(publishedNames) > 0 {
		target += publishedNames[0]
	}
	s := engine.Settings{Name: fmt.Sprintf("cluster-%d", time.Now().UnixNano()%1e6), Path: "/libraries/",
		TotalActiveUsers: admitCap, NewUsersPerMinute: 200, SessionDuration: 30, DisableSessionRenewal: true,
		QueueingStatusCode: 429, RefreshIntervalSeconds: 2}
	rc := roomclient.Client{C: tc}
	if _, err := rc.Create(ctx, s, roomclient.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.operations++
	defer func() { _, _ = rc.Delete(context.Background(), s.Name) }()
	eventually(t, 2*time.Minute, "every gate holds the room's snapshot", func() (bool, string) {
		for _, g := range cl.Gates {
			if r := gateRoom(g, s.Name); r == nil || r.Stale {
				return false, g.Name + " has no fresh snapshot yet"
			}
		}
		return true, ""
	})
	say("admit: room %s on %s at all %d gates", s.Name, s.Path, len(cl.Gates))

	var admitted []*visitor
	arrive := func(n int, phase string) {
		var mu sync.Mutex
		var wg sync.WaitGroup
		for i := range n {
			g := cl.Gates[i%len(cl.Gates)]
			v := newVisitor(t)
			wg.Go(func() {
				in, err := v.visit(g, target)
				mu.Lock()
				defer mu.Unlock()
				f.operations++
				switch {
				case err != nil:
					t.Errorf("%s: a new visitor at %s: %v", phase, g.Name, err)
					f.lost++
				case in:
					admitted = append(admitted, v)
				}
			})
		}
		wg.Wait()
	}
	// Every admitted visitor is let in by every gate, in both data centers.
	crossCheck := func(phase string) {
		for _, v := range admitted {
			for _, g := range cl.Gates {
				f.operations++
				in, err := v.visit(g, target)
				if err != nil || !in {
					t.Errorf("%s: a visitor admitted earlier was refused by %s: %v", phase, g.Name, err)
					f.lost++
					continue
				}
				f.verified++
			}
		}
	}

	arrive(48, "steady")
	if len(admitted) == 0 {
		t.Fatal("nobody was admitted through four gates")
	}
	say("admit: %d of 48 visitors admitted through 4 gates (limit %d)", len(admitted), admitCap)
	crossCheck("steady")

	// dc1's Redis stopped during a spike.
	if err := cl.StopRedis("dc1"); err != nil {
		t.Fatal(err)
	}
	f.faults++
	say("admit: stopped dc1's Redis (%s)", cl.Redis["dc1"].Addr)
	before := len(admitted)
	// A gate finds its Redis gone on its next call to it: the spike's.
	arrive(120, "spike without dc1's Redis")
	for _, g := range cl.Gates {
		st, _ := gateStatus(g)
		say("admit: %s (%s) counts %s", g.Name, g.DataCenter, st.State)
	}
	say("admit: the spike: %d more admitted of 120 (%d in all)", len(admitted)-before, len(admitted))
	crossCheck("dc1's Redis down")
	if err := cl.StartRedisAgain(ctx, "dc1"); err != nil {
		t.Fatal(err)
	}
	say("admit: dc1's Redis is back")
	if len(admitted) > admitCap {
		t.Errorf("%d visitors admitted in all, over the room's limit of %d", len(admitted), admitCap)
		f.lost += int64(len(admitted) - admitCap)
	}
	f.verified++ // the limit held
}

// visitor is a browser: it keeps its cookie, which every gate on
// 127.0.0.1 receives (cookie jars ignore ports).
type visitor struct{ c *http.Client }

var visitorTransport = &http.Transport{MaxIdleConnsPerHost: 64}

func newVisitor(t *testing.T) *visitor {
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &visitor{c: &http.Client{Jar: jar, Timeout: 30 * time.Second, Transport: visitorTransport}}
}

// visit reports whether the gate let the visitor through to the edge (true)
// or queued it (false); any other answer is an error.
func (v *visitor) visit(g devstack.Gate, path string) (bool, error) {
	resp, err := v.c.Get(g.URL + path)
	if err != nil {
		return false, err
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusTooManyRequests:
		return false, nil
	case resp.StatusCode < 500:
		return true, nil // the edge's answer
	default:
		return false, fmt.Errorf("status %d: %.200s", resp.StatusCode, body)
	}
}

func gateStatus(g devstack.Gate) (gate.GateStatus, bool) {
	var st gate.GateStatus
	resp, err := http.Get(g.HealthURL + "/status")
	if err != nil {
		return st, false
	}
	defer resp.Body.Close()
	return st, json.NewDecoder(resp.Body).Decode(&st) == nil
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
