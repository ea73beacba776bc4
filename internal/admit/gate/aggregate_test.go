package gate

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/edgeflow/edgeflow/internal/admit"
	"github.com/edgeflow/edgeflow/internal/keyring"
	"github.com/edgeflow/edgeflow/internal/testenv"
)

// dcGates is a data center of gates reporting through one Redis to an
// engine room, on a clock the test moves.
type dcGates struct {
	t         *testing.T
	dc        string
	now       time.Time
	reporters []*Reporter
	rooms     []*Room
	alive     []bool
	mu        sync.Mutex
	room      *admit.Room
	got       []admit.Report
	signer    *keyring.Signer // the gates' (from their cookie keys)
	drops     *RedisDrops
}

func newDCGates(t *testing.T, n int) *dcGates { return newDCGatesMinute(t, n, 60) }

// newDCGatesMinute is newDCGates for a room of minutes of that many seconds.
func newDCGatesMinute(t *testing.T, n, minuteSeconds int) *dcGates {
	testenv.Require(t, env)
	d := &dcGates{t: t, dc: "dc" + strconv.FormatInt(time.Now().UnixNano()%1e12, 36), now: t0.Add(time.Duration(minuteSeconds) * time.Second / 6),
		signer: NewRedisSigner(testRing(t, testKey(t, "k1"))), drops: &RedisDrops{}}
	room, err := admit.NewRoom(admit.Settings{Name: "shop", TotalActiveUsers: 1000, NewUsersPerMinute: 100}, minuteSeconds, t0)
	if err != nil {
		t.Fatal(err)
	}
	d.room = room
	client := redisCounter(t, env.Redis.URL).Client
	for i := range n {
		id := d.dc + "-" + strconv.Itoa(i)
		reg := NewRegistry(admit.Gate{DataCenter: d.dc, ID: id})
		if err := reg.Update(room.Snapshot, nil, t0); err != nil {
			t.Fatal(err)
		}
		p := &Reporter{Registry: reg, Every: 2 * time.Second, Logger: quietLogger(), Now: func() time.Time { return d.now },
			Sink: d.sink,
			Aggregate: &Aggregator{Client: client, DataCenter: d.dc, Holder: id + "/1", Lease: 300 * time.Millisecond,
				Poll: 100 * time.Millisecond, Logger: quietLogger(), Signer: d.signer, Drops: d.drops}}
		d.reporters = append(d.reporters, p)
		d.rooms = append(d.rooms, reg.Room("shop"))
		d.alive = append(d.alive, true)
	}
	return d
}

func (d *dcGates) sink(_ context.Context, r admit.Report) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.got = append(d.got, r)
	return d.room.AddReport(r, d.now)
}

// step moves the clock and ticks every live gate.
func (d *dcGates) step(by time.Duration) {
	d.now = d.now.Add(by)
	for i, p := range d.reporters {
		if d.alive[i] {
			p.Tick(context.Background())
		}
	}
	d.room.Advance(d.now)
}

// The gates of a data center report to the room as one: only aggregated
// reports reach it, summing every gate, and the minute's final one as
// soon as every gate has written its final counts.
func TestDataCenterReportsAsOne(t *testing.T) {
	d := newDCGates(t, 3)
	d.step(0)
	for i, r := range d.rooms {
		for range i + 1 { // 1 + 2 + 3 admissions
			r.tally.Add(admit.Effect{Minute: t0, NewVisitor: true, Admitted: true, Seen: true, Pool: admit.PoolNew, Scope: d.dc})
		}
	}
	for d.now.Before(t0.Add(time.Minute + 2*time.Second)) {
		d.step(100 * time.Millisecond)
	}
	finals := 0
	for _, r := range d.got {
		if r.Gate != admit.AggregateGate || r.DataCenter != d.dc {
			t.Fatalf("the room got a report of gate %s/%s, want only the data center's aggregate", r.DataCenter, r.Gate)
		}
		if r.Minute.Equal(t0) && r.Final {
			finals++
			if r.Admitted != 6 || r.Gates != 3 || r.Seen != 6 {
				t.Errorf("final aggregate: admitted %d of 6, gates %d of 3, seen %d of 6", r.Admitted, r.Gates, r.Seen)
			}
		}
	}
	if finals != 1 {
		t.Fatalf("%d final aggregates of the minute, want 1 (reports %+v)", finals, d.got)
	}
	if len(d.got) > 3 {
		t.Errorf("the room got %d reports from one data center in a minute and 2 s, want at most 3", len(d.got))
	}
	// The room published the next minute's snapshot with the finals, before its grace.
	if !d.room.Snapshot.Minute.Equal(t0.Add(time.Minute)) || d.room.Snapshot.PublishedAt.After(t0.Add(time.Minute+2*time.Second)) {
		t.Fatalf("snapshot of %s published at %s; want the next minute's within 2 s of its start", d.room.Snapshot.Minute, d.room.Snapshot.PublishedAt)
	}
	if in, global := d.room.Snapshot.Gates(admit.Gate{DataCenter: d.dc, ID: d.dc + "-0"}); in < 3 || global < 3 {
		t.Errorf("the snapshot counts %d gates in the data center, %d in all; want the 3 behind the aggregate", in, global)
	}
	if got := d.room.Ledger.Totals(t0).Admitted; got != 6 {
		t.Errorf("the room counts %d admissions, want 6", got)
	}
}

// When the gate holding the lease dies, another takes it over once it
// lapses and sends the minute: nothing the gates wrote is lost, and the
// final waits no longer than the grace for the dead gate.
func TestAggregatorTakeover(t *testing.T) {
	d := newDCGates(t, 3)
	d.step(0)
	holder := -1
	for i, p := range d.reporters {
		if p.Aggregate.Holds(d.now) {
			holder = i
		}
	}
	if holder < 0 {
		t.Fatal("no gate took the lease")
	}
	for _, r := range d.rooms {
		r.tally.Add(admit.Effect{Minute: t0, NewVisitor: true, Admitted: true, Seen: true})
	}
	d.step(2 * time.Second) // every gate writes its admission
	d.alive[holder] = false
	// Redis lets the dead holder's lease lapse on its own clock.
	deadline := time.Now().Add(10 * time.Second)
	for !d.holds() {
		if time.Now().After(deadline) {
			t.Fatal("no live gate took the lease over")
		}
		time.Sleep(50 * time.Millisecond)
		d.step(100 * time.Millisecond)
	}
	for d.now.Before(t0.Add(time.Minute + 12*time.Second)) {
		d.step(100 * time.Millisecond)
	}
	var final *admit.Report
	for i, r := range d.got {
		if r.Minute.Equal(t0) && r.Final {
			final = &d.got[i]
		}
	}
	if final == nil {
		t.Fatalf("no final aggregate of the minute after the holder died: %+v", d.got)
	}
	if final.Admitted != 3 {
		t.Errorf("final aggregate counts %d admissions, want the 3 every gate wrote, the dead one's too", final.Admitted)
	}
	if d.room.Snapshot.Minute.Before(t0.Add(time.Minute)) {
		t.Errorf("the room has not published the next minute")
	}
	if !d.holds() {
		t.Errorf("no live gate holds the lease")
	}
}

// holds says whether a live gate holds the lease.
func (d *dcGates) holds() bool {
	for i, p := range d.reporters {
		if d.alive[i] && p.Aggregate.Holds(d.now) {
			return true
		}
	}
	return false
}

// A gate whose Redis is gone reports to the room directly, as without one,
// once Redis has failed for a while (not at its first slow answer).
func TestReporterFallsBackWithoutRedis(t *testing.T) {
	d := newDCGates(t, 1)
	client, err := NewRedisClient("redis://127.0.0.1:1/0") // nothing listens on port 1
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	d.reporters[0].Aggregate.Client = client
	d.rooms[0].tally.Add(admit.Effect{Minute: t0, NewVisitor: true, Admitted: true, Seen: true})
	d.step(0)
	if len(d.got) != 0 {
		t.Fatalf("the gate reported to the room at the first failed write: %+v", d.got)
	}
	d.step(writeDirectAfter)
	if len(d.got) != 1 || d.got[0].Gate != d.dc+"-0" || d.got[0].Admitted != 1 {
		t.Fatalf("the room got %+v, want the gate's own report", d.got)
	}
}

// A gate whose writes to Redis fail reports its minute to the room
// directly, and keeps reporting that minute so once Redis takes its writes
// again; the data center's aggregate leaves out what it wrote before. The
// room counts each admission once: it counted the written ones twice (and
// a room's record over its limits is an overshoot) whether Redis kept them
// (one gate cut off from it) or not (Redis restarted empty).
func TestFallbackCountsEachAdmissionOnce(t *testing.T) {
	for _, restarted := range []bool{false, true} {
		t.Run(map[bool]string{false: "gate cut off", true: "Redis restarted empty"}[restarted], func(t *testing.T) {
			testFallbackOnce(t, restarted)
		})
	}
}

func testFallbackOnce(t *testing.T, restarted bool) {
	d := newDCGates(t, 2)
	d.step(0) // gate 0 ticks first and takes the lease
	if !d.reporters[0].Aggregate.Holds(d.now) {
		t.Fatal("gate 0 does not hold the lease")
	}
	admit1 := func(n int) {
		for range n {
			d.rooms[1].tally.Add(admit.Effect{Minute: t0, NewVisitor: true, Admitted: true, Seen: true, Pool: admit.PoolNew, Scope: d.dc})
		}
	}
	d.rooms[0].tally.Add(admit.Effect{Minute: t0, NewVisitor: true, Admitted: true, Seen: true, Pool: admit.PoolNew, Scope: d.dc})
	admit1(2)
	d.step(2 * time.Second) // both write: Redis holds gate 1's 2
	good := d.reporters[1].Aggregate.Client
	dead, err := NewRedisClient("redis://127.0.0.1:1/0") // nothing listens on port 1
	if err != nil {
		t.Fatal(err)
	}
	defer dead.Close()
	d.reporters[1].Aggregate.Client = dead
	admit1(3)
	for range 20 {
		d.step(500 * time.Millisecond) // fails, then goes to the room directly
	}
	direct := false
	for _, r := range d.got {
		direct = direct || r.Gate == d.dc+"-1"
	}
	if !direct {
		t.Fatalf("gate 1 did not report to the room directly: %+v", d.got)
	}
	if restarted {
		if err := good.Del(context.Background(), countsKey("shop", d.dc, t0)).Err(); err != nil {
			t.Fatal(err)
		}
	}
	d.reporters[1].Aggregate.Client = good // Redis takes its writes again
	admit1(4)
	for d.now.Before(t0.Add(time.Minute + 20*time.Second)) {
		d.step(100 * time.Millisecond)
	}
	if s := d.room.Snapshot; !s.Minute.After(t0) || s.PublishedAt.After(t0.Add(time.Minute+10*time.Second)) {
		t.Errorf("the next minute's snapshot (%s) was published %s after the minute: it waited for gate 1's final", s.Minute, s.PublishedAt.Sub(t0.Add(time.Minute)))
	}
	if got := d.room.Ledger.Totals(t0).Admitted; got != 10 {
		t.Errorf("the room counts %d admissions in the minute, want the 10 made (reports %+v)", got, d.got)
	}
}

// When the data center's Redis dies mid-minute, what a gate wrote into it
// before reaches the room by the gate's direct reports within the minute,
// though the gate counts nothing new: the aggregate that held it is never
// read, and the room, which waits only so long for final reports, would
// have published the next minute without it.
func TestRedisDeathMidMinuteLosesNothing(t *testing.T) {
	d := newDCGates(t, 1)
	d.step(0)
	for range 3 {
		d.rooms[0].tally.Add(admit.Effect{Minute: t0, NewVisitor: true, Admitted: true, Seen: true, Pool: admit.PoolNew, Scope: d.dc})
	}
	d.step(2 * time.Second)                              // written
	dead, err := NewRedisClient("redis://127.0.0.1:1/0") // nothing listens on port 1
	if err != nil {
		t.Fatal(err)
	}
	defer dead.Close()
	d.reporters[0].Aggregate.Client = dead
	for d.now.Before(t0.Add(time.Minute - time.Second)) {
		d.step(500 * time.Millisecond)
	}
	if got := d.room.Ledger.Totals(t0).Admitted; got != 3 {
		t.Errorf("before the minute ends the room counts %d admissions, want the 3 the gate wrote into Redis before it died (reports %+v)", got, d.got)
	}
}

// A gate that takes the lease over does not send again what the last
// holder sent: every report is a history event of the room.
func TestTakeoverSendsNothingTwice(t *testing.T) {
	d := newDCGates(t, 2)
	d.step(0)
	holder := 0
	if !d.reporters[0].Aggregate.Holds(d.now) {
		holder = 1
	}
	for _, r := range d.rooms {
		r.tally.Add(admit.Effect{Minute: t0, NewVisitor: true, Admitted: true, Seen: true})
	}
	for d.now.Before(t0.Add(time.Minute + 2*time.Second)) {
		d.step(100 * time.Millisecond)
	}
	d.alive[holder] = false
	deadline := time.Now().Add(10 * time.Second)
	for !d.holds() {
		if time.Now().After(deadline) {
			t.Fatal("no live gate took the lease over")
		}
		time.Sleep(50 * time.Millisecond)
		d.step(100 * time.Millisecond)
	}
	for range 10 {
		d.step(100 * time.Millisecond)
	}
	sent := 0
	for _, r := range d.got {
		if r.Minute.Equal(t0) {
			sent++
		}
	}
	if sent != 1 {
		t.Errorf("the room got %d reports of the minute, want its one final aggregate (%+v)", sent, d.got)
	}
}

// In a room with a short minute (the chaos suite's 12 s), what a gate
// wrote into a Redis that died half a second before the minute ended
// reaches the room an eighth of a minute after it, well before the room
// stops waiting for final reports (a quarter): it reached it 3 s after
// Redis died, and the chaos suite's room published a minute without it.
func TestRedisDeathNearAShortMinutesEnd(t *testing.T) {
	d := newDCGatesMinute(t, 1, 12)
	length := 12 * time.Second
	d.step(0)
	for range 3 {
		d.rooms[0].tally.Add(admit.Effect{Minute: t0, NewVisitor: true, Admitted: true, Seen: true, Pool: admit.PoolNew, Scope: d.dc})
	}
	for d.now.Before(t0.Add(length - 500*time.Millisecond)) {
		d.step(100 * time.Millisecond) // written
	}
	dead, err := NewRedisClient("redis://127.0.0.1:1/0") // nothing listens on port 1
	if err != nil {
		t.Fatal(err)
	}
	defer dead.Close()
	d.reporters[0].Aggregate.Client = dead
	for d.now.Before(t0.Add(length + length/8)) {
		d.step(100 * time.Millisecond)
	}
	if got := d.room.Ledger.Totals(t0).Admitted; got != 3 {
		t.Errorf("an eighth of a minute after the minute the room counts %d admissions, want the gate's 3 (reports %+v)", got, d.got)
	}
}
