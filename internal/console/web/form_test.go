package web

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/edgeflow/edgeflow/internal/admit"
)

// The create form is judged by the API's own parser: the same settings
// give the same messages, word for word.
func TestCreateFormHasTheAPIsMessages(t *testing.T) {
	form := url.Values{"name": {"shop"}, "path": {"shop"}, "total_active_users": {"0"}, "new_users_per_minute": {"10"}, "queueing_method": {"fifo"}}
	_, got := newSettings(form)
	_, want := admit.ParseSettings([]byte(`{"name":"shop","path":"shop","total_active_users":0,"new_users_per_minute":10,"queueing_method":"fifo"}`))
	if got == nil || want == nil || got.Error() != want.Error() {
		t.Fatalf("form: %v\nAPI:  %v", got, want)
	}
	byField, all := problems(got)
	if byField["total_active_users"] == "" || byField["path"] == "" || len(all) < 2 {
		t.Errorf("problems by field %v, all %v", byField, all)
	}
	if _, err := newSettings(url.Values{"name": {"shop"}, "total_active_users": {"many"}}); err == nil ||
		!strings.Contains(err.Error(), `total_active_users: must be a whole number, got "many"`) {
		t.Errorf("a word for a number: %v", err)
	}
	s, err := newSettings(url.Values{"name": {"shop"}, "path": {"/shop/"}, "total_active_users": {"5"}, "new_users_per_minute": {"2"}, "queue_all": {"on"}})
	if err != nil || s.TotalActiveUsers != 5 || !s.QueueAll || s.SessionDuration != admit.DefaultSessionDuration {
		t.Errorf("valid settings: %+v, %v", s, err)
	}
}

func TestSettingsFormChangesOnlyWhatItShows(t *testing.T) {
	base := admit.Settings{Name: "shop", Path: "/shop/", TotalActiveUsers: 10, NewUsersPerMinute: 5, CookieSuffix: "kept",
		Suspended: true, EnabledOriginCommands: []string{"revoke"}}.WithDefaults()
	form := formOf(base)
	if form.Values.Get("total_active_users") != "10" || form.Values.Get("queueing_method") != "fifo" {
		t.Fatalf("form of the settings: %v", form.Values)
	}
	form.Values.Set("total_active_users", "20")
	form.Values.Set("name", "other") // not in the edit form: ignored
	next, err := changedSettings(base, form.Values)
	if err != nil {
		t.Fatal(err)
	}
	if next.Name != "shop" || next.TotalActiveUsers != 20 || next.CookieSuffix != "kept" || !next.Suspended || len(next.EnabledOriginCommands) != 1 {
		t.Errorf("changed: %+v", next)
	}
	form.Values.Set("new_users_per_minute", "-1")
	if _, err := changedSettings(base, form.Values); err == nil || !strings.Contains(err.Error(), "new_users_per_minute: ") {
		t.Errorf("an invalid change: %v", err)
	}
	for _, f := range (roomForm{Values: form.Values}).Fields() {
		if f.Name == "name" {
			t.Error("the edit form asks for the name")
		}
	}
}

func TestEventForm(t *testing.T) {
	e, err := newEvent(url.Values{"name": {"launch"}, "event_start_time": {"2030-05-01T09:00"}, "event_end_time": {"2030-05-01T11:00"}, "total_active_users": {"50"}})
	if err != nil {
		t.Fatal(err)
	}
	if !e.EventStartTime.Equal(time.Date(2030, 5, 1, 9, 0, 0, 0, time.UTC)) || e.TotalActiveUsers == nil || *e.TotalActiveUsers != 50 || e.NewUsersPerMinute != nil {
		t.Errorf("event %+v", e)
	}
	if _, err := newEvent(url.Values{"name": {"x"}, "event_start_time": {"tomorrow"}}); err == nil || !strings.Contains(err.Error(), "event_start_time: must be a date") {
		t.Errorf("a bad time: %v", err)
	}
}
