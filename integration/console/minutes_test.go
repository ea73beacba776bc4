package console

import (
	"context"
	"testing"
	"time"

	"github.com/edgeflow/edgeflow/internal/admit"
	"github.com/edgeflow/edgeflow/internal/admit/roomclient"
	"github.com/edgeflow/edgeflow/internal/console"
)

// TestRoomMinutes reads a room's recent minutes as they close (a room of
// 3-second minutes, so some close within the test), and the errors.
func TestRoomMinutes(t *testing.T) {
	a := start(t)
	const room = "it-console-minutes"
	s, err := admit.ParseSettings([]byte(roomJSON(room, "/minutes/", 40)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := (roomclient.Client{C: env.Client}).Create(context.Background(), s, roomclient.CreateOptions{MinuteSeconds: 3}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	var got console.Minutes
	for {
		a.ok(a.do("GET", "/api/v1/waiting_rooms/"+room+"/minutes", roSecret, ""), 200, &got)
		if len(got.Minutes) >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no two minutes closed within a minute of 3-second minutes: %+v", got)
		}
		time.Sleep(500 * time.Millisecond)
	}
	if got.MinuteSeconds != 3 || got.ByDataCenter || len(got.Minutes) > admit.RecentMinutes {
		t.Fatalf("minutes %+v", got)
	}
	for i, m := range got.Minutes {
		if m.Status == "" || m.Minute.IsZero() || m.Active < 0 || m.Queued < 0 {
			t.Errorf("minute %d: %+v", i, m)
		}
		if i > 0 && !m.Minute.After(got.Minutes[i-1].Minute) {
			t.Errorf("minutes out of order: %v then %v", got.Minutes[i-1].Minute, m.Minute)
		}
	}
	a.fails(a.do("GET", "/api/v1/waiting_rooms/it-console-no-room/minutes", roSecret, ""), 404, "name")
	a.fails(a.do("GET", "/api/v1/waiting_rooms/bad%20name/minutes", roSecret, ""), 400, "name")
	a.fails(a.do("GET", "/api/v1/waiting_rooms/"+room+"/minutes", "", ""), 401, "Authorization")
	a.ok(a.do("DELETE", "/api/v1/waiting_rooms/"+room, rwSecret, ""), 200, nil)
	a.fails(a.do("GET", "/api/v1/waiting_rooms/"+room+"/minutes", roSecret, ""), 404, "deleted")
}
