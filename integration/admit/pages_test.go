package admit

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The room starter refuses a page with a partial, for a room and for an
// event, exiting 2 naming custom_page_html and showing nothing of the file.
func TestRoomStarterRefusesPartials(t *testing.T) {
	startWorker(t)
	secret := filepath.Join(t.TempDir(), "environ")
	if err := os.WriteFile(secret, []byte("GATE_COOKIE_KEYS=k1:c2VjcmV0"), 0o600); err != nil {
		t.Fatal(err)
	}
	page := "<p>{{#inWaitingRoom}}{{> " + secret + "}}{{/inWaitingRoom}}</p>"
	expect := func(want int, args ...string) string {
		t.Helper()
		code, out, errOut := room(t, args...)
		if code != want || strings.Contains(out+errOut, "GATE_COOKIE_KEYS") {
			t.Fatalf("room %s: exit %d, want %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, want, out, errOut)
		}
		return errOut
	}
	if errOut := expect(2, "create", "it-partial", "--total-active-users", "5", "--new-users-per-minute", "5",
		"--custom-page-html", page); !strings.Contains(errOut, "custom_page_html") || !strings.Contains(errOut, "partial") {
		t.Errorf("create: %s", errOut)
	}
	expect(0, "create", "it-partial", "--total-active-users", "5", "--new-users-per-minute", "5", "--custom-page-html", "<p>ok</p>")
	if errOut := expect(2, "update", "it-partial", "--custom-page-html", page); !strings.Contains(errOut, "custom_page_html") {
		t.Errorf("update: %s", errOut)
	}
	if errOut := expect(2, "event", "add", "it-partial", "launch", "--event-start-time", "+10m", "--event-end-time", "+1h",
		"--custom-page-html", page); !strings.Contains(errOut, "custom_page_html") {
		t.Errorf("event add: %s", errOut)
	}
}
