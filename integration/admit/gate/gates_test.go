package gate

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	engine "github.com/edgeflow/edgeflow/internal/admit"
	"github.com/edgeflow/edgeflow/internal/admit/roomclient"
	"github.com/edgeflow/edgeflow/internal/devstack"
	"github.com/edgeflow/edgeflow/internal/testenv"
)

func netListen() (net.Listener, error) { return net.Listen("tcp", "127.0.0.1:0") }

// newVisitorClient sends requests as new visitors: no cookie jar, and
// connections kept alive.
var newVisitorClient = &http.Client{
	Timeout:   10 * time.Second,
	Transport: &http.Transport{MaxIdleConnsPerHost: 64},
}

// arrive sends one new visitor to a gate: true if it reached the origin,
// false if it was queued (any other answer fails the test).
func arrive(t *testing.T, g *gateProcess, path string) bool {
	t.Helper()
	resp, err := newVisitorClient.Get(g.URL + path)
	if err != nil {
		t.Errorf("gate %s: %v", g.id, err)
		return false
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	switch {
	case resp.StatusCode == 200 && strings.HasPrefix(string(body), "origin:"):
		return true
	case resp.StatusCode == 429 && strings.Contains(string(body), "You are in line"):
		return false
	default:
		t.Errorf("gate %s: unexpected answer %d %.200s", g.id, resp.StatusCode, body)
		return false
	}
}

// browser is a visitor that keeps its cookie, as a browser does; its
// cookie reaches every gate (cookie jars ignore ports).
type browser struct{ c *http.Client }

func newBrowser(t *testing.T) *browser {
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &browser{c: &http.Client{Jar: jar, Timeout: 10 * time.Second, Transport: newVisitorClient.Transport}}
}

// visit reports whether the visitor got in, and otherwise when the gate
// told it to come back.
func (b *browser) visit(t *testing.T, g *gateProcess, path string) (bool, time.Duration) {
	resp, err := b.c.Get(g.URL + path)
	if err != nil {
		t.Errorf("gate %s: %v", g.id, err)
		return false, time.Second
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	switch {
	case resp.StatusCode == 200 && !strings.Contains(string(body), "You are in line"):
		return true, 0 // the origin's page (every room here queues with 429)
	case resp.StatusCode == 429:
		secs, err := strconv.Atoi(resp.Header.Get("Refresh"))
		if err != nil || secs <= 0 {
			t.Errorf("gate %s: queued without a Refresh header: %v", g.id, resp.Header)
			return false, time.Second
		}
		return false, time.Duration(secs) * time.Second
	default:
		t.Errorf("gate %s: unexpected answer %d %.200s", g.id, resp.StatusCode, body)
		return false, time.Second
	}
}

func arrivals(t *testing.T, g *gateProcess, n int) (admitted int) {
	t.Helper()
	for range n {
		if arrive(t, g, "/dcs/") {
			admitted++
		}
	}
	return admitted
}

// freshMinute waits for a room minute whose snapshot every gate holds
// while most of the minute is still ahead, and returns the snapshot.
func freshMinute(t *testing.T, rc roomclient.Client, room string, minute time.Duration, gates []*gateProcess) engine.Snapshot {
	t.Helper()
	deadline := time.Now().Add(6 * minute)
	for time.Now().Before(deadline) {
		next := engine.MinuteOf(time.Now(), minute).Add(minute)
		var snap engine.Snapshot
		eventually(t, 3*minute, "the room's next snapshot", func() (bool, string) {
			s, err := rc.Snapshot(context.Background(), room)
			snap = s
			return err == nil && !s.Minute.Before(next), fmt.Sprint(s.String(), err)
		})
		eventually(t, minute, "every gate holds the snapshot", func() (bool, string) {
			for _, g := range gates {
				if m := g.roomMinute(t, room); !m.Equal(snap.Minute) {
					return false, fmt.Sprintf("gate %s holds minute %s, want %s", g.id, m, snap.Minute)
				}
			}
			return true, ""
		})
		if time.Since(snap.Minute) < minute/2 {
			return snap
		}
		// The machine was slow: try the next minute.
	}
	t.Fatalf("no minute of room %s reached every gate in its first half", room)
	return engine.Snapshot{}
}

// Four gate processes in two data centers, each data center's two gates on
// their own Redis, all four sharing the Anywhere Redis: uneven arrivals
// across the gates queue nobody before the room's limits, and a spike never
// takes more than the limits, minute after minute.
func TestGatesInTwoDataCentersShareCounters(t *testing.T) {
	testenv.Require(t, env)
	ctx := context.Background()
	amsRedis, err := devstack.StartRedis(ctx, devstack.RedisOptions{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer amsRedis.Stop(5 * time.Second)
	fraRedis, err := devstack.StartRedis(ctx, devstack.RedisOptions{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer fraRedis.Stop(5 * time.Second)
	anywhere := env.Redis.URL

	const minute = 12 * time.Second
	s := engine.Settings{Name: "it-two-dcs", Path: "/dcs/", TotalActiveUsers: 30, NewUsersPerMinute: 20, SessionDuration: 1, QueueingStatusCode: 429}
	rc := createRoom(t, s, int(minute/time.Second))
	o := newOrigin(t, nil)
	ams1 := startGate(t, "ams", "ams-1", o.URL, "--redis-url", amsRedis.URL, "--anywhere-redis-url", anywhere)
	ams2 := startGate(t, "ams", "ams-2", o.URL, "--redis-url", amsRedis.URL, "--anywhere-redis-url", anywhere)
	fra1 := startGate(t, "fra", "fra-1", o.URL, "--redis-url", fraRedis.URL, "--anywhere-redis-url", anywhere)
	fra2 := startGate(t, "fra", "fra-2", o.URL, "--redis-url", fraRedis.URL, "--anywhere-redis-url", anywhere)
	gates := []*gateProcess{ams1, ams2, fra1, fra2}

	// A minute with no history: its 20 slots are all Anywhere. 12, 4, 3
	// and 1 new visitors at the four gates: all admitted; the 21st queued.
	snap := freshMinute(t, rc, s.Name, minute, gates)
	if p := snap.Pool(time.Time{}); snap.SlotsAvailable != 20 || p == nil || p.Limit(engine.Anywhere) != 20 {
		t.Fatalf("first minute: %s, pools %+v", snap.String(), snap.Pools)
	}
	for i, n := range []int{12, 4, 3, 1} {
		if a := arrivals(t, gates[i], n); a != n {
			t.Fatalf("first minute, gate %s: %d of %d admitted; nobody may be queued below the limit", gates[i].id, a, n)
		}
	}
	if arrive(t, fra1, "/dcs/") {
		t.Fatal("first minute: the 21st visitor was admitted")
	}
	if time.Since(snap.Minute) > minute {
		t.Fatal("the first minute's arrivals did not fit in the minute; use a longer one")
	}

	// The next minute: each data center's share of the last minute's
	// traffic on its own counter, the rest on Anywhere. Arrivals as uneven
	// as they can be: one gate of a data center takes all but one of its
	// data center's and Anywhere's slots.
	snap = freshMinute(t, rc, s.Name, minute, gates)
	pool := snap.Pool(time.Time{})
	if pool == nil || len(snap.TrafficHistory) != 2 || pool.Limit("ams") == 0 {
		logLedger(t, rc, s.Name)
		t.Fatalf("second minute %s, published %s: %s (pools %+v)", snap.Minute.Format("15:04:05"), snap.PublishedAt.Format("15:04:05.000"), snap.String(), snap.Pools)
	}
	ams, fra, any := pool.Limit("ams"), pool.Limit("fra"), pool.Limit(engine.Anywhere)
	if ams == 0 || any == 0 || ams+fra+any != pool.Slots {
		t.Fatalf("second minute's new visitors' pool %+v: want ams, Anywhere and maybe fra scopes", pool)
	}
	plan := []struct {
		g *gateProcess
		n int
	}{{ams1, ams + any - 1}, {ams2, 1}, {fra2, fra}}
	phase2 := 0
	for _, p := range plan {
		phase2 += p.n
		if a := arrivals(t, p.g, p.n); a != p.n {
			t.Fatalf("second minute (pool %+v), gate %s: %d of %d admitted; nobody may be queued below the limit", pool.Scopes, p.g.id, a, p.n)
		}
	}
	if arrive(t, fra1, "/dcs/") || arrive(t, ams2, "/dcs/") {
		t.Fatalf("second minute: admitted past the pool's %d slots", pool.Slots)
	}

	// A spike: 80 visitors at once, 20 at each gate, each then behaving as
	// a browser does: it keeps its cookie, comes back when the Refresh
	// header says, and leaves once admitted. Its later requests go to
	// either gate of its data center.
	type admission struct{ from, to time.Time }
	var mu sync.Mutex
	var admissions []admission
	var checkIns atomic.Int64
	spikeFrom := engine.MinuteOf(time.Now(), minute)
	deadline := time.Now().Add(15 * minute)
	// What each gate counted and what the room holds of each gate's
	// reports, minute by minute, watched while the spike runs: should the
	// room's tally of a minute disagree with the visitors', this says which
	// side counted what.
	watch := newCountWatch()
	watchCtx, stopWatch := context.WithCancel(ctx)
	watchDone := make(chan struct{})
	go func() {
		defer close(watchDone)
		watch.run(watchCtx, t, rc, s.Name, gates)
	}()
	var wg sync.WaitGroup
	for i := range 80 {
		dc := []*gateProcess{ams1, ams2}
		if i%4 >= 2 {
			dc = []*gateProcess{fra1, fra2}
		}
		wg.Go(func() {
			v := newBrowser(t)
			for n := 0; time.Now().Before(deadline); n++ {
				from := time.Now()
				ok, refresh := v.visit(t, dc[(i+n)%2], "/dcs/spike")
				to := time.Now()
				checkIns.Add(1)
				if ok {
					mu.Lock()
					admissions = append(admissions, admission{from, to})
					mu.Unlock()
					return
				}
				time.Sleep(refresh)
			}
		})
	}
	wg.Wait()
	stopWatch()
	<-watchDone
	spikeTo := engine.MinuteOf(time.Now(), minute)
	// Count each admission in its minute; one whose request spanned a
	// minute boundary could be either's, so it counts in both (an upper
	// bound, which must still hold).
	perMinute := map[time.Time]int{}
	for _, a := range admissions {
		m1, m2 := engine.MinuteOf(a.from, minute), engine.MinuteOf(a.to, minute)
		perMinute[m1]++
		if !m2.Equal(m1) {
			perMinute[m2]++
		}
	}
	var counts []int
	for m := spikeFrom; !m.After(spikeTo); m = m.Add(minute) {
		counts = append(counts, perMinute[m])
	}
	t.Logf("spike: 80 visitors, %d check-ins, admitted per minute %v", checkIns.Load(), counts)
	if len(admissions) != 80 {
		t.Fatalf("%d of 80 visitors admitted within %s", len(admissions), 15*minute)
	}
	for m := spikeFrom; !m.After(spikeTo); m = m.Add(minute) {
		if perMinute[m] > s.NewUsersPerMinute {
			t.Errorf("minute %s: %d admitted, over new_users_per_minute %d", m.Format("15:04:05"), perMinute[m], s.NewUsersPerMinute)
		}
		// Sessions last one minute and these visitors leave once in: this
		// minute's and the last minute's admissions are the active users.
		if prev := m.Add(-minute); perMinute[m]+perMinute[prev] > s.TotalActiveUsers {
			t.Errorf("minutes %s and %s: %d + %d admitted, over total_active_users %d",
				prev.Format("15:04:05"), m.Format("15:04:05"), perMinute[prev], perMinute[m], s.TotalActiveUsers)
		}
	}
	// The room saw no minute over its limits either.
	d, err := rc.Describe(ctx, s.Name)
	if err != nil {
		t.Fatal(err)
	}
	var recent []string
	for _, r := range d.Recent {
		recent = append(recent, fmt.Sprintf("%s: %d admitted, %d active", r.Minute.Format("15:04:05"), r.Admitted, r.ActiveUsers))
		if r.Admitted > s.NewUsersPerMinute || r.ActiveUsers > s.TotalActiveUsers {
			t.Errorf("room minute %s: %d admitted, %d active; limits %d and %d", r.Minute.Format("15:04:05"),
				r.Admitted, r.ActiveUsers, s.NewUsersPerMinute, s.TotalActiveUsers)
		}
	}
	// Every admission the gates made reached a visitor: the gates' own
	// count is what the visitors saw.
	gateAdmits := 0
	for _, g := range gates {
		gateAdmits += g.admits(t, s.Name)
	}
	if want := s.NewUsersPerMinute + phase2 + 80; gateAdmits != want {
		t.Errorf("the gates counted %d admissions, the visitors saw %d", gateAdmits, want)
	}
	if t.Failed() {
		t.Logf("the room's minutes: %s", strings.Join(recent, "; "))
		for _, c := range d.Ledger.Closed {
			t.Logf("room ledger, closed minute %s: %d reports, %d admitted", c.Minute.Format("15:04:05"), c.Reports, c.Admitted)
		}
		watch.log(t)
		logLedger(t, rc, s.Name)
		mu.Lock()
		for _, a := range admissions {
			t.Logf("spike admission %s – %s", a.from.Format("15:04:05.000"), a.to.Format("15:04:05.000"))
		}
		mu.Unlock()
	}
	for _, g := range gates {
		if st := g.status(t); st.State != "shared" {
			t.Errorf("gate %s counters %s, want shared", g.id, st.State)
		}
	}
}

// A room created while the gates run takes effect within seconds, without
// a restart; a deleted one stops taking traffic.
func TestNewRoomTakesEffectWithoutRestart(t *testing.T) {
	testenv.Require(t, env)
	o := newOrigin(t, nil)
	g := startGate(t, "ams", "ams-late", o.URL)
	if !arrive(t, g, "/late/1") {
		t.Fatal("no room covers /late/ yet: the origin answers")
	}
	created := time.Now()
	rc := createRoom(t, engine.Settings{Name: "it-late", Path: "/late/", TotalActiveUsers: 1, NewUsersPerMinute: 1, QueueingStatusCode: 429}, 0)
	eventually(t, 10*time.Second, "the gate queues for the new room", func() (bool, string) {
		return !arrive(t, g, "/late/x"), ""
	})
	t.Logf("room in effect %s after its creation", time.Since(created).Round(time.Millisecond))
	if !arrive(t, g, "/elsewhere") {
		t.Error("a path outside the room was queued")
	}
	if _, err := rc.Delete(context.Background(), "it-late"); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the deleted room stops queueing", func() (bool, string) {
		return arrive(t, g, "/late/y"), ""
	})
}
