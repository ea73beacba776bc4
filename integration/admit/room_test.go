// Package admit runs the room workflow on a real Temporal dev server, with
// the admit worker in this process and gates played by the engine itself.
package admit

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/worker"

	engine "github.com/edgeflow/edgeflow/internal/admit"
	"github.com/edgeflow/edgeflow/internal/admit/roomclient"
	"github.com/edgeflow/edgeflow/internal/testenv"
	roomwf "github.com/edgeflow/edgeflow/workflows/admit"
	"github.com/edgeflow/edgeflow/workflows/admit/contract"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	testenv.Main(m, testenv.Options{Temporal: true, Redis: true}, &env)
}

// startWorker runs an admit worker until stop (or the test's end).
func startWorker(t *testing.T) (stop func()) {
	t.Helper()
	testenv.Require(t, env)
	// A stopped worker's rooms move to the next worker once their sticky
	// queue times out: a second here, not the default five.
	w := worker.New(env.Client, contract.TaskQueue, worker.Options{StickyScheduleToStartTimeout: time.Second})
	registerRoom(w)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	stopped := false
	stop = func() {
		if !stopped {
			stopped = true
			w.Stop()
		}
	}
	t.Cleanup(stop)
	return stop
}

func registerRoom(w worker.Worker) { roomwf.Register(w) }

// waitFor polls the room's snapshot until ok holds, failing at the deadline.
func waitFor(t *testing.T, rc roomclient.Client, room string, within time.Duration, what string, ok func(engine.Snapshot) bool) engine.Snapshot {
	t.Helper()
	deadline := time.Now().Add(within)
	var last engine.Snapshot
	var err error
	for time.Now().Before(deadline) {
		// Each query gets a few seconds: one sent to a worker that has
		// just stopped must not use up the whole wait.
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		last, err = rc.Snapshot(ctx, room)
		cancel()
		if err == nil && ok(last) {
			return last
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s: not within %s (last snapshot %s, error %v)", what, within, last.String(), err)
	return last
}

// gate plays one gate: it decides with the engine on the room's snapshot,
// with counters shared by its data center, and reports its tally.
type gate struct {
	engine.Gate
	tally *engine.Tally
}

func (g *gate) visit(t *testing.T, snap *engine.Snapshot, counters engine.Counter, n int) (admitted, queued int) {
	t.Helper()
	for i := range n {
		now := time.Now()
		d, err := engine.Decide(context.Background(), engine.Input{Now: now, Snapshot: snap, Gate: g.Gate,
			Strategy: engine.SharedCounters{Store: counters}, Entropy: uint64(i)})
		if err != nil {
			t.Fatal(err)
		}
		g.tally.Add(d.Effect)
		switch d.Outcome {
		case engine.Admit:
			admitted++
		case engine.Queue:
			queued++
			// It comes back when told, and is counted waiting then.
			back, err := engine.Decide(context.Background(), engine.Input{Now: now.Add(d.RefreshIn), Snapshot: snap, Ticket: d.Ticket,
				Gate: g.Gate, Strategy: engine.SharedCounters{Store: counters}, Entropy: uint64(i)})
			if err != nil || back.Outcome != engine.Queue || back.Effect.Waiting != 1 {
				t.Fatalf("a queued visitor back: %s %+v %v", back.Outcome, back.Effect, err)
			}
			g.tally.Add(back.Effect)
		default:
			t.Fatalf("outcome %s", d.Outcome)
		}
	}
	return admitted, queued
}

func (g *gate) report(t *testing.T, rc roomclient.Client) {
	t.Helper()
	for _, r := range g.tally.Pending() {
		if err := rc.Report(context.Background(), r, nil); err != nil {
			t.Fatal(err)
		}
	}
}

// Known traffic through gates in two data centers: the snapshot of the next
// minute is exactly what that traffic implies.
func TestSnapshotFollowsTraffic(t *testing.T) {
	startWorker(t)
	rc := roomclient.Client{C: env.Client}
	ctx := context.Background()
	const minute = 6 * time.Second
	s := engine.Settings{Name: "it-traffic", TotalActiveUsers: 30, NewUsersPerMinute: 20}
	if _, err := rc.Create(ctx, s, roomclient.CreateOptions{MinuteSeconds: int(minute / time.Second)}); err != nil {
		t.Fatal(err)
	}
	first := waitFor(t, rc, s.Name, time.Minute, "first snapshot", func(engine.Snapshot) bool { return true })
	if first.SlotsAvailable != 20 || first.Status != engine.StatusNotQueueing {
		t.Fatalf("a new room publishes at once, admitting: %s", first.String())
	}
	// Start the traffic in a fresh minute, once its snapshot is out.
	m := engine.MinuteOf(time.Now(), minute).Add(minute)
	snap := waitFor(t, rc, s.Name, 3*minute, "the minute's snapshot", func(x engine.Snapshot) bool { return !x.Minute.Before(m) })
	if !snap.Minute.Equal(m) || time.Since(m) > minute/2 {
		t.Skipf("the machine is too slow for a %s minute: snapshot of %s seen at %s", minute, snap.Minute, time.Now())
	}
	// One store holds every counter: the data centers' and the Anywhere
	// counter have keys of their own (a real deployment puts each data
	// center's in its own Redis).
	counters := engine.NewMemoryCounter(nil)
	gates := []*gate{
		{Gate: engine.Gate{DataCenter: "ams", ID: "ams-1"}}, {Gate: engine.Gate{DataCenter: "ams", ID: "ams-2"}},
		{Gate: engine.Gate{DataCenter: "fra", ID: "fra-1"}},
	}
	for _, g := range gates {
		g.tally = engine.NewTally(s.Name, g.Gate, 0)
	}
	// Every slot of this minute is Anywhere (no history yet): 12 + 4 + 4
	// admitted, then 5 queued at fra.
	total := 0
	for i, n := range []int{12, 4, 9} {
		a, q := gates[i].visit(t, &snap, counters, n)
		total += a
		if i == 2 && (a != 4 || q != 5) {
			t.Fatalf("fra: %d admitted, %d queued; want 4 and 5", a, q)
		}
	}
	if time.Now().After(m.Add(minute)) {
		t.Skip("the traffic did not fit in one minute on this machine")
	}
	for _, g := range gates {
		g.report(t, rc)
	}
	next := waitFor(t, rc, s.Name, 3*minute, "the next minute's snapshot", func(x engine.Snapshot) bool { return x.Minute.After(m) })
	if !next.Minute.Equal(m.Add(minute)) {
		t.Fatalf("snapshot of %s, want %s", next.Minute, m.Add(minute))
	}
	// 20 sessions, so 10 slots; 5 waiting in bucket m, all reserved; 5 left
	// for new visitors; 16 of 30 seen at ams, 4 at fra.
	want := fmt.Sprintf("active 20 slots 10 waiting 5 buckets [{%s 5 5}] new 5 gates 3 shares [ams 16 0.533 fra 4 0.133] queueing",
		m.Format(time.RFC3339))
	got := fmt.Sprintf("active %d slots %d waiting %d buckets [%s] new %d gates %d shares [%s] %s", next.ActiveUsers, next.SlotsAvailable,
		next.CurrentlyWaiting, buckets(next.Buckets), next.NewUserSlots, next.GatesActive, shares(next.TrafficHistory), next.Status)
	if got != want {
		t.Fatalf("snapshot:\n got %s\nwant %s", got, want)
	}
	sum := 0
	for _, p := range next.Pools {
		sum += p.Slots
	}
	if sum != next.SlotsAvailable || total != 20 {
		t.Errorf("pools hold %d of %d slots; %d admitted", sum, next.SlotsAvailable, total)
	}
	d, err := rc.Describe(ctx, s.Name)
	if err != nil || d.Stats.Reports < 3 || d.Stats.ReportsRefused != 0 {
		t.Errorf("stats %+v %v", d.Stats, err)
	}
}

func buckets(bs []engine.Bucket) string {
	out := ""
	for _, b := range bs {
		out += fmt.Sprintf("{%s %d %d}", b.Key.Format(time.RFC3339), b.Waiting, b.ReservedSlots)
	}
	return out
}

func shares(ts []engine.TrafficShare) string {
	out := ""
	for i, s := range ts {
		if i > 0 {
			out += " "
		}
		out += fmt.Sprintf("%s %d %.3f", s.DataCenter, s.Users, s.Share)
	}
	return out
}

// Reports sent while no worker runs are kept by Temporal and rolled up once
// a worker is back: a worker dying loses nothing.
func TestReportsSurviveWorkerOutage(t *testing.T) {
	stop := startWorker(t)
	rc := roomclient.Client{C: env.Client}
	ctx := context.Background()
	const minute = 5 * time.Second
	s := engine.Settings{Name: "it-outage", TotalActiveUsers: 1000, NewUsersPerMinute: 1000}
	if _, err := rc.Create(ctx, s, roomclient.CreateOptions{MinuteSeconds: int(minute / time.Second)}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, rc, s.Name, time.Minute, "first snapshot", func(engine.Snapshot) bool { return true })
	stop()
	// Two minutes of reports while the room's worker is gone.
	m := engine.MinuteOf(time.Now(), minute)
	for i, mm := range []time.Time{m, m.Add(minute)} {
		r := engine.Report{Room: s.Name, DataCenter: "ams", Gate: "ams-1", Minute: mm, Seq: uint64(i + 1), Admitted: 7, Seen: 7,
			Taken: []engine.PoolCount{{Pool: engine.PoolNew, Scope: engine.Anywhere, Count: 7}}}
		if err := rc.Report(ctx, r, nil); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(minute)
	startWorker(t)
	next := waitFor(t, rc, s.Name, 8*minute, "a snapshot counting both minutes", func(x engine.Snapshot) bool {
		return x.Minute.After(m.Add(minute))
	})
	if next.ActiveUsers != 14 {
		t.Fatalf("after the outage: %s, want 14 active", next.String())
	}
}

// A gate can create a room from its file by signal-with-start; once the
// room is deleted, the same signal-with-start does not bring it back.
func TestSignalWithStartAndDeletedStaysDeleted(t *testing.T) {
	startWorker(t)
	rc := roomclient.Client{C: env.Client}
	ctx := context.Background()
	fromFile, err := engine.ParseSettings([]byte(`{"name":"it-gate","total_active_users":50,"new_users_per_minute":10,"path":"/x/"}`))
	if err != nil {
		t.Fatal(err)
	}
	rep := engine.Report{Room: fromFile.Name, DataCenter: "ams", Gate: "ams-1", Minute: engine.MinuteOf(time.Now(), time.Minute), Seq: 1, NewVisitors: 1}
	if err := rc.Report(ctx, rep, &fromFile); err != nil {
		t.Fatal(err)
	}
	// The room answers its first query once a worker has taken its first
	// task: a query sent sooner may time out, and is asked again.
	var d contract.Description
	deadline := time.Now().Add(time.Minute)
	for d, err = rc.Describe(ctx, fromFile.Name); err != nil && time.Now().Before(deadline); d, err = rc.Describe(ctx, fromFile.Name) {
		time.Sleep(200 * time.Millisecond)
	}
	if err != nil || d.Settings.Path != "/x/" || d.Stats.Reports != 1 {
		t.Fatalf("room created by a gate: %+v %v", d, err)
	}
	if _, err := rc.Create(ctx, fromFile, roomclient.CreateOptions{}); !errors.Is(err, roomclient.ErrExists) {
		t.Fatalf("create on an existing name: %v", err)
	}
	if _, err := rc.Delete(ctx, fromFile.Name); err != nil {
		t.Fatal(err)
	}
	rep.Seq = 2
	if err := rc.Report(ctx, rep, &fromFile); err != nil {
		t.Fatal(err)
	}
	d, err = rc.Describe(ctx, fromFile.Name)
	if err != nil || !d.Deleted || d.Snapshot.Status != engine.StatusDeleted || d.Stats.ReportsRefused != 1 {
		t.Fatalf("after delete and another signal-with-start: %+v %v", d, err)
	}
	bad := fromFile
	bad.QueueingStatusCode = 503
	if _, err := rc.Create(ctx, bad, roomclient.CreateOptions{}); err == nil {
		t.Fatal("invalid settings accepted")
	}
	if recreated, err := rc.Create(ctx, fromFile, roomclient.CreateOptions{}); err != nil || !recreated {
		t.Fatalf("create after delete: %v %v", recreated, err)
	}
	var inv *engine.InvalidError
	bad = fromFile
	bad.TotalActiveUsers = -1
	if _, err := rc.Update(ctx, bad, 0); !errors.As(err, &inv) || inv.First().Field != "total_active_users" {
		t.Fatalf("invalid update: %v", err)
	}
}

// A room given as many events with as large pages as it takes — and reports
// from more invented gates than a minute holds — continues as new on the
// real server and keeps running (it used to be terminated:
// BadContinueAsNewAttributes, input exceeds size limit).
func TestRoomAtItsBoundsContinuesAsNew(t *testing.T) {
	startWorker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rc := roomclient.Client{C: env.Client}
	page := "<p>" + strings.Repeat("x", engine.MaxCustomPageSize-7) + "</p>"
	s := engine.Settings{Name: "it-bounds", TotalActiveUsers: 10, NewUsersPerMinute: 10, CustomPageHTML: page}
	if _, err := rc.Create(ctx, s, roomclient.CreateOptions{MinuteSeconds: 3, HistoryBudget: 200}); err != nil {
		t.Fatal(err)
	}
	id := contract.RoomWorkflowID(s.Name)
	first, err := env.Client.DescribeWorkflow(ctx, id, "")
	if err != nil {
		t.Fatal(err)
	}
	refused := 0
	for i := range 50 {
		from := time.Now().Add(time.Duration(i+1) * time.Hour)
		_, err := rc.AddEvent(ctx, s.Name, engine.Event{Name: fmt.Sprintf("e%d", i), EventStartTime: from, EventEndTime: from.Add(time.Minute), CustomPageHTML: &page})
		var inv *engine.InvalidError
		switch {
		case errors.As(err, &inv) && inv.First().Field == "custom_page_html":
			refused++
		case err != nil:
			t.Fatalf("event %d: %v", i, err)
		}
	}
	if refused != 43 {
		t.Errorf("%d events refused, want the 43 past 512 KiB of pages", refused)
	}
	minute := engine.MinuteOf(time.Now(), 3*time.Second)
	for g := range 300 {
		rep := engine.Report{Room: s.Name, DataCenter: "xx", Gate: fmt.Sprintf("%060d%04d", 0, g), Minute: minute, Seq: 1, Admitted: 1}
		if err := rc.Report(ctx, rep, nil); err != nil {
			t.Fatal(err)
		}
	}
	for {
		d, err := env.Client.DescribeWorkflow(ctx, id, "")
		if err != nil {
			t.Fatal(err)
		}
		if d.WorkflowExecution.RunID != first.WorkflowExecution.RunID {
			if d.Status != enums.WORKFLOW_EXECUTION_STATUS_RUNNING {
				t.Fatalf("the next run is %s", d.Status)
			}
			break
		}
		if d.Status != enums.WORKFLOW_EXECUTION_STATUS_RUNNING {
			t.Fatalf("the room ended %s instead of continuing as new", d.Status)
		}
		if ctx.Err() != nil {
			t.Fatal("the room never continued as new")
		}
		time.Sleep(200 * time.Millisecond)
	}
	desc, err := rc.Describe(ctx, s.Name)
	if err != nil {
		t.Fatal(err)
	}
	if desc.Runs < 1 || len(desc.Events) != 7 || desc.Settings.CustomPageHTML != page {
		t.Errorf("the next run: %d runs, %d events, page of %d bytes", desc.Runs, len(desc.Events), len(desc.Settings.CustomPageHTML))
	}
}
