package admit

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"
)

// The worked examples of Cloudflare's blog posts "How Waiting Room makes
// queueing decisions on Cloudflare's highly distributed network" and "Waiting
// Room: Random Queueing and Custom Web/Mobile Apps", each as a table test.
// Where an example rounds differently from the engine's round-down rule, the
// test says so.

var t0 = time.Date(2023, 9, 11, 11, 45, 0, 0, time.UTC)

// gates returns n gate ids of a data center: "sjc-1", "sjc-2", …
func gateIDs(dc string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%d", dc, i+1)
	}
	return out
}

func TestSlotsAvailable(t *testing.T) {
	for _, c := range []struct {
		name                     string
		total, active, perMinute int
		want                     int
	}{
		{"doc 001: 10,000 total, 7,000 active, 2,000 a minute", 10000, 7000, 2000, 2000},
		{"doc 000: 200 total, 50 active", 200, 50, 200, 150},
		{"the per-minute limit binds", 200, 0, 100, 100},
		{"full", 200, 200, 100, 0},
		{"over the limit never goes negative", 200, 250, 100, 0},
	} {
		if got := SlotsAvailable(c.total, c.active, c.perMinute); got != c.want {
			t.Errorf("%s: SlotsAvailable = %d, want %d", c.name, got, c.want)
		}
	}
}

// "How Waiting Room makes queueing decisions": 50 active users of 200, 20
// seen in San Jose and 30 in London in the previous minute, so 150 slots this
// minute.
func TestSanJoseLondonSplit(t *testing.T) {
	shares, anywhere := Shares([]DataCenterUsers{
		{DataCenter: "London", Users: 30, Gates: gateIDs("lhr", 4)},
		{DataCenter: "San Jose", Users: 20, Gates: gateIDs("sjc", 3)},
	}, 200)
	if shares[0].DataCenter != "London" || shares[0].Share != 0.15 || shares[1].Share != 0.10 || anywhere != 0.75 {
		t.Fatalf("shares %+v, anywhere %v; want London 15%%, San Jose 10%%, Anywhere 75%%", shares, anywhere)
	}
	scopes := Split(150, shares, 200)
	want := []Scope{
		{Name: "London", Limit: 22}, // 22.5 rounded down (the document does not give London's)
		{Name: "San Jose", Limit: 15},
		// The document says 75% of 150 "(113)", rounding 112.5 up. Here
		// Anywhere is what the data centers leave: 150 - 22 - 15 = 113.
		{Name: Anywhere, Limit: 113},
	}
	if fmt.Sprint(scopes) != fmt.Sprint(want) {
		t.Fatalf("Split(150) = %v, want %v", scopes, want)
	}
	// "That pool is then divided evenly among the workers active in that
	// data center. With three workers, each can admit up to five users";
	// Anywhere split among 10 workers worldwide: "roughly 11" each; so a San
	// Jose worker may admit 16.
	sj, any := PerGateLimit(scopes[1], 3, 10, 1), PerGateLimit(scopes[2], 3, 10, 1)
	if sj != 5 || any != 11 || sj+any != 16 {
		t.Errorf("even split: San Jose %d + Anywhere %d per worker, want 5 + 11 = 16", sj, any)
	}
}

// "How Waiting Room makes queueing decisions": Delhi has no share of the
// previous minute, so its visitors take Anywhere slots only.
func TestDelhiHasOnlyAnywhere(t *testing.T) {
	shares, _ := Shares([]DataCenterUsers{{DataCenter: "London", Users: 30}, {DataCenter: "San Jose", Users: 20}}, 200)
	pool := &Pool{Slots: 150, Scopes: Split(150, shares, 200)}
	got := scopeOrder(pool, "Delhi")
	if len(got) != 1 || got[0] != (Scope{Name: Anywhere, Limit: 113}) {
		t.Fatalf("Delhi may take from %v, want only Anywhere 113", got)
	}
	if got := scopeOrder(pool, "San Jose"); len(got) != 2 || got[0].Name != "San Jose" || got[1].Name != Anywhere {
		t.Fatalf("San Jose may take from %v, want its own scope, then Anywhere", got)
	}
}

// "How Waiting Room makes queueing decisions": with no traffic history every
// slot is Anywhere.
func TestNoHistoryIsAllAnywhere(t *testing.T) {
	shares, anywhere := Shares(nil, 200)
	if got := Split(150, shares, 200); len(got) != 1 || got[0] != (Scope{Name: Anywhere, Limit: 150}) || anywhere != 1 {
		t.Fatalf("Split with no history = %v (anywhere share %v), want all 150 Anywhere", got, anywhere)
	}
}

// Split never hands out more than it has, whatever the shares.
func TestSplitNeverSumsPastTheSlots(t *testing.T) {
	for n := 0; n < 400; n += 7 {
		for _, users := range [][]int{{1, 1, 1}, {33, 33, 34}, {199, 1}, {500, 300, 200}, {0, 7}} {
			var dcs []DataCenterUsers
			for i, u := range users {
				dcs = append(dcs, DataCenterUsers{DataCenter: fmt.Sprintf("dc%d", i), Users: u})
			}
			shares, _ := Shares(dcs, 200)
			sum := 0
			for _, s := range Split(n, shares, 200) {
				if s.Limit <= 0 {
					t.Fatalf("empty scope %v", s)
				}
				sum += s.Limit
			}
			if sum != n {
				t.Fatalf("Split(%d, %v) sums to %d", n, users, sum)
			}
		}
	}
}

// The "How Waiting Room makes queueing decisions" post, the adaptive
// allocation: Delhi at 25% utilization, 10 workers worldwide, curveFactor 1:
// the effective worker count is 2.5 and each worker may admit 113 / 2.5 ≈ 45
// Anywhere users.
func TestAdaptiveDelhi(t *testing.T) {
	if m := WorkerMultiplier(0.25, 1); m != 0.25 {
		t.Fatalf("multiplier %v, want 0.25", m)
	}
	if got := PerGateLimit(Scope{Name: Anywhere, Limit: 113}, 1, 10, WorkerMultiplier(0.25, 1)); got != 45 {
		t.Fatalf("adaptive Anywhere per worker = %d, want 45 (113 / 2.5 = 45.2, rounded down)", got)
	}
	// y = x^2 grows slower than y = x below 1: a higher curveFactor gives
	// each worker more while utilization is low.
	if a, b := WorkerMultiplier(0.5, 1), WorkerMultiplier(0.5, 2); !(b < a) {
		t.Errorf("multiplier at 50%%: curve 1 %v, curve 2 %v", a, b)
	}
	if WorkerMultiplier(1, 3) != 1 || WorkerMultiplier(1.5, 2) != 1 || WorkerMultiplier(-1, 2) != 0 {
		t.Error("utilization is clamped to [0, 1], and the multiplier is 1 at the limit")
	}
}

// A snapshot of one minute, built with the package's own functions, for the
// strategy examples: slots split between data centers whose gates are known.
func strategySnapshot(slots int, util float64, dcs ...DataCenterUsers) *Snapshot {
	s := testSettings()
	shares, anywhere := Shares(dcs, s.TotalActiveUsers)
	snap := &Snapshot{Room: s.Name, Minute: t0, MinuteSeconds: 60, PublishedAt: t0, Settings: s, SlotsAvailable: slots,
		NewUserSlots: slots, TrafficHistory: shares, AnywhereShare: anywhere, Utilization: util, Status: StatusNotQueueing}
	for _, sh := range shares {
		snap.GatesActive += len(sh.Gates)
	}
	snap.Pools = Allocate(AllocationInput{Method: FIFO, Slots: slots, NewUserSlots: slots, Shares: shares, TotalActiveUsers: s.TotalActiveUsers})
	return snap
}

func testSettings() Settings {
	return Settings{Name: "shop", TotalActiveUsers: 200, NewUsersPerMinute: 200}.WithDefaults()
}

// arrivals sends n new visitors to each gate in turn and counts admissions.
func arrivals(t *testing.T, snap *Snapshot, strategy Strategy, dc string, perGate ...int) (admitted, queued int) {
	t.Helper()
	for g, n := range perGate {
		for range n {
			d, err := Decide(context.Background(), Input{Now: t0.Add(10 * time.Second), Snapshot: snap,
				Gate: Gate{DataCenter: dc, ID: fmt.Sprintf("%s-%d", dc, g+1)}, Strategy: strategy})
			if err != nil {
				t.Fatal(err)
			}
			switch d.Outcome {
			case Admit:
				admitted++
			case Queue:
				queued++
			default:
				t.Fatalf("outcome %s", d.Outcome)
			}
		}
	}
	return admitted, queued
}

// "How Waiting Room makes queueing decisions": a data center with ten slots
// and two workers; seven users arrive at worker1 and one at worker2.
func TestUnevenArrivalsAcrossTwoWorkers(t *testing.T) {
	// San Jose's users fill the limit (no Anywhere), so its share of 10
	// slots is exactly 10.
	dc := DataCenterUsers{DataCenter: "sjc", Users: 200, Gates: gateIDs("sjc", 2)}
	for _, c := range []struct {
		name             string
		strategy         Strategy
		util             float64
		perGate          []int
		admitted, queued int
	}{
		// "worker1 will admit five users and queue two, while worker2 lets
		// its single user through. Total admitted: six. Total queued: two."
		{"even split queues early", EvenSplit{Store: NewMemoryCounter(nil)}, 0.5, []int{7, 1}, 6, 2},
		// "If one worker receives seven new users and another receives just
		// one, all eight get through."
		{"shared counter admits all eight", SharedCounters{NewMemoryCounter(nil)}, 0.5, []int{7, 1}, 8, 0},
		// "If fifteen users show up at the workers and the data center has
		// ten slots, ten reach the website and five are queued."
		{"shared counter stops at ten", SharedCounters{NewMemoryCounter(nil)}, 0.5, []int{8, 7}, 10, 5},
		// "In a ten-slot data center at 10% utilization, each of two workers
		// could receive eight slots. If eight users hit one worker and seven
		// hit the other, fifteen users would be sent to the origin." The
		// document's eight per worker comes from its chart; the formula it
		// gives (2 × 0.1^1 = 0.2 workers, never less than one) lets each
		// worker take all ten, which overshoots the same way.
		{"adaptive overshoots after a quiet spell", Adaptive{NewMemoryCounter(nil), 1}, 0.1, []int{8, 7}, 15, 0},
		// Near the limit the adaptive split converges to the even split.
		{"adaptive at 100% is the even split", Adaptive{NewMemoryCounter(nil), 1}, 1, []int{7, 1}, 6, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			snap := strategySnapshot(10, c.util, dc)
			if p := snap.Pool(time.Time{}); p == nil || p.Limit("sjc") != 10 {
				t.Fatalf("pools %+v, want sjc 10", snap.Pools)
			}
			admitted, queued := arrivals(t, snap, c.strategy, "sjc", c.perGate...)
			if admitted != c.admitted || queued != c.queued {
				t.Errorf("%s: admitted %d, queued %d; want %d, %d", c.strategy.Name(), admitted, queued, c.admitted, c.queued)
			}
		})
	}
}

// "How Waiting Room makes queueing decisions": San Jose has 15 of 150 slots
// and Anywhere 113. "Even if 128 users (113 Anywhere plus 15 San Jose) all
// arrive at the same worker, none are queued prematurely."
func TestSharedCounterSanJose128(t *testing.T) {
	snap := strategySnapshot(150, 0.25,
		DataCenterUsers{DataCenter: "sjc", Users: 20, Gates: gateIDs("sjc", 3)},
		DataCenterUsers{DataCenter: "lhr", Users: 30, Gates: gateIDs("lhr", 7)})
	counters := NewMemoryCounter(nil)
	admitted, queued := arrivals(t, snap, SharedCounters{counters}, "sjc", 129)
	if admitted != 128 || queued != 1 {
		t.Fatalf("admitted %d, queued %d; want 128 admitted (15 San Jose + 113 Anywhere), the 129th queued", admitted, queued)
	}
	sj, _ := counters.Load(context.Background(), CounterKey("shop", t0, PoolNew, "sjc"))
	any, _ := counters.Load(context.Background(), CounterKey("shop", t0, PoolNew, Anywhere))
	if sj != 15 || any != 113 {
		t.Errorf("counters: San Jose %d, Anywhere %d; want 15 and 113", sj, any)
	}
	// London's 22 are still there for London.
	if a, _ := arrivals(t, snap, SharedCounters{counters}, "lhr", 30); a != 22 {
		t.Errorf("London admitted %d after San Jose took Anywhere, want its own 22", a)
	}
}

// "Waiting Room: Random Queueing": 10,000 total active users, 2,000 a minute,
// 7,000 active: 2,000 slots. 500, 1,000 and 1,000 queued at 15:54, 15:55,
// 15:56.
func TestTenThousandRoomBuckets(t *testing.T) {
	min54 := time.Date(2021, 5, 27, 15, 54, 0, 0, time.UTC)
	slots := SlotsAvailable(10000, 7000, 2000)
	buckets, newSlots := Reserve([]Bucket{
		{Key: min54, Waiting: 500},
		{Key: min54.Add(time.Minute), Waiting: 1000},
		{Key: min54.Add(2 * time.Minute), Waiting: 1000},
	}, slots)
	want := []Bucket{
		{Key: min54, Waiting: 500, ReservedSlots: 500},
		{Key: min54.Add(time.Minute), Waiting: 1000, ReservedSlots: 1000},
		{Key: min54.Add(2 * time.Minute), Waiting: 1000, ReservedSlots: 500},
	}
	if fmt.Sprint(buckets) != fmt.Sprint(want) || newSlots != 0 {
		t.Fatalf("Reserve = %v, %d new; want %v, 0 new", buckets, newSlots, want)
	}
	// Nairobi and Dublin share the traffic 60/40. The document's shares
	// are of traffic and sum to 1 (its earlier model); under document 000's
	// model (shares of the limit) that is the case when the two data
	// centers' users of the last minute fill the limit, as here.
	shares, anywhere := Shares([]DataCenterUsers{
		{DataCenter: "Dublin", Users: 4000, Gates: gateIDs("dub", 2)},
		{DataCenter: "Nairobi", Users: 6000, Gates: gateIDs("nbo", 3)},
	}, 10000)
	if anywhere != 0 {
		t.Fatalf("anywhere share %v", anywhere)
	}
	pools := Allocate(AllocationInput{Method: FIFO, Slots: slots, Buckets: buckets, NewUserSlots: newSlots, Shares: shares, TotalActiveUsers: 10000})
	if len(pools) != 3 {
		t.Fatalf("pools %+v, want one per reserved bucket and none for new visitors", pools)
	}
	// Fully reserved buckets "can be let into the origin website from any
	// data center": one Anywhere scope.
	for i, n := range []int{500, 1000} {
		if p := pools[i]; len(p.Scopes) != 1 || p.Scopes[0] != (Scope{Name: Anywhere, Limit: n}) {
			t.Errorf("pool of bucket %d: %+v, want all %d Anywhere", i, p, n)
		}
	}
	// 15:56: 500 * .6 = 300 for Nairobi, 500 * .4 = 200 for Dublin; 300 / 3
	// Nairobi workers = 100 each.
	p56 := pools[2]
	if !p56.Bucket.Equal(min54.Add(2*time.Minute)) || p56.Limit("Nairobi") != 300 || p56.Limit("Dublin") != 200 || p56.Limit(Anywhere) != 0 {
		t.Fatalf("pool of 15:56: %+v, want Nairobi 300, Dublin 200", p56)
	}
	if got := PerGateLimit(Scope{Name: "Nairobi", Limit: 300}, 3, 5, 1); got != 100 {
		t.Errorf("Nairobi per worker %d, want 100", got)
	}

	// With 7,000 active of 10,000 and doc 000's shares of the limit, 30% of
	// the slots would stay in Anywhere instead.
	limitShares, any := Shares([]DataCenterUsers{{DataCenter: "Dublin", Users: 2800}, {DataCenter: "Nairobi", Users: 4200}}, 10000)
	if got := Split(500, limitShares, 10000); any < 0.299 || any > 0.301 || fmt.Sprint(got) != fmt.Sprint([]Scope{{Name: "Dublin", Limit: 140}, {Name: "Nairobi", Limit: 210}, {Name: Anywhere, Limit: 150}}) {
		t.Errorf("doc 000 split of 500 with 7,000 active: %v (anywhere %v)", got, any)
	}
}

// "Waiting Room: Random Queueing", the variant: only 200 queued, all at
// 15:54. 200 slots are reserved for them and 1,800 are left for new visitors:
// 1,080 for Nairobi (360 per worker), 720 for Dublin. In random mode everyone
// is new: Nairobi gets 1,200 (400 per worker).
func TestTwoHundredQueuedVariant(t *testing.T) {
	min54 := time.Date(2021, 5, 27, 15, 54, 0, 0, time.UTC)
	buckets, newSlots := Reserve([]Bucket{{Key: min54, Waiting: 200}}, 2000)
	if buckets[0].ReservedSlots != 200 || newSlots != 1800 {
		t.Fatalf("Reserve = %v, %d new; want 200 reserved, 1800 new", buckets, newSlots)
	}
	shares, _ := Shares([]DataCenterUsers{{DataCenter: "Dublin", Users: 4000}, {DataCenter: "Nairobi", Users: 6000}}, 10000)
	in := AllocationInput{Method: FIFO, Slots: 2000, Buckets: buckets, NewUserSlots: newSlots, Shares: shares, TotalActiveUsers: 10000}
	fifo := Allocate(in)
	newPool := fifo[0]
	if !newPool.Bucket.IsZero() || newPool.Limit("Nairobi") != 1080 || newPool.Limit("Dublin") != 720 {
		t.Fatalf("FIFO new visitors' pool %+v, want Nairobi 1080, Dublin 720", newPool)
	}
	if got := PerGateLimit(Scope{Name: "Nairobi", Limit: 1080}, 3, 5, 1); got != 360 {
		t.Errorf("Nairobi per worker %d, want 360", got)
	}
	if b := fifo[1]; !b.Bucket.Equal(min54) || b.Limit(Anywhere) != 200 {
		t.Errorf("15:54 pool %+v, want 200 Anywhere", b)
	}
	in.Method = Random
	random := Allocate(in)
	if len(random) != 1 || random[0].Limit("Nairobi") != 1200 || random[0].Limit("Dublin") != 800 {
		t.Fatalf("random pools %+v, want one pool: Nairobi 1200, Dublin 800", random)
	}
	if got := PerGateLimit(Scope{Name: "Nairobi", Limit: 1200}, 3, 5, 1); got != 400 {
		t.Errorf("random: Nairobi per worker %d, want 400", got)
	}
}

// "Waiting Room: Random Queueing": "n = log(1 - .5) / log(1 - .1) ≈ 6.58
// minutes or 6 minutes and 35 seconds" for 10 let in a minute and 100
// waiting.
func TestRandomWaitSixPointFiveEight(t *testing.T) {
	if p := LetInProbability(10, 100); p != 0.1 {
		t.Fatalf("P = %v, want 0.1", p)
	}
	n, ok := RandomWaitMinutes(0.5, 10, 100)
	if !ok || math.Abs(n-6.58) > 0.005 {
		t.Fatalf("n = %v, want 6.58", n)
	}
	if d := time.Duration(n * float64(time.Minute)).Round(time.Second); d != 6*time.Minute+35*time.Second {
		t.Errorf("%v, want 6m35s", d)
	}
	for _, c := range []struct {
		p, want float64
	}{{0.25, math.Log(0.75) / math.Log(0.9)}, {0.75, math.Log(0.25) / math.Log(0.9)}} {
		if got, _ := RandomWaitMinutes(c.p, 10, 100); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("p %v: %v, want %v", c.p, got, c.want)
		}
	}
	// The estimate the room publishes, and what a visitor is shown (whole
	// minutes, rounded up).
	e := Estimates(Random, 10, 100)
	if !e.Known || math.Abs(e.P50Minutes-6.58) > 0.005 || e.MaxMinutes != e.P75Minutes || !(e.P25Minutes < e.P50Minutes && e.P50Minutes < e.P75Minutes) {
		t.Errorf("estimate %+v", e)
	}
	w := WaitFor(&Snapshot{Settings: Settings{QueueingMethod: Random}, LetInPerMinute: 10, CurrentlyWaiting: 100}, time.Time{}, false)
	if !w.Known || w.P50 != 7 || w.Minutes != 7 || w.P25 != 3 || w.P75 != 14 {
		t.Errorf("shown %+v, want 3 / 7 / 14 minutes", w)
	}
}

func TestRandomWaitEdges(t *testing.T) {
	if _, ok := RandomWaitMinutes(0.5, 0, 100); ok {
		t.Error("nobody let in: the wait is unknown")
	}
	if n, ok := RandomWaitMinutes(0.5, 200, 100); !ok || n != 0 {
		t.Errorf("more let in than waiting: %v %v, want 0", n, ok)
	}
	if n, _ := RandomWaitMinutes(1, 10, 100); !math.IsInf(n, 1) {
		t.Errorf("p = 1 takes forever, got %v", n)
	}
}

func TestFIFOWait(t *testing.T) {
	for _, c := range []struct {
		position int
		rate     float64
		want     float64
		known    bool
	}{{1000, 100, 10, true}, {50, 100, 0.5, true}, {10, 0, 0, false}} {
		got, known := FIFOWaitMinutes(c.position, c.rate)
		if got != c.want || known != c.known {
			t.Errorf("FIFOWaitMinutes(%d, %v) = %v %v", c.position, c.rate, got, known)
		}
	}
	min54 := time.Date(2021, 5, 27, 15, 54, 0, 0, time.UTC)
	snap := &Snapshot{Settings: Settings{QueueingMethod: FIFO}, LetInPerMinute: 2000, CurrentlyWaiting: 2500,
		Buckets: []Bucket{{Key: min54, Waiting: 500}, {Key: min54.Add(time.Minute), Waiting: 1000}, {Key: min54.Add(2 * time.Minute), Waiting: 1000}}}
	// The last of 15:55 is 1,500th in line: 0.75 minutes, shown as 1.
	if w := WaitFor(snap, min54.Add(time.Minute), false); w.Position != 1500 || w.Minutes != 1 || !w.Known {
		t.Errorf("15:55 %+v", w)
	}
	// Someone new stands behind all 2,500: 1.25 minutes, shown as 2.
	if w := WaitFor(snap, time.Time{}, false); w.Position != 2501 || w.Minutes != 2 {
		t.Errorf("new %+v", w)
	}
	if w := WaitFor(snap, time.Time{}, true); w.Known || !w.QueueAll {
		t.Errorf("queue_all hides the estimate: %+v", w)
	}
	if e := Estimates(FIFO, 2000, 2500); e.MaxMinutes != 1.25 || !e.Known {
		t.Errorf("estimate %+v", e)
	}
	full := &Snapshot{Settings: Settings{QueueingMethod: FIFO}, LetInPerMinute: 1, CurrentlyWaiting: 2 * QueueFullMinutes}
	if w := WaitFor(full, time.Time{}, false); !w.QueueIsFull {
		t.Errorf("a wait of two days is a full queue: %+v", w)
	}
	// With queue_capacity, the queue is full at that many waiting, however
	// short the wait.
	capped := &Snapshot{Settings: Settings{QueueingMethod: FIFO, QueueCapacity: 100}, LetInPerMinute: 1000, CurrentlyWaiting: 99}
	if w := WaitFor(capped, time.Time{}, false); w.QueueIsFull {
		t.Errorf("99 of a capacity of 100: %+v", w)
	}
	capped.CurrentlyWaiting = 100
	if w := WaitFor(capped, time.Time{}, false); !w.QueueIsFull {
		t.Errorf("100 of a capacity of 100: %+v", w)
	}
	capped.Settings.QueueingMethod = Random
	if w := WaitFor(capped, time.Time{}, false); !w.QueueIsFull {
		t.Errorf("random, 100 of a capacity of 100: %+v", w)
	}
}
