package admit_test

import (
	"context"
	"errors"
	"maps"
	"slices"
	"testing"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	engine "github.com/edgeflow/edgeflow/internal/admit"
	"github.com/edgeflow/edgeflow/internal/admit/roomclient"
	"github.com/edgeflow/edgeflow/internal/testenv/replaytest"
	roomwf "github.com/edgeflow/edgeflow/workflows/admit"
	"github.com/edgeflow/edgeflow/workflows/admit/contract"
)

// TestRecordHistories regenerates the histories in testdata/ that
// TestReplayRecordedHistories replays. It runs only when
// EDGEFLOW_RECORD_HISTORY is the address of a fresh Temporal dev server with
// the Room search attribute, for example:
//
//	temporal server start-dev --headless --port 7388 --http-port 7389 --metrics-port 7390 \
//	    --search-attribute Room=Keyword
//	EDGEFLOW_RECORD_HISTORY=127.0.0.1:7388 go test ./workflows/admit/ -run TestRecordHistories -v
//
// A room with a 3-second minute takes reports from gates running the real
// engine (and one signal that is no report), continues as new, switches method, runs and cancels events, is
// deleted (and ignores a report), is created again and is finally cancelled.
// Rerun it after any intended change to the workflow, and check the new
// histories in (keeping the old ones in a subfolder while runs of the old
// code may still be in flight).
func TestRecordHistories(t *testing.T) {
	c := replaytest.Dial(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	w := startRoomWorker(t, c)
	rc := roomclient.Client{C: c}

	settings := engine.Settings{Name: "rec-shop", TotalActiveUsers: 12, NewUsersPerMinute: 6, SessionDuration: 1, RefreshIntervalSeconds: 1}
	if _, err := rc.Create(ctx, settings, roomclient.CreateOptions{MinuteSeconds: 3, HistoryBudget: 150}); err != nil {
		t.Fatalf("create (the server must be fresh): %v", err)
	}
	id := contract.RoomWorkflowID(settings.Name)
	first := runID(t, ctx, c, id)

	// Three gates in two data centers decide on the room's snapshots and
	// report every half second, until the room has continued as new: ams-1
	// reports alone, fra's two gates through their data center's aggregate
	// (engine.Aggregate, as its lease holder sends it), side by side as in
	// a rolling upgrade.
	gates := []engine.Gate{{DataCenter: "ams", ID: "ams-1"}, {DataCenter: "fra", ID: "fra-1"}, {DataCenter: "fra", ID: "fra-2"}}
	tallies := []*engine.Tally{engine.NewTally(settings.Name, gates[0], 0), engine.NewTally(settings.Name, gates[1], 0), engine.NewTally(settings.Name, gates[2], 0)}
	fra := map[time.Time]map[string]engine.Report{} // the fra gates' newest reports by minute, as in Redis
	aggregate := func(m time.Time, send func(engine.Report) error) error {
		reports := func(m time.Time) []engine.Report {
			var out []engine.Report
			for _, g := range []string{"fra-1", "fra-2"} {
				if r, ok := fra[m][g]; ok {
					out = append(out, r)
				}
			}
			return out
		}
		agg, ok := engine.Aggregate(settings.Name, "fra", m, reports(m.Add(-3*time.Second)), reports(m), false)
		if !ok {
			return nil
		}
		return send(agg)
	}
	counters := engine.NewMemoryCounter(nil)
	// A report signal that does not decode: dropped and counted, the
	// rollup goes on.
	if err := c.SignalWorkflow(ctx, id, "", contract.ReportSignal, "not a report"); err != nil {
		t.Fatal(err)
	}
	var tickets []*engine.Ticket
	// play lets one more visitor in line, decides every visitor's request
	// on snap and hands the gates' reports to send (fra's through their
	// aggregate).
	play := func(i int, snap engine.Snapshot, send func(engine.Report) error) {
		tickets = append(tickets, nil)
		for k := range tickets {
			g := k % 3
			d, err := engine.Decide(ctx, engine.Input{Now: time.Now(), Snapshot: &snap, Ticket: tickets[k], Gate: gates[g],
				Strategy: engine.SharedCounters{Store: counters}, Entropy: uint64(i*31 + k)})
			if err != nil {
				t.Fatal(err)
			}
			tallies[g].Add(d.Effect)
			if d.SetTicket {
				tickets[k] = d.Ticket
			}
		}
		for _, tl := range tallies {
			// The gates read the shared counters into their final
			// reports, as gates with Redis do.
			for _, m := range tl.Finish(engine.MinuteOf(time.Now(), 3*time.Second)) {
				var taken []engine.PoolCount
				for _, scope := range []string{"ams", "fra", engine.Anywhere} {
					if n, _ := counters.Load(ctx, engine.CounterKey(settings.Name, m, engine.PoolNew, scope)); n > 0 {
						taken = append(taken, engine.PoolCount{Pool: engine.PoolNew, Scope: scope, Count: int(n)})
					}
				}
				tl.StoreTaken(m, taken)
			}
			for _, r := range tl.Pending() {
				if r.DataCenter == "fra" {
					if fra[r.Minute] == nil {
						fra[r.Minute] = map[string]engine.Report{}
					}
					fra[r.Minute][r.Gate] = r
					continue
				}
				if err := send(r); err != nil {
					t.Fatal(err)
				}
			}
		}
		for _, m := range slices.SortedFunc(maps.Keys(fra), time.Time.Compare) {
			if !m.Before(engine.MinuteOf(time.Now(), 3*time.Second).Add(-3 * time.Second)) {
				if err := aggregate(m, send); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	report := func(r engine.Report) error { return rc.Report(ctx, r, nil) }
	// Temporal away (as when its server is frozen): no worker runs the
	// room, and the gates keep deciding on its last snapshot and keep
	// their reports. Back, the room waits for them before its next
	// snapshot and takes the minutes it published none of late
	// (await-outage-reports).
	away := func(snap engine.Snapshot) {
		w.Stop()
		var kept []engine.Report
		keep := func(r engine.Report) error { // the newest of each reporter and minute, as gates keep them
			kept = slices.DeleteFunc(kept, func(k engine.Report) bool { return k.Gate == r.Gate && k.Minute.Equal(r.Minute) })
			kept = append(kept, r)
			return nil
		}
		for i := 0; i < 24; i++ { // four of the room's minutes
			play(100+i, snap, keep)
			time.Sleep(500 * time.Millisecond)
		}
		w = startRoomWorker(t, c)
		time.Sleep(time.Second) // the room's timer fired long ago: it wakes first
		slices.SortStableFunc(kept, func(a, b engine.Report) int { return a.Minute.Compare(b.Minute) })
		for _, r := range kept {
			if err := report(r); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i := 0; runID(t, ctx, c, id) == first; i++ {
		if i > 80 {
			t.Fatal("the room never continued as new")
		}
		snap, err := rc.Snapshot(ctx, settings.Name)
		if err != nil {
			t.Fatal(err)
		}
		play(i, snap, report)
		time.Sleep(500 * time.Millisecond)
		if i == 6 {
			away(snap)
		}
	}
	last := runID(t, ctx, c, id)

	// The gates shut down: their last reports say they are leaving, so the
	// room waits for no more of theirs.
	for _, tl := range tallies {
		tl.Leave()
		for _, r := range tl.Pending() {
			if r.DataCenter == "fra" {
				if fra[r.Minute] == nil {
					fra[r.Minute] = map[string]engine.Report{}
				}
				fra[r.Minute][r.Gate] = r
				continue
			}
			if err := rc.Report(ctx, r, nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	for m := range fra {
		if !m.Before(engine.MinuteOf(time.Now(), 3*time.Second).Add(-3 * time.Second)) {
			if err := aggregate(m, report); err != nil {
				t.Fatal(err)
			}
		}
	}

	// Settings, events, delete and recreate, in the second run.
	random := settings
	random.QueueingMethod = engine.Random
	if _, err := rc.Update(ctx, random, 0); err != nil {
		t.Fatal(err)
	}
	pre, begin, end := time.Now().Add(2*time.Second), time.Now().Add(4*time.Second), time.Now().Add(8*time.Second)
	n := 3
	if _, err := rc.AddEvent(ctx, settings.Name, engine.Event{Name: "launch", PrequeueStartTime: &pre, EventStartTime: begin,
		EventEndTime: end, ShuffleAtEventStart: true, NewUsersPerMinute: &n}); err != nil {
		t.Fatal(err)
	}
	if _, err := rc.AddEvent(ctx, settings.Name, engine.Event{Name: "later", EventStartTime: end.Add(time.Hour), EventEndTime: end.Add(2 * time.Hour)}); err != nil {
		t.Fatal(err)
	}
	bad := random
	bad.NewUsersPerMinute = 0
	var inv *engine.InvalidError
	if _, err := rc.Update(ctx, bad, 0); !errors.As(err, &inv) {
		t.Fatalf("invalid update: %v", err)
	}
	if _, err := rc.CancelEvent(ctx, settings.Name, "later"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(10 * time.Second) // the event pre-queues, starts and ends
	if _, err := rc.Delete(ctx, settings.Name); err != nil {
		t.Fatal(err)
	}
	if err := rc.Report(ctx, engine.Report{Room: settings.Name, DataCenter: "ams", Gate: "ams-9", Minute: engine.MinuteOf(time.Now(), 3*time.Second), Seq: 1}, &settings); err != nil {
		t.Fatal(err)
	}
	if recreated, err := rc.Create(ctx, settings, roomclient.CreateOptions{}); err != nil || !recreated {
		t.Fatalf("recreate: %v %v", recreated, err)
	}
	time.Sleep(4 * time.Second)
	if runID(t, ctx, c, id) != last {
		t.Fatal("the second run continued as new too; raise the budget")
	}
	if err := c.CancelWorkflow(ctx, id, ""); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		d, err := c.DescribeWorkflow(ctx, id, "")
		if err != nil {
			t.Fatal(err)
		}
		if d.Status != enums.WORKFLOW_EXECUTION_STATUS_RUNNING {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the room did not end after cancellation")
		}
	}
	replaytest.WriteHistory(t, ctx, c, "room_continued_first_run.json", id, first)
	replaytest.WriteHistory(t, ctx, c, "room_last_run.json", id, last)
}

// startRoomWorker runs the room workflow until it is stopped or the test
// ends.
func startRoomWorker(t *testing.T, c client.Client) worker.Worker {
	t.Helper()
	w := worker.New(c, contract.TaskQueue, worker.Options{})
	roomwf.Register(w)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	return w
}

func runID(t *testing.T, ctx context.Context, c client.Client, id string) string {
	t.Helper()
	d, err := c.DescribeWorkflow(ctx, id, "")
	if err != nil {
		t.Fatal(err)
	}
	return d.WorkflowExecution.RunID
}
