package admit_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	engine "github.com/edgeflow/edgeflow/internal/admit"
	roomwf "github.com/edgeflow/edgeflow/workflows/admit"
	"github.com/edgeflow/edgeflow/workflows/admit/contract"
)

func canceled(t *testing.T, err error) {
	t.Helper()
	if !errors.Is(err, workflow.ErrCanceled) && !temporal.IsCanceledError(err) {
		t.Fatalf("workflow ended with %v", err)
	}
}

// A report signal whose payload is not a report is dropped and counted:
// the minute's rollup still happens on time (Receive dropped it and then
// waited for the next report, holding the 11:45 snapshot back).
func TestUndecodableReportNeverStallsTheRollup(t *testing.T) {
	rt := newRoomTest(t)
	rt.at(10*time.Second, func() {
		rt.signal(engine.Report{DataCenter: "sjc", Gate: "sjc-1", Minute: minute(44), Seq: 1, Admitted: 20, Seen: 20, Final: true})
		rt.env.SignalWorkflow(contract.ReportSignal, "not a report")
	})
	rt.at(20*time.Second, func() {
		rt.env.SignalWorkflow(contract.ReportSignal, []int{1, 2, 3})
	})
	rt.at(45*time.Second, func() { // 11:45:15
		s := rt.snapshot()
		if !s.Minute.Equal(minute(45)) || s.ActiveUsers != 20 {
			t.Errorf("11:45 after undecodable reports: %s", s.String())
		}
		if d := rt.describe(); d.Stats.ReportsUndecodable != 2 || d.Stats.Reports != 1 {
			t.Errorf("stats %+v, want 2 undecodable and 1 report", d.Stats)
		}
	})
	canceled(t, rt.run(shopInput(), time.Minute))
}

func page(n int) string { return "<p>" + strings.Repeat("x", n-7) + "</p>" }

// The custom pages of a room and its events together hold at most 512
// KiB: an event or a settings change that would take them past it is
// refused by its validator, naming custom_page_html, and changes nothing.
func TestRoomRefusesPagesPastTheBound(t *testing.T) {
	rt := newRoomTest(t)
	big := page(engine.MaxCustomPageSize)
	in := shopInput()
	in.Settings.CustomPageHTML = big
	for i := range 7 { // 8 × 64 KiB: exactly the bound
		from := minute(50).Add(time.Duration(i) * time.Hour)
		rt.update(time.Duration(i+1)*time.Second, contract.AddEventUpdate, func(_ contract.Change, err error) {
			if err != nil {
				t.Errorf("event %d: %v", i, err)
			}
		}, engine.Event{Name: fmt.Sprintf("e%d", i), EventStartTime: from, EventEndTime: from.Add(time.Minute), CustomPageHTML: &big})
	}
	from := minute(50).Add(20 * time.Hour)
	small := "<p>more</p>"
	rt.update(10*time.Second, contract.AddEventUpdate, func(_ contract.Change, err error) {
		if p := fieldProblems(t, err, contract.ErrInvalidSettings); len(p) != 1 || p[0].Field != "custom_page_html" {
			t.Errorf("an event past the bound: %+v", p)
		}
	}, engine.Event{Name: "one-more", EventStartTime: from, EventEndTime: from.Add(time.Minute), CustomPageHTML: &small})
	grown := in.Settings
	grown.CustomPageHTML = big + "<p></p>"
	rt.update(11*time.Second, contract.SettingsUpdate, func(_ contract.Change, err error) {
		if p := fieldProblems(t, err, contract.ErrInvalidSettings); len(p) != 1 || p[0].Field != "custom_page_html" {
			t.Errorf("settings past the bound: %+v", p)
		}
	}, contract.SettingsChange{Settings: grown})
	// An event without a page still fits.
	rt.update(12*time.Second, contract.AddEventUpdate, func(_ contract.Change, err error) {
		if err != nil {
			t.Errorf("an event without a page: %v", err)
		}
	}, engine.Event{Name: "no-page", EventStartTime: from, EventEndTime: from.Add(time.Minute)})
	rt.at(13*time.Second, func() {
		if d := rt.describe(); len(d.Events) != 8 || d.Settings.CustomPageHTML != big {
			t.Errorf("%d events, page of %d bytes", len(d.Events), len(d.Settings.CustomPageHTML))
		}
	})
	canceled(t, rt.run(in, time.Minute))
}

// Reports from more gates in a minute than max_reporters_per_minute are
// dropped and counted, never stored; the gates already in the minute
// still report.
func TestRoomBoundsReportersPerMinute(t *testing.T) {
	rt := newRoomTest(t)
	in := shopInput()
	in.Settings.MaxReportersPerMinute = 2
	rt.at(10*time.Second, func() {
		for i, g := range []string{"ams-1", "ams-2", "invented-1", "invented-2"} {
			rt.signal(engine.Report{DataCenter: "ams", Gate: g, Minute: minute(44), Seq: 1, Admitted: 10 + i, Seen: 10 + i})
		}
	})
	rt.at(12*time.Second, func() {
		rt.signal(engine.Report{DataCenter: "ams", Gate: "ams-1", Minute: minute(44), Seq: 2, Admitted: 15, Seen: 15})
	})
	rt.at(15*time.Second, func() {
		d := rt.describe()
		if d.Ledger.OverReporters != 2 || d.Stats.ReportsRefused != 2 || !strings.Contains(d.Stats.LastRefusal, "max_reporters_per_minute") {
			t.Errorf("ledger dropped %d, stats %+v", d.Ledger.OverReporters, d.Stats)
		}
		if n := len(d.Ledger.Open); n != 2 {
			t.Errorf("%d reports stored, want 2: %+v", n, d.Ledger.Open)
		}
		if got := d.Ledger.Totals(minute(44)); got.Admitted != 15+11 {
			t.Errorf("11:44 admitted %d, want 26", got.Admitted)
		}
	})
	canceled(t, rt.run(in, time.Minute))
}

// A room at every bound — 50 events, 512 KiB of pages, the longest routes
// and descriptions, and every gate of three open minutes sending the
// largest reports it may — continues as new with an input under 1 MiB.
func TestContinueAsNewInputAtTheBounds(t *testing.T) {
	// Three minutes open (11:43 still waiting for the 11:45 snapshot), or
	// two and the closed totals of the third; reports with every list
	// long, with queues only (as many buckets as fit), or small ones from
	// as many gates as there may be.
	for _, publish := range []bool{false, true} {
		for _, shape := range []string{"lists", "queues", "small"} {
			t.Run(fmt.Sprintf("%s-published-%v", shape, publish), func(t *testing.T) { continueAtTheBounds(t, publish, shape) })
		}
	}
}

func continueAtTheBounds(t *testing.T, publish bool, shape string) {
	now := minute(44).Add(40 * time.Second)
	s := engine.Settings{Name: strings.Repeat("r", 64), Description: strings.Repeat("d", 1024), TotalActiveUsers: 1 << 30,
		NewUsersPerMinute: 1 << 30, CustomPageHTML: page(engine.MaxCustomPageSize), Host: strings.Repeat("h", 63) + ".example.com",
		Path: "/" + strings.Repeat("p", 1023), CookieSuffix: strings.Repeat("c", 64)}
	for i := range engine.MaxRoutes {
		s.AdditionalRoutes = append(s.AdditionalRoutes, engine.Route{Host: fmt.Sprintf("%s%02d.example.com", strings.Repeat("h", 61), i),
			Path: "/" + strings.Repeat("p", 1023)})
	}
	r, err := engine.NewRoom(s, 0, now)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		from := now.Add(time.Duration(i+1) * time.Hour)
		n, method, renew := 5, engine.Random, true
		e := engine.Event{Name: fmt.Sprintf("%063d", i), Description: strings.Repeat("d", 1024), PrequeueStartTime: &from,
			EventStartTime: from.Add(time.Minute), EventEndTime: from.Add(30 * time.Minute), ShuffleAtEventStart: true,
			TotalActiveUsers: &n, NewUsersPerMinute: &n, SessionDuration: &n, QueueingMethod: &method, DisableSessionRenewal: &renew}
		if i < 7 {
			p := page(engine.MaxCustomPageSize)
			e.CustomPageHTML = &p
		}
		if err := r.CheckPages(nil, &e); err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
		if _, err := r.AddEvent(e, now); err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
	}
	// Every gate sends the largest report the room takes, for 11:43,
	// 11:44 and 11:45, long names everywhere.
	long := func(i int) string { return fmt.Sprintf("%060d%04d", 0, i) }
	for m := 43; m <= 45; m++ {
		for g := range engine.DefaultMaxReportersPerMinute + 10 {
			rep := engine.Report{Room: s.Name, DataCenter: long(g), Gate: long(g), Minute: minute(m), Seq: 1,
				Incarnation: 1 << 62, NewVisitors: 1 << 30, Admitted: 1 << 30, Seen: 1 << 30, Final: true}
			switch shape {
			case "lists":
				for k := range 40 {
					earlier := minute(m).Add(-time.Duration(k+1) * time.Minute)
					rep.Queued = append(rep.Queued, engine.MinuteCount{Minute: earlier, Count: 1 << 30})
					rep.Renewed = append(rep.Renewed, engine.MinuteCount{Minute: earlier, Count: 1 << 30})
					rep.Taken = append(rep.Taken, engine.PoolCount{Pool: long(k), Scope: long(g), Count: 1 << 30})
					rep.StoreTaken = append(rep.StoreTaken, engine.PoolCount{Pool: long(k), Scope: long(g), Count: 1 << 30})
				}
			case "queues":
				// Each bucket its own minute, as many as fit in half a
				// minute's bytes (about 45 bytes a bucket).
				for k := range engine.MaxMinuteReportBytes / 2 / 45 {
					rep.Queued = append(rep.Queued, engine.MinuteCount{Minute: minute(m).Add(-time.Duration(g*2000+k) * time.Minute), Count: 1 << 30})
				}
			}
			_ = r.AddReport(rep, minute(45))
		}
		if m == 44 && publish {
			r.Advance(minute(45).Add(20 * time.Second))
		}
	}
	if r.Ledger.OverBytes == 0 && r.Ledger.OverReporters == 0 {
		t.Fatal("no report was over a bound: the test does not reach them")
	}
	st := contract.RoomState{Room: *r, Runs: 1, Stats: contract.RoomStats{LastRefusal: strings.Repeat("x", 200)}}
	in, size, err := roomwf.ContinueInput(st, 0)
	if err != nil {
		t.Fatal(err)
	}
	if size >= contract.MaxContinueBytes {
		t.Fatalf("continue-as-new input of %d bytes at the bounds, want under %d", size, contract.MaxContinueBytes)
	}
	if again, _ := roomwf.InputSize(in); again != size {
		t.Errorf("measured %d, the input is %d", size, again)
	}
	if in.State.Room.Settings.CustomPageHTML == "" || len(in.State.Room.Events) != 50 {
		t.Error("the state lost its page or its events")
	}
	t.Logf("input %d bytes; dropped over bytes %d, over reporters %d", size, r.Ledger.OverBytes, r.Ledger.OverReporters)
}

// A room that took more before the bounds (engine.RevBounded) is trimmed when it
// continues as new: the minute its snapshot was published from is closed,
// and the input fits.
func TestContinueAsNewTrimsAnOldRoom(t *testing.T) {
	r, err := engine.NewRoomAt(engine.Settings{Name: "shop", TotalActiveUsers: 10, NewUsersPerMinute: 10}, 0, minute(44), engine.RevBounded-1)
	if err != nil {
		t.Fatal(err)
	}
	for g := range 3000 {
		rep := engine.Report{Room: "shop", DataCenter: "ams", Gate: fmt.Sprintf("ams-%d", g), Minute: minute(44), Seq: 1, Admitted: 1}
		for k := range 10 { // sessions renewed from minutes long closed
			rep.Renewed = append(rep.Renewed, engine.MinuteCount{Minute: minute(44).Add(-time.Duration(100+g*10+k) * time.Minute), Count: 1})
		}
		if err := r.AddReport(rep, minute(44).Add(30*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	r.Advance(minute(45).Add(r.FinalWait())) // no final report: it waits that long
	st := contract.RoomState{Room: *r, Runs: 1}
	before, _ := roomwf.InputSize(contract.RoomInput{Settings: r.Settings, State: &st})
	in, size, err := roomwf.ContinueInput(st, 0)
	if err != nil {
		t.Fatal(err)
	}
	if before <= contract.MaxContinueBytes || size > contract.MaxContinueBytes {
		t.Fatalf("input of %d bytes trimmed to %d, want from over %d to under", before, size, contract.MaxContinueBytes)
	}
	if len(in.State.Room.Ledger.Open) != 0 || in.State.Room.Ledger.Totals(minute(44)).Admitted != 3000 {
		t.Errorf("11:44 not closed into its totals: %d open, %+v", len(in.State.Room.Ledger.Open), in.State.Room.Ledger.Totals(minute(44)))
	}
	if len(r.Ledger.Open) != 3000 {
		t.Error("trimming the input changed the room")
	}
}
