package admit_test

import (
	"testing"
	"time"

	"go.temporal.io/sdk/workflow"

	engine "github.com/edgeflow/edgeflow/internal/admit"
	"github.com/edgeflow/edgeflow/internal/admit/gate"
	"github.com/edgeflow/edgeflow/workflows/admit/contract"
)

// A room refuses a page with a partial, in its settings or an event's,
// naming custom_page_html; while an event with its own page pre-queues or
// runs, describe and the snapshot tell a gate to show it (what
// gate.TemporalRooms reads), and after the event the room's again.
func TestRoomPagesForGates(t *testing.T) {
	rt := newRoomTest(t)
	refused := func(what string) func(contract.Change, error) {
		return func(_ contract.Change, err error) {
			if p := fieldProblems(t, err, contract.ErrInvalidSettings); len(p) != 1 || p[0].Field != "custom_page_html" {
				t.Errorf("%s: %+v", what, p)
			}
		}
	}
	accepted := func(what string) func(contract.Change, error) {
		return func(_ contract.Change, err error) {
			if err != nil {
				t.Errorf("%s: %v", what, err)
			}
		}
	}
	bad, ours, theirs := "<p>{{#inWaitingRoom}}{{> /etc/hostname}}{{/inWaitingRoom}}</p>", "<p>room</p>", "<p>launch</p>"
	withPage := func(page string) contract.SettingsChange {
		s := shopInput().Settings
		s.CustomPageHTML = page
		return contract.SettingsChange{Settings: s}
	}
	pre, begin, end := minute(46), minute(47), minute(48)
	rt.update(time.Second, contract.SettingsUpdate, refused("settings"), withPage(bad))
	rt.update(2*time.Second, contract.SettingsUpdate, accepted("settings"), withPage(ours))
	rt.update(3*time.Second, contract.AddEventUpdate, refused("event"), engine.Event{Name: "bad", EventStartTime: begin, EventEndTime: end, CustomPageHTML: &bad})
	rt.update(4*time.Second, contract.AddEventUpdate, accepted("event"), engine.Event{Name: "launch", PrequeueStartTime: &pre,
		EventStartTime: begin, EventEndTime: end, CustomPageHTML: &theirs})
	shown := func(at time.Time, want string) {
		rt.at(at.Sub(start)+time.Second, func() {
			d, s := rt.describe(), rt.snapshot()
			pages := gate.PagesOf(d.Settings, d.Events)
			got := pages.Room
			if s.Event != nil {
				if p, ok := pages.Events[s.Event.Name]; ok {
					got = p
				}
			}
			if got != want {
				t.Errorf("at %s (%s): a gate shows %q, want %q", at.Format("15:04"), s.Status, got, want)
			}
		})
	}
	shown(start.Add(5*time.Second), ours)
	shown(pre, theirs)
	shown(begin, theirs)
	shown(end, ours)
	_ = rt.run(shopInput(), end.Sub(start)+time.Minute)
}

// A run begun before pages were restricted applies its history's changes
// as it did (the replay of testdata/before-strict-pages holds pages with
// partials), but its validators still refuse a new page with a partial.
func TestLegacyRunRefusesNewPartials(t *testing.T) {
	rt := newRoomTest(t)
	rt.env.OnGetVersion("pages-read-no-files", workflow.DefaultVersion, 1).Return(workflow.DefaultVersion)
	bad := "{{> /etc/hostname}}"
	s := shopInput().Settings
	s.CustomPageHTML = bad
	rt.update(time.Second, contract.SettingsUpdate, func(_ contract.Change, err error) {
		if p := fieldProblems(t, err, contract.ErrInvalidSettings); len(p) != 1 || p[0].Field != "custom_page_html" {
			t.Errorf("settings: %+v", p)
		}
	}, contract.SettingsChange{Settings: s})
	rt.update(2*time.Second, contract.AddEventUpdate, func(_ contract.Change, err error) {
		if p := fieldProblems(t, err, contract.ErrInvalidSettings); len(p) != 1 || p[0].Field != "custom_page_html" {
			t.Errorf("event: %+v", p)
		}
	}, engine.Event{Name: "launch", EventStartTime: minute(50), EventEndTime: minute(51), CustomPageHTML: &bad})
	rt.at(3*time.Second, func() {
		if d := rt.describe(); d.Settings.CustomPageHTML != "" || len(d.Events) != 0 {
			t.Errorf("a page with a partial was stored: %+v", d.Settings)
		}
	})
	_ = rt.run(shopInput(), time.Minute)
}
