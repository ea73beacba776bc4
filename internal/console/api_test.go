package console

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// newTestServer serves the API without Temporal: every case here is
// answered before a room is asked. Its throttle lets every route's 401s
// through (throttle_test.go tests the throttle).
func newTestServer(t *testing.T) (*httptest.Server, *bytes.Buffer) {
	t.Helper()
	var logs bytes.Buffer
	srv := httptest.NewServer(New(Options{Tokens: testTokens(t), Log: slog.New(slog.NewTextHandler(&logs, nil)),
		Throttle: Throttle{Failures: 1 << 20}}).Handler())
	t.Cleanup(srv.Close)
	return srv, &logs
}

func call(t *testing.T, srv *httptest.Server, method, path, secret, body string) (*http.Response, Envelope) {
	t.Helper()
	req, err := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if secret != "" {
		req.Header.Set("Authorization", "Bearer "+secret)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var raw map[string]json.RawMessage
	if err := json.NewDecoder(resp.Body).Decode(&raw); err != nil {
		t.Fatalf("%s %s: not JSON: %v", method, path, err)
	}
	// The envelope always carries errors and messages, as lists.
	for _, k := range []string{"success", "errors", "messages", "result"} {
		if _, ok := raw[k]; !ok {
			t.Errorf("%s %s: the envelope has no %q: %v", method, path, k, raw)
		}
	}
	if string(raw["errors"]) == "null" || string(raw["messages"]) == "null" {
		t.Errorf("%s %s: errors/messages must be lists, got %s / %s", method, path, raw["errors"], raw["messages"])
	}
	var env Envelope
	b, _ := json.Marshal(raw)
	json.Unmarshal(b, &env)
	return resp, env
}

func wantError(t *testing.T, resp *http.Response, env Envelope, status, code int, inMessage string) {
	t.Helper()
	if resp.StatusCode != status || env.Success || len(env.Errors) == 0 || env.Errors[0].Code != code || !strings.Contains(env.Errors[0].Message, inMessage) {
		t.Errorf("got %d %+v, want %d, code %d, a message with %q", resp.StatusCode, env, status, code, inMessage)
	}
}

func TestAuthOnEveryRoute(t *testing.T) {
	srv, logs := newTestServer(t)
	for _, rt := range New(Options{Tokens: testTokens(t)}).routes() {
		method, path, _ := strings.Cut(rt.pattern, " ")
		path = strings.NewReplacer("{name}", "demo", "{event}", "launch").Replace(path)
		resp, env := call(t, srv, method, path, "", "")
		wantError(t, resp, env, http.StatusUnauthorized, CodeUnauthorized, "Authorization")
		if resp.Header.Get("WWW-Authenticate") == "" {
			t.Errorf("%s: 401 without WWW-Authenticate", rt.pattern)
		}
		resp, env = call(t, srv, method, path, "wrong-secret-0123456789", "")
		wantError(t, resp, env, http.StatusUnauthorized, CodeUnauthorized, "Authorization")
		if writes(method) {
			resp, env = call(t, srv, method, path, roSecret, "{}")
			wantError(t, resp, env, http.StatusForbidden, CodeForbidden, "read-only")
		}
	}
	// Unknown routes are behind the same door.
	resp, env := call(t, srv, "GET", "/api/v1/nothing", "", "")
	wantError(t, resp, env, http.StatusUnauthorized, CodeUnauthorized, "Authorization")
	resp, env = call(t, srv, "GET", "/api/v1/nothing", roSecret, "")
	wantError(t, resp, env, http.StatusNotFound, CodeNotFound, "path")
	for _, s := range []string{rwSecret, roSecret, "wrong-secret"} {
		if strings.Contains(logs.String(), s) {
			t.Fatalf("the log holds a secret: %s", logs.String())
		}
	}
	if !strings.Contains(logs.String(), "caller=viewer") {
		t.Errorf("the log names no token: %s", logs.String())
	}
}

func TestBadInputNamesTheField(t *testing.T) {
	srv, _ := newTestServer(t)
	for _, c := range []struct {
		method, path, body string
		status, code       int
		want               string
	}{
		{"POST", "/api/v1/waiting_rooms", `{"name":"r1","total_active_users":10,"new_users_per_minute":10,"colour":"red"}`, 400, CodeInvalid, "colour: is not a setting"},
		{"POST", "/api/v1/waiting_rooms", `{"name":"r1","total_active_users":"ten","new_users_per_minute":10}`, 400, CodeInvalid, "total_active_users: must be"},
		{"POST", "/api/v1/waiting_rooms", `{"name":`, 400, CodeInvalid, "(document)"},
		{"POST", "/api/v1/waiting_rooms", `{"name":"r1","total_active_users":0,"new_users_per_minute":10}`, 400, CodeInvalid, "total_active_users"},
		{"POST", "/api/v1/waiting_rooms", `{"name":"r1","total_active_users":10,"new_users_per_minute":10,"custom_page_html":"` + strings.Repeat("x", MaxBody) + `"}`, 413, CodeTooLarge, "body"},
		{"GET", "/api/v1/waiting_rooms?page=0", "", 400, CodeInvalid, "page: must be"},
		{"GET", "/api/v1/waiting_rooms?per_page=abc", "", 400, CodeInvalid, "per_page: must be"},
		{"GET", "/api/v1/waiting_rooms?per_page=1001", "", 400, CodeInvalid, "per_page: must be"},
		{"GET", "/api/v1/waiting_rooms/bad.name", "", 400, CodeInvalid, "name: must be"},
		{"PATCH", "/api/v1/waiting_rooms/demo", `[1]`, 400, CodeInvalid, "(document)"},
		{"POST", "/api/v1/waiting_rooms/demo/events", `{"name":"e","when":"now"}`, 400, CodeInvalid, "when: is not a setting"},
	} {
		resp, env := call(t, srv, c.method, c.path, rwSecret, c.body)
		wantError(t, resp, env, c.status, c.code, c.want)
	}
}

func TestIfMatch(t *testing.T) {
	for h, want := range map[string]int64{"": 0, "7": 7, `"7"`: 7, `W/"12"`: 12} {
		if got, err := ifMatch(h); err != nil || got != want {
			t.Errorf("%q: got %d, %v; want %d", h, got, err, want)
		}
	}
	for _, h := range []string{"x", `"0"`, "-1", `"v3"`} {
		if _, err := ifMatch(h); err == nil || !strings.Contains(err.Error(), "If-Match") {
			t.Errorf("%q: got %v, want an error naming If-Match", h, err)
		}
	}
}

func TestPageOf(t *testing.T) {
	all := []int{1, 2, 3, 4, 5}
	for _, c := range []struct {
		page, per int
		want      []int
	}{{1, 2, []int{1, 2}}, {3, 2, []int{5}}, {4, 2, []int{}}, {1, 25, all}} {
		got, info := pageOf(all, c.page, c.per)
		if !equal(got, c.want) || *info != (ResultInfo{Page: c.page, PerPage: c.per, Count: len(c.want), TotalCount: 5}) {
			t.Errorf("page %d by %d: got %v %+v, want %v", c.page, c.per, got, info, c.want)
		}
	}
}

func equal(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
