package admit

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/edgeflow/edgeflow/internal/testenv"
)

var (
	buildOnce sync.Once
	roomBin   string
	buildErr  error
)

// room runs the room starter against the test server and returns its exit
// code, stdout and stderr.
func room(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	testenv.Require(t, env)
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "edgeflow-room-")
		if err != nil {
			buildErr = err
			return
		}
		roomBin, buildErr = testenv.BuildCommand(dir, "./starters/room")
	})
	if buildErr != nil {
		t.Fatalf("build the room starter: %v", buildErr)
	}
	cmd := exec.Command(roomBin, args...)
	cmd.Env = append(os.Environ(), "TEMPORAL_ADDRESS="+env.Temporal.HostPort)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, stdout.String(), stderr.String()
}

func oneJSON(t *testing.T, out string, v any) {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(out))
	if err := dec.Decode(v); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s", err, out)
	}
	if dec.More() {
		t.Fatalf("stdout holds more than one JSON document:\n%s", out)
	}
}

func TestRoomStarter(t *testing.T) {
	startWorker(t)
	expect := func(want int, args ...string) (string, string) {
		t.Helper()
		code, out, errOut := room(t, args...)
		if code != want {
			t.Fatalf("room %s: exit %d, want %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, want, out, errOut)
		}
		return out, errOut
	}
	out, _ := expect(0, "create", "it-cli", "--total-active-users", "200", "--new-users-per-minute", "100", "--queueing-method", "fifo",
		"--queueing-status-code", "429", "--json-response-enabled", "--path", "/shop/", "--json")
	var settings map[string]any
	oneJSON(t, out, &settings)
	if settings["name"] != "it-cli" || settings["total_active_users"] != 200.0 || settings["queueing_status_code"] != 429.0 ||
		settings["json_response_enabled"] != true || settings["path"] != "/shop/" || settings["session_duration"] != 5.0 {
		t.Errorf("create --json: %v", settings)
	}
	_, errOut := expect(1, "create", "it-cli", "--total-active-users", "200", "--new-users-per-minute", "100")
	if !strings.Contains(errOut, "exists") {
		t.Errorf("second create: %s", errOut)
	}
	_, errOut = expect(2, "create", "it-bad", "--total-active-users", "200", "--new-users-per-minute", "100", "--queueing-method", "lifo")
	if !strings.Contains(errOut, "queueing_method") {
		t.Errorf("invalid create names no field: %s", errOut)
	}
	file := filepath.Join(t.TempDir(), "room.json")
	if err := os.WriteFile(file, []byte(`{"total_active_users":5,"new_users_per_minute":5,"sesion_duration":3}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, errOut = expect(2, "create", "it-file", "--file", file); !strings.Contains(errOut, "sesion_duration") {
		t.Errorf("a typo in the file: %s", errOut)
	}

	out, _ = expect(0, "update", "it-cli", "--queueing-method", "random", "--session-duration", "10", "--json")
	oneJSON(t, out, &settings)
	if settings["queueing_method"] != "random" || settings["session_duration"] != 10.0 || settings["queueing_status_code"] != 429.0 {
		t.Errorf("update keeps what it does not change: %v", settings)
	}
	if _, errOut = expect(2, "update", "it-cli", "--queueing-status-code", "503"); !strings.Contains(errOut, "queueing_status_code") {
		t.Errorf("invalid update: %s", errOut)
	}
	out, _ = expect(0, "get", "it-cli", "--json")
	var got map[string]any
	oneJSON(t, out, &got)
	if !reflect.DeepEqual(got, settings) {
		t.Errorf("get --json %v, update said %v", got, settings)
	}

	out, _ = expect(0, "status", "it-cli", "--json")
	var status map[string]any
	oneJSON(t, out, &status)
	var keys []string
	for k := range status {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range []string{"estimated_queued_users", "estimated_total_active_users", "max_estimated_time_minutes", "status"} {
		if _, ok := status[k]; !ok {
			t.Errorf("status --json lacks %s: %v", k, keys)
		}
	}
	if status["status"] != "not_queueing" {
		t.Errorf("status %v", status)
	}
	expect(0, "suspend", "it-cli")
	out, _ = expect(0, "status", "it-cli", "--json")
	oneJSON(t, out, &status)
	if status["status"] != "suspended" {
		t.Errorf("suspended room: %v", status)
	}
	expect(0, "resume", "it-cli")

	expect(0, "event", "add", "it-cli", "launch", "--event-start-time", "+10m", "--event-end-time", "+1h", "--prequeue-start-time", "+5m",
		"--shuffle-at-event-start", "--new-users-per-minute", "50", "--total-active-users", "100")
	if _, errOut = expect(2, "event", "add", "it-cli", "overlap", "--event-start-time", "+20m", "--event-end-time", "+30m"); !strings.Contains(errOut, "overlaps") {
		t.Errorf("overlapping event: %s", errOut)
	}
	if _, errOut = expect(2, "event", "add", "it-cli", "nostart", "--event-end-time", "+30m"); !strings.Contains(errOut, "event_start_time") {
		t.Errorf("event without a start: %s", errOut)
	}
	out, _ = expect(0, "event", "list", "it-cli", "--json")
	var events []map[string]any
	oneJSON(t, out, &events)
	if len(events) != 1 || events[0]["name"] != "launch" || events[0]["shuffle_at_event_start"] != true || events[0]["new_users_per_minute"] != 50.0 {
		t.Errorf("event list: %v", events)
	}
	expect(1, "event", "cancel", "it-cli", "nope")
	expect(0, "event", "cancel", "it-cli", "launch")

	expect(1, "get", "it-nope")
	expect(0, "delete", "it-cli")
	out, _ = expect(0, "status", "it-cli", "--json")
	oneJSON(t, out, &status)
	if status["status"] != "deleted" {
		t.Errorf("deleted room: %v", status)
	}
	expect(1, "update", "it-cli", "--new-users-per-minute", "5")
	expect(0, "create", "it-cli", "--total-active-users", "10", "--new-users-per-minute", "10")

	// The address flag under its old name, kept as a hidden alias.
	code, _, errOut := room(t, "get", "it-cli", "--temporal-address", "127.0.0.1:1")
	if code != 3 {
		t.Errorf("unreachable Temporal: exit %d (%s)", code, errOut)
	}
	if code, _, _ := room(t, "frobnicate", "x"); code != 2 {
		t.Errorf("unknown command: exit %d", code)
	}
}

// The pages a room keeps, its own and its events', hold 512 KiB together:
// an event that would take them past it is refused, the starter exits 2
// naming custom_page_html, and the room stays as it was.
func TestRoomStarterRefusesPagesPastTheBound(t *testing.T) {
	startWorker(t)
	page := filepath.Join(t.TempDir(), "page.html")
	if err := os.WriteFile(page, []byte("<p>"+strings.Repeat("x", 64<<10-7)+"</p>"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := room(t, "create", "it-pages", "--total-active-users", "10", "--new-users-per-minute", "10",
		"--custom-page-html", "@"+page); code != 0 {
		t.Fatalf("create: exit %d: %s", code, errOut)
	}
	add := func(i int) (int, string) {
		code, _, errOut := room(t, "event", "add", "it-pages", "e"+strconv.Itoa(i), "--event-start-time", "+"+strconv.Itoa(i+1)+"h",
			"--event-end-time", "+"+strconv.Itoa(i+1)+"h30m", "--custom-page-html", "@"+page)
		return code, errOut
	}
	for i := range 7 { // 8 pages of 64 KiB: the bound
		if code, errOut := add(i); code != 0 {
			t.Fatalf("event %d: exit %d: %s", i, code, errOut)
		}
	}
	if code, errOut := add(7); code != 2 || !strings.Contains(errOut, "custom_page_html") {
		t.Errorf("a ninth page: exit %d, want 2 naming custom_page_html: %s", code, errOut)
	}
	code, out, errOut := room(t, "event", "list", "it-pages", "--json")
	var events []map[string]any
	if code != 0 {
		t.Fatalf("event list: exit %d: %s", code, errOut)
	}
	oneJSON(t, out, &events)
	if len(events) != 7 {
		t.Errorf("%d events, want the 7 that fit", len(events))
	}
}
