package admit_test

import (
	"errors"
	"log/slog"
	"os"
	"testing"
	"time"

	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	engine "github.com/edgeflow/edgeflow/internal/admit"
	roomwf "github.com/edgeflow/edgeflow/workflows/admit"
	"github.com/edgeflow/edgeflow/workflows/admit/contract"
)

var start = time.Date(2023, 9, 11, 11, 44, 30, 0, time.UTC)

func minute(m int) time.Time { return time.Date(2023, 9, 11, 11, m, 0, 0, time.UTC) }

type roomTest struct {
	t   *testing.T
	env *testsuite.TestWorkflowEnvironment
}

func newRoomTest(t *testing.T) *roomTest {
	var s testsuite.WorkflowTestSuite
	s.SetLogger(log.NewStructuredLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))))
	env := s.NewTestWorkflowEnvironment()
	env.SetStartTime(start)
	roomwf.Register(env)
	return &roomTest{t: t, env: env}
}

// at runs fn at the given offset from the start, in virtual time.
func (rt *roomTest) at(d time.Duration, fn func()) { rt.env.RegisterDelayedCallback(fn, d) }

func (rt *roomTest) snapshot() engine.Snapshot {
	rt.t.Helper()
	v, err := rt.env.QueryWorkflow(contract.SnapshotQuery)
	if err != nil {
		rt.t.Fatal(err)
	}
	var s engine.Snapshot
	if err := v.Get(&s); err != nil {
		rt.t.Fatal(err)
	}
	return s
}

func (rt *roomTest) describe() contract.Description {
	rt.t.Helper()
	v, err := rt.env.QueryWorkflow(contract.DescribeQuery)
	if err != nil {
		rt.t.Fatal(err)
	}
	var d contract.Description
	if err := v.Get(&d); err != nil {
		rt.t.Fatal(err)
	}
	return d
}

// update sends an update at the given offset; check hears its result, or
// the error it was refused or failed with. (Updates run after the callback
// that sends them, so anything that depends on one goes in a later step.)
func (rt *roomTest) update(d time.Duration, name string, check func(contract.Change, error), arg ...any) {
	rt.at(d, func() {
		called := false
		rt.env.UpdateWorkflow(name, "", &testsuite.TestUpdateCallback{
			OnReject: func(err error) { called = true; check(contract.Change{}, err) },
			OnAccept: func() {},
			OnComplete: func(v any, err error) {
				called = true
				c, _ := v.(contract.Change)
				check(c, err)
			},
		}, arg...)
		rt.env.RegisterDelayedCallback(func() {
			if !called {
				rt.t.Errorf("update %s at %s never finished", name, d)
			}
		}, time.Millisecond)
	})
}

func (rt *roomTest) signal(r engine.Report) {
	r.Room = "shop"
	rt.env.SignalWorkflow(contract.ReportSignal, r)
}

func (rt *roomTest) run(in contract.RoomInput, end time.Duration) error {
	rt.at(end, func() { rt.env.CancelWorkflow() })
	rt.env.ExecuteWorkflow(contract.WorkflowTypeRoom, in)
	return rt.env.GetWorkflowError()
}

func shopInput() contract.RoomInput {
	return contract.RoomInput{Settings: engine.Settings{Name: "shop", TotalActiveUsers: 200, NewUsersPerMinute: 200}}
}

func fieldProblems(t *testing.T, err error, typ string) []engine.FieldError {
	t.Helper()
	var app *temporal.ApplicationError
	if !errors.As(err, &app) || app.Type() != typ {
		t.Fatalf("error %v, want an application error of type %s", err, typ)
	}
	var problems []engine.FieldError
	if app.HasDetails() {
		if err := app.Details(&problems); err != nil {
			t.Fatal(err)
		}
	}
	return problems
}

// Reports received together are each read on their own: an idle gate's
// heartbeat, which leaves its zero counts out, counts nothing even after a
// busy gate's report (decoded into the same value, it took that report's
// counts: 40 active users instead of 20).
func TestReportsReceivedTogetherCountOnce(t *testing.T) {
	rt := newRoomTest(t)
	rt.at(10*time.Second, func() {
		// Both reach the workflow in one task.
		rt.env.SignalWorkflowSkippingWorkflowTask(contract.ReportSignal, engine.Report{Room: "shop", DataCenter: "sjc", Gate: "sjc-1",
			Minute: minute(44), Seq: 1, Admitted: 20, Seen: 20, Final: true, Queued: []engine.MinuteCount{{Minute: minute(44), Count: 5}}})
		rt.signal(engine.Report{DataCenter: "lhr", Gate: "lhr-1", Minute: minute(44), Seq: 1, Final: true})
	})
	rt.at(40*time.Second, func() {
		s := rt.snapshot()
		if !s.Minute.Equal(minute(45)) || s.ActiveUsers != 20 || s.CurrentlyWaiting != 5 {
			t.Errorf("11:45: %s", s.String())
		}
	})
	if err := rt.run(shopInput(), time.Minute); !errors.Is(err, workflow.ErrCanceled) && !temporal.IsCanceledError(err) {
		t.Fatalf("workflow ended with %v", err)
	}
}

// A snapshot waits for every gate's final report of the minute before: the
// gate that reported 11:44 without saying it was done holds 11:45 back until
// its final report arrives, and a gate that never sends one holds it back
// no longer than a quarter of the minute.
func TestRoomWaitsForFinalReports(t *testing.T) {
	rt := newRoomTest(t)
	rt.at(10*time.Second, func() { // 11:44:40
		rt.signal(engine.Report{DataCenter: "sjc", Gate: "sjc-1", Minute: minute(44), Seq: 1, Admitted: 20, Seen: 20, Final: true})
		rt.signal(engine.Report{DataCenter: "lhr", Gate: "lhr-1", Minute: minute(44), Seq: 1, Admitted: 10, Seen: 10})
	})
	rt.at(38*time.Second, func() { // 11:45:08: past the grace, lhr-1 not final
		if s := rt.snapshot(); !s.Minute.Equal(minute(44)) {
			t.Errorf("published 11:45 without lhr-1's final report: %s", s.String())
		}
		rt.signal(engine.Report{DataCenter: "lhr", Gate: "lhr-1", Minute: minute(44), Seq: 2, Admitted: 30, Seen: 30, Final: true})
	})
	rt.at(39*time.Second, func() {
		if s := rt.snapshot(); !s.Minute.Equal(minute(45)) || s.ActiveUsers != 50 || s.PublishedAt.After(minute(45).Add(9*time.Second)) {
			t.Errorf("11:45 once every gate's 11:44 was final: %s, published %s", s.String(), s.PublishedAt.Format("15:04:05"))
		}
	})
	// 11:45: sjc-1 reports, lhr-1 falls silent; 11:46 waits for lhr-1
	// (it reported 11:44 and did not leave), then goes without it.
	rt.at(50*time.Second, func() {
		rt.signal(engine.Report{DataCenter: "sjc", Gate: "sjc-1", Minute: minute(45), Seq: 2, Admitted: 5, Seen: 5, Final: true})
	})
	rt.at(98*time.Second, func() { // 11:46:08
		if s := rt.snapshot(); !s.Minute.Equal(minute(45)) {
			t.Errorf("published 11:46 without lhr-1: %s", s.String())
		}
	})
	rt.at(106*time.Second, func() { // 11:46:16, past the quarter minute
		if s := rt.snapshot(); !s.Minute.Equal(minute(46)) || !s.PublishedAt.Equal(minute(46).Add(15*time.Second)) {
			t.Errorf("11:46 after a quarter minute: %s, published %s", s.String(), s.PublishedAt.Format("15:04:05"))
		}
	})
	if err := rt.run(shopInput(), 2*time.Minute); !errors.Is(err, workflow.ErrCanceled) && !temporal.IsCanceledError(err) {
		t.Fatalf("workflow ended with %v", err)
	}
}

// A gate killed before it reported its last admissions: the other gate's
// final report reads the shared counters, and the room counts the
// difference as active users of the minute.
func TestRoomCountsSlotsNoGateReported(t *testing.T) {
	rt := newRoomTest(t)
	taken := func(n int) []engine.PoolCount {
		return []engine.PoolCount{{Pool: engine.PoolNew, Scope: engine.Anywhere, Count: n}}
	}
	rt.at(10*time.Second, func() {
		rt.signal(engine.Report{DataCenter: "sjc", Gate: "sjc-2", Minute: minute(44), Seq: 1, Admitted: 5, Seen: 5, Taken: taken(5)})
	})
	rt.at(31*time.Second, func() { // sjc-2 died with 3 admissions unreported
		rt.signal(engine.Report{DataCenter: "sjc", Gate: "sjc-1", Minute: minute(44), Seq: 1, Admitted: 20, Seen: 20, Taken: taken(20),
			StoreTaken: taken(28), Final: true})
	})
	rt.at(50*time.Second, func() {
		s := rt.snapshot()
		if !s.Minute.Equal(minute(45)) || s.ActiveUsers != 28 {
			t.Errorf("11:45 counts %d active users, want 28 (25 reported, 3 only in the counters): %s", s.ActiveUsers, s.String())
		}
		d := rt.describe()
		if got := d.Ledger.Totals(minute(44)); got.Unreported != 3 || got.Admitted != 28 {
			t.Errorf("11:44 in the ledger: %+v, want 28 admitted, 3 of them unreported", got)
		}
		if n := len(d.Recent); n == 0 || d.Recent[n-1].Unreported != 3 || d.Recent[n-1].Admitted != 28 {
			t.Errorf("recent minutes %+v, want 11:44 with 28 admitted, 3 unreported", d.Recent)
		}
	})
	if err := rt.run(shopInput(), time.Minute); !errors.Is(err, workflow.ErrCanceled) && !temporal.IsCanceledError(err) {
		t.Fatalf("workflow ended with %v", err)
	}
}

// The "How Waiting Room makes queueing decisions" post's San Jose state,
// through the workflow: reports during 11:44, the rollup at 11:45 (after 5 s
// of grace), a method switch, and a refused update that changes nothing.
func TestRoomMinuteBoundaries(t *testing.T) {
	rt := newRoomTest(t)
	rt.at(time.Second, func() {
		s := rt.snapshot()
		if s.Status != engine.StatusNotQueueing || !s.Minute.Equal(minute(44)) || s.SlotsAvailable != 200 || s.Seq != 1 {
			t.Errorf("first snapshot: %s", s.String())
		}
	})
	rt.at(10*time.Second, func() {
		rt.signal(engine.Report{DataCenter: "sjc", Gate: "sjc-1", Minute: minute(44), Seq: 1, Admitted: 20, Seen: 20, Final: true})
		rt.signal(engine.Report{DataCenter: "lhr", Gate: "lhr-1", Minute: minute(44), Seq: 1, Admitted: 30, Seen: 30, Final: true,
			Queued: []engine.MinuteCount{{Minute: minute(44), Count: 5}}})
		rt.signal(engine.Report{DataCenter: "lhr", Gate: "bad gate", Minute: minute(44), Seq: 1})
	})
	rt.at(33*time.Second, func() { // 11:45:03, inside the grace: still 11:44
		if s := rt.snapshot(); !s.Minute.Equal(minute(44)) {
			t.Errorf("published before the grace ended: %s", s.Minute)
		}
	})
	rt.at(40*time.Second, func() {
		s := rt.snapshot()
		if !s.Minute.Equal(minute(45)) || s.ActiveUsers != 50 || s.SlotsAvailable != 150 || s.CurrentlyWaiting != 5 || s.Status != engine.StatusQueueing {
			t.Fatalf("11:45: %s", s.String())
		}
		if len(s.TrafficHistory) != 2 || s.TrafficHistory[1].DataCenter != "sjc" || s.TrafficHistory[1].Share != 0.1 || s.AnywhereShare != 0.75 {
			t.Errorf("traffic %+v", s.TrafficHistory)
		}
		if d := rt.describe(); d.Stats.Reports != 2 || d.Stats.ReportsRefused != 1 || d.Stats.LastRefusal == "" {
			t.Errorf("stats %+v", d.Stats)
		}
	})
	random := engine.Settings{Name: "shop", TotalActiveUsers: 200, NewUsersPerMinute: 200, QueueingMethod: engine.Random}
	rt.update(50*time.Second, contract.SettingsUpdate, func(c contract.Change, err error) {
		if err != nil || c.SettingsVersion != 2 || c.Snapshot.Settings.QueueingMethod != engine.Random {
			t.Fatalf("switch to random: %v %+v", err, c)
		}
	}, contract.SettingsChange{Settings: random, IfVersion: 1})
	var before engine.Snapshot
	rt.at(55*time.Second, func() {
		before = rt.snapshot()
		if len(before.Pools) != 1 || !before.Pools[0].Bucket.IsZero() || before.Pools[0].Slots != 150 || len(before.Buckets) != 1 ||
			before.Buckets[0].ReservedSlots != 5 || !before.PacedRelease {
			t.Errorf("random snapshot keeps the bucket and its reservation, one pool for all: %+v", before)
		}
	})
	bad := random
	bad.TotalActiveUsers, bad.CookieAttributes.SameSite, bad.CookieAttributes.Secure = 0, "none", "never"
	rt.update(60*time.Second, contract.SettingsUpdate, func(_ contract.Change, err error) {
		problems := fieldProblems(t, err, contract.ErrInvalidSettings)
		if len(problems) != 2 || problems[0].Field != "total_active_users" || problems[1].Field != "cookie_attributes.secure" {
			t.Errorf("problems %+v", problems)
		}
	}, contract.SettingsChange{Settings: bad})
	rt.update(61*time.Second, contract.SettingsUpdate, func(_ contract.Change, err error) {
		fieldProblems(t, err, contract.ErrVersionConflict)
	}, contract.SettingsChange{Settings: random, IfVersion: 1})
	renamed := random
	renamed.Name = "other"
	rt.update(62*time.Second, contract.SettingsUpdate, func(_ contract.Change, err error) {
		if p := fieldProblems(t, err, contract.ErrInvalidSettings); len(p) != 1 || p[0].Field != "name" {
			t.Errorf("rename: %+v", p)
		}
	}, contract.SettingsChange{Settings: renamed})
	rt.at(63*time.Second, func() {
		if after := rt.snapshot(); after.Seq != before.Seq || after.SettingsVersion != 2 || rt.describe().Stats.SettingsChanges != 1 {
			t.Errorf("a refused update changed the room: seq %d → %d", before.Seq, after.Seq)
		}
	})
	err := rt.run(shopInput(), 2*time.Minute)
	if !errors.Is(err, workflow.ErrCanceled) && !temporal.IsCanceledError(err) {
		t.Fatalf("workflow ended with %v", err)
	}
}

// The room continues as new before its history grows large, carrying its
// whole state, and the next run goes on from it.
func TestRoomContinuesAsNew(t *testing.T) {
	rt := newRoomTest(t)
	in := shopInput()
	in.HistoryBudget = 60
	rt.at(3*time.Minute, func() { rt.env.SetCurrentHistoryLength(61) })
	rt.at(3*time.Minute+time.Second, func() {
		rt.signal(engine.Report{DataCenter: "ams", Gate: "ams-2", Minute: minute(47), Seq: 1, Admitted: 1, Seen: 1})
	})
	for i := range 20 {
		rt.at(time.Duration(10+i*3)*time.Second, func() {
			m := minute(44)
			if i > 6 {
				m = minute(45)
			}
			rt.signal(engine.Report{DataCenter: "ams", Gate: "ams-1", Minute: m, Seq: uint64(i + 1), Admitted: i + 1, Seen: i + 1})
		})
	}
	rt.env.ExecuteWorkflow(contract.WorkflowTypeRoom, in)
	var can *workflow.ContinueAsNewError
	if err := rt.env.GetWorkflowError(); !errors.As(err, &can) {
		t.Fatalf("workflow ended with %v, want continue-as-new", err)
	}
	var next contract.RoomInput
	if err := converter.GetDefaultDataConverter().FromPayloads(can.Input, &next); err != nil {
		t.Fatal(err)
	}
	st := next.State
	if st == nil || st.Runs != 1 || st.Room.Settings.Name != "shop" || next.HistoryBudget != 60 || st.Stats.Reports == 0 {
		t.Fatalf("carried state %+v", next)
	}
	if st.Room.Snapshot == nil || len(st.Room.Ledger.Open)+len(st.Room.Ledger.Closed) == 0 {
		t.Fatalf("the ledger was not carried: %+v", st.Room.Ledger)
	}

	// The next run starts from the carried state: same snapshot, no new
	// first snapshot.
	rt2 := newRoomTest(t)
	rt2.env.SetStartTime(rt.env.Now())
	carried := *st.Room.Snapshot
	rt2.at(time.Second, func() {
		if s := rt2.snapshot(); s.Seq < carried.Seq || s.Room != "shop" {
			t.Errorf("resumed snapshot %d, carried %d", s.Seq, carried.Seq)
		}
		if d := rt2.describe(); d.Runs != 1 || d.Stats.Reports != st.Stats.Reports {
			t.Errorf("resumed description %+v", d)
		}
	})
	_ = rt2.run(next, time.Minute)
}

// An event pre-queues, starts with its overrides and ends, each switched by
// a durable timer at its exact time.
func TestRoomEventsSwitchOnTime(t *testing.T) {
	rt := newRoomTest(t)
	pre, begin, end := minute(46), minute(48).Add(20*time.Second), minute(50)
	n, random := 50, engine.Random
	rt.update(time.Second, contract.AddEventUpdate, func(_ contract.Change, err error) {
		if err != nil {
			t.Fatal(err)
		}
	}, engine.Event{Name: "launch", PrequeueStartTime: &pre, EventStartTime: begin, EventEndTime: end,
		TotalActiveUsers: &n, NewUsersPerMinute: &n, QueueingMethod: &random})
	rt.update(2*time.Second, contract.AddEventUpdate, func(_ contract.Change, err error) {
		if p := fieldProblems(t, err, contract.ErrInvalidSettings); len(p) != 1 || p[0].Field != "event_start_time" {
			t.Errorf("overlapping event: %+v", p)
		}
	}, engine.Event{Name: "overlap", EventStartTime: begin, EventEndTime: end})
	rt.update(3*time.Second, contract.CancelEventUpdate, func(_ contract.Change, err error) {
		fieldProblems(t, err, contract.ErrNoSuchEvent)
	}, "nope")
	check := func(at time.Time, status engine.Status, limit int, method engine.QueueingMethod) {
		rt.at(at.Sub(start)+time.Millisecond, func() {
			s := rt.snapshot()
			if s.Status != status || s.Settings.NewUsersPerMinute != limit || s.Settings.QueueingMethod != method {
				t.Errorf("at %s: %s (limit %d, %s), want %s, %d, %s", at.Format("15:04:05"), s.Status, s.Settings.NewUsersPerMinute,
					s.Settings.QueueingMethod, status, limit, method)
			}
		})
	}
	check(pre.Add(-time.Second), engine.StatusNotQueueing, 200, engine.FIFO)
	check(pre, engine.StatusEventPrequeueing, 200, engine.FIFO)
	check(begin.Add(-time.Second), engine.StatusEventPrequeueing, 200, engine.FIFO)
	check(begin, engine.StatusNotQueueing, 50, engine.Random)
	check(end.Add(-time.Second), engine.StatusNotQueueing, 50, engine.Random)
	check(end, engine.StatusNotQueueing, 200, engine.FIFO)
	rt.at(end.Sub(start)+time.Minute, func() {
		if d := rt.describe(); len(d.Events) != 0 {
			t.Errorf("ended event still listed: %+v", d.Events)
		}
	})
	_ = rt.run(shopInput(), end.Sub(start)+2*time.Minute)
}

// A deleted room stays deleted: reports are ignored, updates refused, gates
// see it deleted; only recreate brings it back.
func TestRoomDeleteAndRecreate(t *testing.T) {
	rt := newRoomTest(t)
	rt.update(10*time.Second, contract.DeleteUpdate, func(c contract.Change, err error) {
		if err != nil || !c.Deleted || c.Snapshot.Status != engine.StatusDeleted {
			t.Fatalf("delete: %v %+v", err, c)
		}
	})
	rt.at(11*time.Second, func() {
		rt.signal(engine.Report{DataCenter: "ams", Gate: "ams-1", Minute: minute(44), Seq: 1, Admitted: 1})
	})
	rt.update(12*time.Second, contract.SettingsUpdate, func(_ contract.Change, err error) {
		fieldProblems(t, err, contract.ErrRoomDeleted)
	}, contract.SettingsChange{Settings: shopInput().Settings})
	rt.at(5*time.Minute, func() {
		d := rt.describe()
		if !d.Deleted || d.Snapshot.Status != engine.StatusDeleted || d.Stats.ReportsRefused != 1 || d.Stats.Reports != 0 {
			t.Fatalf("after delete: %+v", d)
		}
	})
	again := shopInput().Settings
	again.NewUsersPerMinute = 77
	rt.update(5*time.Minute+time.Second, contract.RecreateUpdate, func(c contract.Change, err error) {
		if err != nil || c.Deleted || c.Snapshot.SlotsAvailable != 77 || c.SettingsVersion != 2 {
			t.Fatalf("recreate: %v %+v", err, c)
		}
	}, again)
	rt.update(5*time.Minute+2*time.Second, contract.RecreateUpdate, func(_ contract.Change, err error) {
		fieldProblems(t, err, contract.ErrRoomNotDeleted)
	}, again)
	rt.at(7*time.Minute, func() {
		if s := rt.snapshot(); s.Status != engine.StatusNotQueueing || !s.Minute.Equal(minute(51)) {
			t.Errorf("recreated room does not roll up: %s at %s", s.Status, s.Minute)
		}
	})
	_ = rt.run(shopInput(), 8*time.Minute)
}

// A room cannot start with invalid settings.
func TestRoomRefusesInvalidStart(t *testing.T) {
	rt := newRoomTest(t)
	rt.env.ExecuteWorkflow(contract.WorkflowTypeRoom, contract.RoomInput{Settings: engine.Settings{Name: "shop", TotalActiveUsers: 5}})
	if p := fieldProblems(t, rt.env.GetWorkflowError(), contract.ErrInvalidSettings); len(p) != 1 || p[0].Field != "new_users_per_minute" {
		t.Errorf("problems %+v", p)
	}
}

// Route paths no request can match are refused, at the start and by the
// update's validator, naming the field; the room keeps its settings.
func TestRoomRefusesUnmatchablePaths(t *testing.T) {
	rt := newRoomTest(t)
	in := shopInput()
	in.Settings.Path = "/shop/./"
	rt.env.ExecuteWorkflow(contract.WorkflowTypeRoom, in)
	if p := fieldProblems(t, rt.env.GetWorkflowError(), contract.ErrInvalidSettings); len(p) != 1 || p[0].Field != "path" {
		t.Errorf("start: problems %+v", p)
	}

	rt = newRoomTest(t)
	bad := shopInput().Settings
	bad.AdditionalRoutes = []engine.Route{{Path: "/caf%C3%A9/"}}
	rt.update(10*time.Second, contract.SettingsUpdate, func(_ contract.Change, err error) {
		if p := fieldProblems(t, err, contract.ErrInvalidSettings); len(p) != 1 || p[0].Field != "additional_routes[0].path" {
			t.Errorf("update: problems %+v", p)
		}
	}, contract.SettingsChange{Settings: bad})
	rt.at(20*time.Second, func() {
		if d := rt.describe(); d.SettingsVersion != 1 || len(d.Settings.AdditionalRoutes) != 0 {
			t.Errorf("a refused update changed the room: %+v", d.Settings)
		}
	})
	_ = rt.run(shopInput(), time.Minute)
}
