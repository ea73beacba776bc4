package admit

import (
	"strings"
	"testing"
	"time"
)

// TestRoomList lists rooms as Cloudflare's "Manage Waiting Room" table
// does: every room with its route, status and figures, deleted ones only
// with --all.
func TestRoomList(t *testing.T) {
	startWorker(t)
	for _, args := range [][]string{
		{"create", "it-list-shop", "--host", "shop.example", "--path", "/sale/", "--total-active-users", "300", "--new-users-per-minute", "60"},
		{"create", "it-list-gone", "--total-active-users", "10", "--new-users-per-minute", "10", "--path", "/gone/"},
		{"delete", "it-list-gone"},
	} {
		if code, _, errOut := room(t, args...); code != 0 {
			t.Fatalf("room %s: exit %d: %s", strings.Join(args, " "), code, errOut)
		}
	}
	// Visibility lists a new workflow after a moment: ask until both show.
	var shop, gone map[string]any
	deadline := time.Now().Add(30 * time.Second)
	for shop == nil || gone == nil {
		if time.Now().After(deadline) {
			t.Fatalf("room list --all never listed both rooms: shop %v, gone %v", shop, gone)
		}
		time.Sleep(200 * time.Millisecond)
		code, out, errOut := room(t, "list", "--all", "--json")
		if code != 0 {
			t.Fatalf("list --all: exit %d: %s", code, errOut)
		}
		var rows []map[string]any
		oneJSON(t, out, &rows)
		shop, gone = nil, nil
		for _, r := range rows {
			for _, key := range []string{"name", "path", "host", "status", "active_users", "total_active_users", "queued_users", "estimated_wait_minutes"} {
				if _, ok := r[key]; !ok {
					t.Fatalf("row %v lacks %q", r, key)
				}
			}
			switch r["name"] {
			case "it-list-shop":
				shop = r
			case "it-list-gone":
				gone = r
			}
		}
	}
	if shop["host"] != "shop.example" || shop["path"] != "/sale/" || shop["status"] != "not_queueing" ||
		shop["total_active_users"] != 300.0 || shop["queued_users"] != 0.0 {
		t.Errorf("shop row %v", shop)
	}
	if gone["status"] != "deleted" {
		t.Errorf("deleted room's row %v", gone)
	}
	code, out, errOut := room(t, "list", "--json")
	if code != 0 {
		t.Fatalf("list: exit %d: %s", code, errOut)
	}
	if strings.Contains(out, "it-list-gone") || !strings.Contains(out, "it-list-shop") {
		t.Errorf("list without --all shows the deleted room or hides the live one:\n%s", out)
	}
	code, out, _ = room(t, "list")
	if code != 0 || !strings.Contains(out, "it-list-shop") || !strings.Contains(out, "shop.example") || !strings.Contains(out, "0/300") {
		t.Errorf("list (table): exit %d:\n%s", code, out)
	}
	if code, _, errOut := room(t, "list", "extra"); code != 2 {
		t.Errorf("list with a name: exit %d, want 2: %s", code, errOut)
	}
}
