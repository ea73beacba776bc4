// Package console drives the console's HTTP API through a real HTTP server
// on a real Temporal dev server and MinIO, with the admit and migrate
// workers in this process.
package console

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/worker"

	"github.com/edgeflow/edgeflow/internal/console"
	"github.com/edgeflow/edgeflow/internal/testenv"
	roomwf "github.com/edgeflow/edgeflow/workflows/admit"
	"github.com/edgeflow/edgeflow/workflows/admit/contract"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	// Redis: the gates' shared Redis, where the rooms' live views are read.
	testenv.Main(m, testenv.Options{Temporal: true, MinIO: true, Redis: true}, &env)
}

const (
	rwSecret = "it-rw-secret-0123456789"
	roSecret = "it-ro-secret-0123456789"
)

// api is the console on a real HTTP server, with an admit worker.
type api struct {
	t    *testing.T
	srv  *httptest.Server
	logs *bytes.Buffer
}

func start(t *testing.T) *api {
	t.Helper()
	testenv.Require(t, env)
	w := worker.New(env.Client, contract.TaskQueue, worker.Options{})
	roomwf.Register(w)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	tokens, err := console.ParseTokens([]string{"admin:" + rwSecret, "viewer:" + roSecret + ":ro"}, "test")
	if err != nil {
		t.Fatal(err)
	}
	logs := &bytes.Buffer{}
	srv := httptest.NewServer(console.New(console.Options{Temporal: env.Client, Tokens: tokens, Log: slog.New(slog.NewTextHandler(logs, nil)),
		Live: liveSource(t)}).Handler())
	t.Cleanup(srv.Close)
	return &api{t: t, srv: srv, logs: logs}
}

type reply struct {
	status  int
	header  http.Header
	env     console.Envelope
	result  json.RawMessage
	message string // the first error's
}

func (a *api) do(method, path, secret, body string, header ...string) reply {
	a.t.Helper()
	req, err := http.NewRequest(method, a.srv.URL+path, strings.NewReader(body))
	if err != nil {
		a.t.Fatal(err)
	}
	if secret != "" {
		req.Header.Set("Authorization", "Bearer "+secret)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := a.srv.Client().Do(req)
	if err != nil {
		a.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	var raw struct {
		console.Envelope
		Result json.RawMessage `json:"result"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		a.t.Fatalf("%s %s: not JSON (%v): %s", method, path, err, data)
	}
	if raw.Errors == nil || raw.Messages == nil {
		a.t.Fatalf("%s %s: errors and messages must be lists: %s", method, path, data)
	}
	r := reply{status: resp.StatusCode, header: resp.Header, env: raw.Envelope, result: raw.Result}
	if len(raw.Errors) > 0 {
		r.message = raw.Errors[0].Message
	}
	if (resp.StatusCode < 300) != raw.Success {
		a.t.Fatalf("%s %s: status %d but success %v", method, path, resp.StatusCode, raw.Success)
	}
	return r
}

// ok asserts a success with status and decodes the result into out.
func (a *api) ok(r reply, status int, out any) {
	a.t.Helper()
	if r.status != status {
		a.t.Fatalf("got %d (%s), want %d", r.status, r.message, status)
	}
	if out != nil {
		// Decoding into a used map would keep the keys a result leaves out.
		reflect.ValueOf(out).Elem().SetZero()
		if err := json.Unmarshal(r.result, out); err != nil {
			a.t.Fatalf("result %s: %v", r.result, err)
		}
	}
}

func (a *api) fails(r reply, status int, inMessage string) {
	a.t.Helper()
	if r.status != status || !strings.Contains(r.message, inMessage) {
		a.t.Fatalf("got %d %q, want %d with %q", r.status, r.message, status, inMessage)
	}
}

func roomJSON(name, path string, total int) string {
	return fmt.Sprintf(`{"name":%q,"path":%q,"total_active_users":%d,"new_users_per_minute":20}`, name, path, total)
}

// TestRoomsAPI walks every room route on the dev server: the envelope,
// 401/403, 400 naming the field, 404, 409 on a stale If-Match and on a
// second create.
func TestRoomsAPI(t *testing.T) {
	a := start(t)
	const room = "it-console-shop"

	a.fails(a.do("POST", "/api/v1/waiting_rooms", "", roomJSON(room, "/shop/", 100)), 401, "Authorization")
	a.fails(a.do("POST", "/api/v1/waiting_rooms", roSecret, roomJSON(room, "/shop/", 100)), 403, "read-only")
	a.fails(a.do("POST", "/api/v1/waiting_rooms", rwSecret, `{"name":"it-console-bad","total_active_users":10,"new_users_per_minute":10,"queueing_method":"lottery"}`), 400, "queueing_method")

	var settings map[string]any
	r := a.do("POST", "/api/v1/waiting_rooms", rwSecret, roomJSON(room, "/shop/", 100))
	a.ok(r, 201, &settings)
	if settings["name"] != room || settings["total_active_users"] != 100.0 || settings["path"] != "/shop/" {
		t.Fatalf("created settings %v", settings)
	}
	if r.header.Get("ETag") == "" || r.header.Get("Location") != "/api/v1/waiting_rooms/"+room {
		t.Errorf("create: ETag %q, Location %q", r.header.Get("ETag"), r.header.Get("Location"))
	}
	a.fails(a.do("POST", "/api/v1/waiting_rooms", rwSecret, roomJSON(room, "/shop/", 100)), 409, "name")

	// Read with a read-only token: the same names as `room get --json`.
	r = a.do("GET", "/api/v1/waiting_rooms/"+room, roSecret, "")
	a.ok(r, 200, &settings)
	etag := r.header.Get("ETag")
	for _, k := range []string{"name", "total_active_users", "new_users_per_minute", "session_duration", "queueing_method", "cookie_attributes"} {
		if _, ok := settings[k]; !ok {
			t.Errorf("GET settings lack %q: %v", k, settings)
		}
	}
	a.fails(a.do("GET", "/api/v1/waiting_rooms/it-console-none", roSecret, ""), 404, "name")

	// PATCH: with the current If-Match it applies; with the old one, 409.
	r = a.do("PATCH", "/api/v1/waiting_rooms/"+room, rwSecret, `{"total_active_users":250,"description":"spring sale"}`, "If-Match", etag)
	a.ok(r, 200, &settings)
	if settings["total_active_users"] != 250.0 || settings["description"] != "spring sale" || settings["new_users_per_minute"] != 20.0 {
		t.Fatalf("patched settings %v", settings)
	}
	if r.header.Get("ETag") == etag {
		t.Errorf("the ETag stayed %s after a change", etag)
	}
	a.fails(a.do("PATCH", "/api/v1/waiting_rooms/"+room, rwSecret, `{"total_active_users":300}`, "If-Match", etag), 409, "If-Match")
	a.fails(a.do("PATCH", "/api/v1/waiting_rooms/"+room, rwSecret, `{"total_active_users":-1}`), 400, "total_active_users")
	a.fails(a.do("PATCH", "/api/v1/waiting_rooms/"+room, rwSecret, `{"totl_active_users":1}`), 400, "totl_active_users")
	a.fails(a.do("PATCH", "/api/v1/waiting_rooms/"+room, rwSecret, `{"name":"other"}`), 400, "name")
	a.fails(a.do("PATCH", "/api/v1/waiting_rooms/"+room, roSecret, `{"suspended":true}`), 403, "read-only")
	// Without If-Match: read-modify-write, like `room suspend`; null resets.
	a.ok(a.do("PATCH", "/api/v1/waiting_rooms/"+room, rwSecret, `{"suspended":true,"description":null}`), 200, &settings)
	if settings["suspended"] != true || settings["description"] != nil || settings["total_active_users"] != 250.0 {
		t.Fatalf("patched without If-Match: %v", settings)
	}

	var status map[string]any
	a.ok(a.do("GET", "/api/v1/waiting_rooms/"+room+"/status", roSecret, ""), 200, &status)
	for _, k := range []string{"status", "event_id", "estimated_queued_users", "estimated_total_active_users", "max_estimated_time_minutes"} {
		if _, ok := status[k]; !ok {
			t.Errorf("status lacks %q: %v", k, status)
		}
	}

	// Events.
	begin := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	event := fmt.Sprintf(`{"name":"launch","event_start_time":%q,"event_end_time":%q,"total_active_users":500,"new_users_per_minute":50}`,
		begin.Format(time.RFC3339), begin.Add(time.Hour).Format(time.RFC3339))
	a.fails(a.do("POST", "/api/v1/waiting_rooms/"+room+"/events", rwSecret, `{"name":"launch","event_start_time":"tomorrow"}`), 400, "event_start_time")
	a.fails(a.do("POST", "/api/v1/waiting_rooms/"+room+"/events", roSecret, event), 403, "read-only")
	var ev map[string]any
	a.ok(a.do("POST", "/api/v1/waiting_rooms/"+room+"/events", rwSecret, event), 201, &ev)
	if ev["name"] != "launch" {
		t.Fatalf("added event %v", ev)
	}
	var events []map[string]any
	r = a.do("GET", "/api/v1/waiting_rooms/"+room+"/events", roSecret, "")
	a.ok(r, 200, &events)
	if len(events) != 1 || events[0]["name"] != "launch" || events[0]["total_active_users"] != 500.0 ||
		r.env.ResultInfo == nil || r.env.ResultInfo.TotalCount != 1 || r.env.ResultInfo.Count != 1 {
		t.Fatalf("events %v, result_info %+v", events, r.env.ResultInfo)
	}
	a.ok(a.do("DELETE", "/api/v1/waiting_rooms/"+room+"/events/launch", rwSecret, ""), 200, nil)
	a.fails(a.do("DELETE", "/api/v1/waiting_rooms/"+room+"/events/launch", rwSecret, ""), 404, "event")
	a.ok(a.do("GET", "/api/v1/waiting_rooms/"+room+"/events", roSecret, ""), 200, &events)
	if len(events) != 0 {
		t.Fatalf("events after the cancel: %v", events)
	}

	// Delete: gone for GET, PATCH and a second DELETE.
	a.fails(a.do("DELETE", "/api/v1/waiting_rooms/"+room, roSecret, ""), 403, "read-only")
	a.ok(a.do("DELETE", "/api/v1/waiting_rooms/"+room, rwSecret, ""), 200, nil)
	a.fails(a.do("GET", "/api/v1/waiting_rooms/"+room, roSecret, ""), 404, "deleted")
	a.fails(a.do("PATCH", "/api/v1/waiting_rooms/"+room, rwSecret, `{"suspended":false}`), 404, "deleted")
	a.fails(a.do("DELETE", "/api/v1/waiting_rooms/"+room, rwSecret, ""), 404, "deleted")

	for _, s := range []string{rwSecret, roSecret} {
		if strings.Contains(a.logs.String(), s) {
			t.Fatal("the console's log holds a token's secret")
		}
	}
}

// TestRoomListPages pages the room list (the function behind `room list`).
func TestRoomListPages(t *testing.T) {
	a := start(t)
	names := []string{"it-console-list-a", "it-console-list-b", "it-console-list-c"}
	for i, n := range names {
		a.ok(a.do("POST", "/api/v1/waiting_rooms", rwSecret, roomJSON(n, fmt.Sprintf("/list-%c/", 'a'+i), 10)), 201, nil)
	}
	// Visibility lists a new workflow after a moment: ask until all show.
	mine := func(rows []map[string]any) []string {
		var out []string
		for _, r := range rows {
			if n, _ := r["name"].(string); strings.HasPrefix(n, "it-console-list-") {
				out = append(out, n)
			}
		}
		return out
	}
	var total int
	deadline := time.Now().Add(30 * time.Second)
	for {
		var rows []map[string]any
		r := a.do("GET", "/api/v1/waiting_rooms?per_page=1000", roSecret, "")
		a.ok(r, 200, &rows)
		if len(mine(rows)) == len(names) {
			total = r.env.ResultInfo.TotalCount
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the list never showed all of %v: %v", names, rows)
		}
		time.Sleep(200 * time.Millisecond)
	}
	// Page through by two: every room once, result_info consistent.
	var seen []string
	for page := 1; ; page++ {
		var rows []map[string]any
		r := a.do("GET", fmt.Sprintf("/api/v1/waiting_rooms?page=%d&per_page=2", page), roSecret, "")
		a.ok(r, 200, &rows)
		info := r.env.ResultInfo
		if info == nil || info.Page != page || info.PerPage != 2 || info.Count != len(rows) || info.TotalCount != total {
			t.Fatalf("page %d: result_info %+v with %d rows (total %d)", page, info, len(rows), total)
		}
		if len(rows) == 0 {
			break
		}
		seen = append(seen, mine(rows)...)
	}
	if strings.Join(seen, ",") != strings.Join(names, ",") {
		t.Errorf("paged through %v, want %v", seen, names)
	}
	a.fails(a.do("GET", "/api/v1/waiting_rooms?page=0", roSecret, ""), 400, "page")
}
