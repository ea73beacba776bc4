package admit

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseSettingsDefaults(t *testing.T) {
	s, err := ParseSettings([]byte(`{"name":"shop","total_active_users":200,"new_users_per_minute":100}`))
	if err != nil {
		t.Fatal(err)
	}
	want := Settings{Name: "shop", Path: "/", TotalActiveUsers: 200, NewUsersPerMinute: 100, SessionDuration: 5,
		QueueingMethod: FIFO, QueueingStatusCode: 200, CookieAttributes: CookieAttributes{SameSite: "auto", Secure: "auto"},
		RefreshIntervalSeconds: 20, SnapshotMaxAgeSeconds: 120, MaxReportersPerMinute: 1000}
	if !reflect.DeepEqual(s, want) {
		t.Fatalf("got %+v\nwant %+v", s, want)
	}
	if s.Host != "" {
		t.Error("no host means every host")
	}
}

func TestParseSettingsAll(t *testing.T) {
	doc := `{"name":"shop_2","description":"Sale","host":"shop.example.com","path":"/shop/",
		"additional_routes":[{"host":"m.example.com","path":"/"},{"path":"/cart"}],
		"total_active_users":500,"new_users_per_minute":200,"session_duration":10,
		"queueing_method":"random","queueing_status_code":429,"queue_all":false,"suspended":false,
		"disable_session_renewal":true,"enabled_origin_commands":["revoke"],
		"json_response_enabled":true,"custom_page_html":"<p>{{waitTime}} minutes</p>",
		"cookie_attributes":{"samesite":"none","secure":"always"},"cookie_suffix":"shop",
		"refresh_interval_seconds":10,"snapshot_max_age_seconds":300,"path_case_insensitive":true}`
	s, err := ParseSettings([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if s.QueueingMethod != Random || !s.PathCaseInsensitive || s.QueueingStatusCode != 429 || !s.RevokeEnabled() || len(s.Routes()) != 3 || s.Routes()[2] != (Route{Path: "/cart"}) {
		t.Errorf("parsed %+v", s)
	}
	// The settings round-trip through JSON under the same names.
	data, _ := json.Marshal(s)
	back, err := ParseSettings(data)
	if err != nil || !reflect.DeepEqual(back, s) {
		t.Errorf("round trip: %v\n%+v\n%+v", err, back, s)
	}
	for _, name := range []string{`"total_active_users"`, `"new_users_per_minute"`, `"session_duration"`, `"queueing_method"`,
		`"queueing_status_code"`, `"disable_session_renewal"`, `"enabled_origin_commands"`, `"json_response_enabled"`,
		`"custom_page_html"`, `"cookie_attributes"`, `"samesite"`, `"secure"`, `"cookie_suffix"`, `"additional_routes"`, `"path_case_insensitive"`} {
		if !strings.Contains(string(data), name) {
			t.Errorf("JSON lacks %s: %s", name, data)
		}
	}
}

// Every invalid setting is refused with its field and a reason.
func TestParseSettingsRefuses(t *testing.T) {
	base := `"name":"shop","total_active_users":200,"new_users_per_minute":100`
	for _, c := range []struct {
		doc, field, reason string
	}{
		{`{"total_active_users":200,"new_users_per_minute":100}`, "name", "must be 1-64"},
		{`{"name":"a b",` + base[14:] + `}`, "name", "letters"},
		{`{"name":"shop"}`, "total_active_users", "between 1 and"},
		{`{` + base + `,"total_active_users":-5}`, "total_active_users", "got -5"},
		{`{"name":"shop","total_active_users":200}`, "new_users_per_minute", "between"},
		{`{` + base + `,"session_duration":31}`, "session_duration", "between 1 and 30"},
		{`{` + base + `,"queueing_method":"lifo"}`, "queueing_method", `"lifo"`},
		{`{` + base + `,"queueing_status_code":503}`, "queueing_status_code", "200, 202 or 429"},
		{`{` + base + `,"cookie_attributes":{"samesite":"none","secure":"never"}}`, "cookie_attributes.secure", "samesite none"},
		{`{` + base + `,"cookie_attributes":{"samesite":"sometimes"}}`, "cookie_attributes.samesite", "sometimes"},
		{`{` + base + `,"cookie_attributes":{"secure":"maybe"}}`, "cookie_attributes.secure", "maybe"},
		{`{` + base + `,"cookie_suffix":"a;b"}`, "cookie_suffix", "letters"},
		{`{` + base + `,"enabled_origin_commands":["reboot"]}`, "enabled_origin_commands[0]", "revoke"},
		{`{` + base + `,"enabled_origin_commands":["revoke","revoke"]}`, "enabled_origin_commands[1]", "twice"},
		{`{` + base + `,"custom_page_html":"{{#open}}"}`, "custom_page_html", "Mustache"},
		{`{` + base + `,"host":"https://shop.example.com"}`, "host", "scheme"},
		{`{` + base + `,"host":"Shop.example.com"}`, "host", "lower case"},
		{`{` + base + `,"host":"*.example.com"}`, "host", "no wildcard"},
		{`{` + base + `,"host":"shop:8080"}`, "host", "no port"},
		{`{` + base + `,"path":"shop"}`, "path", "start with /"},
		{`{` + base + `,"path":"/shop?x=1"}`, "path", "query"},
		// paths no request can match, since requests are matched on their
		// decoded, resolved path
		{`{` + base + `,"path":"/caf%C3%A9/"}`, "path", "decoded"},
		{`{` + base + `,"path":"/shop/./"}`, "path", ". or .."},
		{`{` + base + `,"path":"/shop/../admin/"}`, "path", ". or .."},
		{`{` + base + `,"path":"/shop/.."}`, "path", ". or .."},
		{`{` + base + `,"path":"//shop/"}`, "path", "//"},
		{`{` + base + `,"path":"/shop;v=1/"}`, "path", ";"},
		{`{` + base + `,"path":"/a\\b/"}`, "path", "backslash"},
		{`{` + base + `,"additional_routes":[{"path":"/x//y"}]}`, "additional_routes[0].path", "//"},
		{`{` + base + `,"additional_routes":[{"path":"/ok/"},{"path":"/x/%41"}]}`, "additional_routes[1].path", "decoded"},
		{`{` + base + `,"path_case_insensitive":"yes"}`, "path_case_insensitive", "must be a bool"},
		{`{` + base + `,"additional_routes":[{"path":"/"}]}`, "additional_routes[0]", "already covered"},
		{`{` + base + `,"additional_routes":[{"host":"A"}]}`, "additional_routes[0].host", "lower case"},
		{`{` + base + `,"refresh_interval_seconds":31}`, "refresh_interval_seconds", "between 1 and 30"},
		{`{` + base + `,"queue_capacity":-1}`, "queue_capacity", "between 0"},
		{`{` + base + `,"always_use_https":"yes"}`, "always_use_https", "must be a bool"},
		{`{` + base + `,"snapshot_max_age_seconds":5}`, "snapshot_max_age_seconds", "between 10"},
		{`{` + base + `,"max_reporters_per_minute":10001}`, "max_reporters_per_minute", "between 1 and 10000"},
		{`{` + base + `,"max_reporters_per_minute":-1}`, "max_reporters_per_minute", "between 1 and 10000"},
		{`{` + base + `,"total_active_user":5}`, "total_active_user", "is not a setting"},
		{`{` + base + `,"total_active_users":"200"}`, "total_active_users", "must be a int"},
		{`{` + base + `,"queue_all":"yes"}`, "queue_all", "must be a bool"},
		{`[1,2]`, "(document)", "JSON object"},
		{`{` + base + `} {}`, "(document)", "more than one"},
		{`{` + base + `,"description":"` + strings.Repeat("x", 1025) + `"}`, "description", "1024"},
	} {
		_, err := ParseSettings([]byte(c.doc))
		var inv *InvalidError
		if !errors.As(err, &inv) {
			t.Errorf("%s: err %v, want an InvalidError", c.doc, err)
			continue
		}
		found := false
		for _, p := range inv.Problems {
			if p.Field == c.field && strings.Contains(p.Reason, c.reason) {
				found = true
			}
		}
		if !found {
			t.Errorf("%.80s: %v; want field %s with %q", c.doc, err, c.field, c.reason)
		}
	}
}

func TestWithDefaultsDoesNotWriteThrough(t *testing.T) {
	routes := []Route{{Host: "a.example"}}
	s := Settings{AdditionalRoutes: routes}.WithDefaults()
	if routes[0].Path != "" || s.AdditionalRoutes[0].Path != "/" {
		t.Errorf("caller's slice changed: %+v / %+v", routes, s.AdditionalRoutes)
	}
}

// The parser never panics, refuses with a field and a reason, and whatever
// it accepts is valid and survives a JSON round trip unchanged.
func FuzzParseSettings(f *testing.F) {
	for _, seed := range []string{
		`{"name":"shop","total_active_users":200,"new_users_per_minute":100}`,
		`{"name":"shop","host":"a.b","path":"/x/","additional_routes":[{"path":"/y"}],"total_active_users":1,"new_users_per_minute":1,"queueing_method":"random","cookie_attributes":{"samesite":"none"}}`,
		`{"name":"x","total_active_users":2147483647,"new_users_per_minute":2147483647,"session_duration":30,"custom_page_html":"{{#a}}{{b}}{{/a}}"}`,
		`{"name":"", "total_active_users": -1}`,
		`{"name":"shop","total_active_users":1e3}`,
		`null`, `{}`, `[]`, `"x"`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ParseSettings(data)
		if err != nil {
			var inv *InvalidError
			if !errors.As(err, &inv) || len(inv.Problems) == 0 || inv.First().Field == "" || inv.First().Reason == "" {
				t.Fatalf("error without field and reason: %v", err)
			}
			return
		}
		if verr := s.Validate(); verr != nil {
			t.Fatalf("accepted settings are invalid: %v", verr)
		}
		if !reflect.DeepEqual(s.WithDefaults(), s) {
			t.Fatalf("accepted settings lack defaults: %+v", s)
		}
		again, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		back, err := ParseSettings(again)
		if err != nil || !reflect.DeepEqual(back, s) {
			t.Fatalf("round trip: %v\n%+v\n%+v", err, back, s)
		}
		if _, err := NewRoom(s, 60, t0); err != nil {
			t.Fatalf("accepted settings make no room: %v", err)
		}
	})
}

func TestEvents(t *testing.T) {
	room := testSettings()
	pre, start, end := t0.Add(10*time.Minute), t0.Add(20*time.Minute), t0.Add(80*time.Minute)
	n, method := 500, Random
	e := Event{Name: "launch", PrequeueStartTime: &pre, EventStartTime: start, EventEndTime: end, ShuffleAtEventStart: true,
		TotalActiveUsers: &n, NewUsersPerMinute: &n, QueueingMethod: &method}
	if err := ValidateEvent(e, room, nil, t0); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		at    time.Time
		phase EventPhase
	}{{t0, NoEvent}, {pre, EventPrequeueing}, {start.Add(-time.Second), EventPrequeueing}, {start, EventActive}, {end.Add(-time.Second), EventActive}, {end, NoEvent}} {
		if got := e.PhaseAt(c.at); got != c.phase {
			t.Errorf("phase at %s: %q, want %q", c.at.Format("15:04:05"), got, c.phase)
		}
	}
	eff, ev, ph := Effective(room, []Event{e}, start)
	if ev == nil || ph != EventActive || eff.TotalActiveUsers != 500 || eff.QueueingMethod != Random || eff.SessionDuration != room.SessionDuration {
		t.Errorf("effective during the event: %+v %v", eff, ph)
	}
	for _, c := range []struct {
		at, want time.Time
	}{{t0, pre}, {pre, start}, {start, end}} {
		if got, ok := NextEventChange([]Event{e}, c.at); !ok || !got.Equal(c.want) {
			t.Errorf("next change after %s: %s", c.at.Format("15:04"), got.Format("15:04"))
		}
	}
	if _, ok := NextEventChange([]Event{e}, end); ok {
		t.Error("a change after the end")
	}

	bad := func(mut func(*Event), field string) {
		t.Helper()
		b := e
		mut(&b)
		err := ValidateEvent(b, room, []Event{{Name: "other", EventStartTime: t0.Add(100 * time.Minute), EventEndTime: t0.Add(110 * time.Minute)}}, t0)
		var inv *InvalidError
		if !errors.As(err, &inv) || !strings.Contains(err.Error(), field+":") {
			t.Errorf("want a problem with %s, got %v", field, err)
		}
	}
	bad(func(b *Event) { b.EventEndTime = b.EventStartTime }, "event_end_time")
	bad(func(b *Event) {
		b.EventStartTime, b.EventEndTime = t0.Add(-2*time.Hour), t0.Add(-time.Hour)
		b.PrequeueStartTime = nil
		b.ShuffleAtEventStart = false
	}, "event_end_time")
	bad(func(b *Event) { p := start.Add(time.Minute); b.PrequeueStartTime = &p }, "prequeue_start_time")
	bad(func(b *Event) { b.PrequeueStartTime = nil }, "shuffle_at_event_start")
	bad(func(b *Event) { b.NewUsersPerMinute = nil }, "total_active_users")
	bad(func(b *Event) { z := 0; b.NewUsersPerMinute = &z }, "new_users_per_minute")
	bad(func(b *Event) { m := QueueingMethod("x"); b.QueueingMethod = &m }, "queueing_method")
	bad(func(b *Event) { b.Name = "other" }, "name")
	bad(func(b *Event) { b.EventEndTime = t0.Add(105 * time.Minute) }, "event_start_time") // overlaps "other"
	bad(func(b *Event) { b.Name = "" }, "name")
	if _, err := ParseEvent([]byte(`{"name":"x","event_start_time":"2030-01-01T00:00:00Z","event_end_time":"2030-01-01T01:00:00Z","prequeue":1}`)); err == nil ||
		!strings.Contains(err.Error(), "prequeue: is not a setting") {
		t.Errorf("unknown event field: %v", err)
	}
	// A time that does not parse is named by its field, not "(document)".
	if _, err := ParseEvent([]byte(`{"name":"x","event_start_time":"tomorrow","event_end_time":"2030-01-01T01:00:00Z"}`)); err == nil ||
		!strings.Contains(err.Error(), "event_start_time: invalid") {
		t.Errorf("unparsable event time: %v", err)
	}
}

// Settings a room recorded before route paths were checked still apply
// (its history replays); new settings are refused by the validator.
func TestRecordedRoutePathsStillApply(t *testing.T) {
	old := Settings{Name: "shop", Path: "/shop/./", TotalActiveUsers: 10, NewUsersPerMinute: 10}
	r, err := NewRoom(old, 60, time.Unix(0, 0))
	if err != nil {
		t.Fatalf("a recorded room's start no longer replays: %v", err)
	}
	changed := old
	changed.AdditionalRoutes = []Route{{Path: "/caf%C3%A9/"}}
	if err := r.CheckSettings(changed, 0); err == nil {
		t.Error("the validator accepted a path no request can match")
	}
	if _, err := r.SetSettings(changed, 0, time.Unix(1, 0)); err != nil {
		t.Errorf("a recorded update no longer replays: %v", err)
	}
}

// An explicit refresh interval past half a short minute is refused, naming
// the field; the default scales instead (RefreshBase), and a 60-s room
// takes up to 30 s.
func TestRefreshIntervalWithinTheMinute(t *testing.T) {
	s := Settings{Name: "shop", TotalActiveUsers: 10, NewUsersPerMinute: 10, RefreshIntervalSeconds: 6}
	r, err := NewRoom(s, 10, time.Unix(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	if f := firstProblem(r.CheckSettings(s, 0)); f == nil || f.Field != "refresh_interval_seconds" || !strings.Contains(f.Reason, "half") {
		t.Errorf("6 s in a 10-s minute: %v", f)
	}
	if err := s.WithDefaults().ValidateForMinute(10); err == nil {
		t.Error("ValidateForMinute(10) accepted 6 s")
	}
	for _, ok := range []Settings{{RefreshIntervalSeconds: 5}, {RefreshIntervalSeconds: 0}, {RefreshIntervalSeconds: DefaultRefreshIntervalSeconds}} {
		ok.Name, ok.TotalActiveUsers, ok.NewUsersPerMinute = "shop", 10, 10
		if err := r.CheckSettings(ok, 0); err != nil {
			t.Errorf("refresh %d in a 10-s minute: %v", ok.RefreshIntervalSeconds, err)
		}
	}
	s.RefreshIntervalSeconds = 30
	if err := s.WithDefaults().ValidateForMinute(60); err != nil {
		t.Errorf("30 s in a 60-s minute: %v", err)
	}
	if err := s.WithDefaults().ValidateForMinute(0); err != nil {
		t.Errorf("30 s in a default minute: %v", err)
	}
}
