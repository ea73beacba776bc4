package gate

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	engine "github.com/edgeflow/edgeflow/internal/admit"
	"github.com/edgeflow/edgeflow/internal/admit/gate"
	"github.com/edgeflow/edgeflow/internal/devstack"
	"github.com/edgeflow/edgeflow/internal/testenv"
)

// The Anywhere Redis a primary and a replica behind three Sentinels, the
// gates logging in as the ACL user every server holds: ams's two gates
// count their data center on a Redis of their own and Anywhere through the
// Sentinels (--anywhere-redis-sentinel), fra's gate both (--redis-url
// redis-sentinel://…, its data center's reports through it too). The
// primary is killed (SIGKILL: nothing more replicated) while a minute's
// slots are being taken; the Sentinels promote the replica. The gates keep
// admitting, within both limits in every minute but by the takes the
// failover lost (the takes the room's record counts that the promoted
// replica does not hold, measured), every admission counted once by the
// room, and they count on the Sentinels' Redis again at the end.
func TestGatesThroughASentinelFailover(t *testing.T) {
	testenv.Require(t, env)
	ctx := context.Background()
	const gateUser, gatePass = "gate", "gate-sentinel-pw"
	sen, err := devstack.StartRedisSentinel(ctx, devstack.RedisSentinelOptions{Dir: t.TempDir(), Master: "anywhere",
		ServerArgs: append([]string{"--user", gateUser, "on", ">" + gatePass}, strings.Fields(gate.RedisACL)...)})
	if err != nil {
		t.Fatal(err)
	}
	defer sen.Stop(5 * time.Second)
	sentinels := gateUser + ":" + gatePass + "@" + strings.TrimPrefix(sen.URL, "redis-sentinel://")

	const minute = 12 * time.Second
	s := engine.Settings{Name: "it-sentinel", Path: "/sentinel/", TotalActiveUsers: 15, NewUsersPerMinute: 10, SessionDuration: 1, QueueingStatusCode: 429}
	rc := createRoom(t, s, int(minute/time.Second))
	o := newOrigin(t, nil)
	ams1 := startGate(t, "ams", "ams-1", o.URL, "--redis-url", env.Redis.URL, "--anywhere-redis-sentinel", sentinels)
	ams2 := startGate(t, "ams", "ams-2", o.URL, "--redis-url", env.Redis.URL, "--anywhere-redis-sentinel", sentinels)
	fra1 := startGate(t, "fra", "fra-1", o.URL, "--redis-url", "redis-sentinel://"+sentinels)
	gates := []*gateProcess{ams1, ams2, fra1}
	for _, g := range gates {
		if !strings.Contains(g.logs.String(), "sentinel "+strings.Join(sen.SentinelAddrs, ",")+" primary anywhere") || strings.Contains(g.logs.String(), gatePass) {
			t.Fatalf("gate %s does not say it counts through the Sentinels, or shows the password:\n%s", g.id, g.logs.String())
		}
	}
	freshMinute(t, rc, s.Name, minute, gates)

	// A spike: 45 visitors at once, 15 at each gate, each a browser that
	// comes back when told and leaves once admitted. The primary is killed
	// at the first admission of the spike's second minute: while that
	// minute's slots are being taken.
	first, err := sen.Primary(ctx)
	if err != nil {
		t.Fatal(err)
	}
	const visitors = 45
	var mu sync.Mutex
	var admitted []time.Time
	spikeFrom := engine.MinuteOf(time.Now(), minute)
	killAt := make(chan struct{})
	var killOnce sync.Once
	deadline := time.Now().Add(15 * minute)
	var wg sync.WaitGroup
	for i := range visitors {
		g := gates[i%3]
		wg.Go(func() {
			v := newBrowser(t)
			for time.Now().Before(deadline) {
				ok, refresh := v.visit(t, g, "/sentinel/spike")
				if ok {
					now := time.Now()
					mu.Lock()
					admitted = append(admitted, now)
					mu.Unlock()
					if engine.MinuteOf(now, minute).After(spikeFrom) {
						killOnce.Do(func() { close(killAt) })
					}
					return
				}
				time.Sleep(refresh)
			}
		})
	}
	var killed, promoted time.Time
	var promotedAddr string
	select {
	case <-killAt:
	case <-time.After(4 * minute):
		t.Fatal("no admission in the spike's second minute")
	}
	sen.Server(first).Kill()
	killed = time.Now()
	eventually(t, 30*time.Second, "the Sentinels promote the replica", func() (bool, string) {
		promotedAddr, err = sen.Primary(ctx)
		return err == nil && promotedAddr != first, fmt.Sprint(promotedAddr, err)
	})
	promoted = time.Now()
	// What the failover lost: of the minutes it spanned, the takes the
	// room counts on the Sentinels' scopes (Anywhere and fra) that the
	// promoted replica's counters do not hold, read as the room closes
	// each minute (while the visitors go on).
	lost := map[time.Time]int{}
	promotedClient := redis.NewClient(&redis.Options{Addr: promotedAddr})
	defer promotedClient.Close()
	for m := engine.MinuteOf(killed, minute); !m.After(engine.MinuteOf(promoted, minute)); m = m.Add(minute) {
		var totals engine.MinuteTotals
		eventually(t, 4*minute, "the room closes minute "+m.Format("15:04:05"), func() (bool, string) {
			d, err := rc.Describe(ctx, s.Name)
			if err != nil {
				return false, err.Error()
			}
			for _, c := range d.Ledger.Closed {
				if c.Minute.Equal(m) {
					totals = c
					return true, ""
				}
			}
			return false, fmt.Sprintf("closed before %s", d.Ledger.ClosedBefore.Format("15:04:05"))
		})
		for _, tk := range totals.Taken {
			if tk.Scope == "ams" {
				continue // on ams's own Redis
			}
			held, err := promotedClient.Get(ctx, engine.CounterKey(s.Name, m, tk.Pool, tk.Scope)).Int()
			if err != nil && !errors.Is(err, redis.Nil) {
				t.Fatal(err)
			}
			lost[m] += max(0, tk.Count-held)
		}
	}
	wg.Wait()
	t.Logf("primary %s killed at %s; replica %s promoted %s later", first, killed.Format("15:04:05.000"), promotedAddr, promoted.Sub(killed).Round(100*time.Millisecond))

	mu.Lock()
	n := len(admitted)
	last := spikeFrom
	for _, a := range admitted {
		if m := engine.MinuteOf(a, minute); m.After(last) {
			last = m
		}
	}
	mu.Unlock()
	if n != visitors {
		t.Fatalf("%d of %d visitors admitted within %s: the gates stopped admitting after the failover", n, visitors, 15*minute)
	}

	// The room's record of each minute, once it holds every admission:
	// nothing counted twice (each admission once, none only in the
	// counters), nothing lost.
	var recent []engine.MinuteSummary
	eventually(t, 4*minute, "the room's record holds every admission of the spike", func() (bool, string) {
		d, err := rc.Describe(ctx, s.Name)
		if err != nil {
			return false, err.Error()
		}
		recent = d.Recent
		sum, unreported := 0, 0
		for _, r := range recent {
			if !r.Minute.Before(spikeFrom) {
				sum += r.Admitted
				unreported += r.Unreported
			}
		}
		covered := len(recent) > 0 && !recent[len(recent)-1].Minute.Before(last)
		return covered && sum == visitors && unreported == 0, fmt.Sprintf("%d admitted in the room's minutes since the spike began (%d only in the counters), want %d", sum, unreported, visitors)
	})
	gateAdmits := 0
	for _, g := range gates {
		gateAdmits += g.admits(t, s.Name)
	}
	if gateAdmits != visitors {
		t.Errorf("the gates counted %d admissions, the visitors saw %d", gateAdmits, visitors)
	}

	totalLost, overshoot := 0, 0
	var minutes []string
	for _, r := range recent {
		if r.Minute.Before(spikeFrom) {
			continue
		}
		minutes = append(minutes, fmt.Sprintf("%s %d admitted %d active", r.Minute.Format("15:04:05"), r.Admitted, r.ActiveUsers))
		over := max(0, r.Admitted-s.NewUsersPerMinute, r.ActiveUsers-s.TotalActiveUsers)
		overshoot += over
		// Sessions last a minute: a minute's active users are its own
		// admissions and the minute before's.
		if allowed := lost[r.Minute] + lost[r.Minute.Add(-minute)]; over > allowed {
			t.Errorf("minute %s: %d admitted, %d active (limits %d, %d): %d over, more than the failover's %d lost takes",
				r.Minute.Format("15:04:05"), r.Admitted, r.ActiveUsers, s.NewUsersPerMinute, s.TotalActiveUsers, over, allowed)
		}
	}
	for _, l := range lost {
		totalLost += l
	}
	t.Logf("the room's minutes: %s; the failover lost %d takes, the room went %d over its limits", strings.Join(minutes, "; "), totalLost, overshoot)
	eventually(t, 4*minute, "every gate counts on the shared counters again", func() (bool, string) {
		for _, g := range gates {
			if st := g.status(t); st.State != gate.StateShared {
				return false, fmt.Sprintf("gate %s: %s", g.id, st.State)
			}
		}
		return true, ""
	})
	if t.Failed() {
		logLedger(t, rc, s.Name)
	}
}
