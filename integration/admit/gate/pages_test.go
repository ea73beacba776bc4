package gate

import (
	"context"
	"strings"
	"testing"
	"time"

	engine "github.com/edgeflow/edgeflow/internal/admit"
	"github.com/edgeflow/edgeflow/internal/testenv"
)

// An event's own page reaches a running gate through the room's describe
// query while the event runs, and the room's page comes back after it.
func TestEventPageOnARunningGate(t *testing.T) {
	testenv.Require(t, env)
	o := newOrigin(t, nil)
	s := engine.Settings{Name: "it-pages", Path: "/pages/", TotalActiveUsers: 5, NewUsersPerMinute: 5, QueueAll: true,
		CustomPageHTML: "<p>the room's page</p>"}
	rc := createRoom(t, s, 0)
	g := startGate(t, "ams", "ams-pages", o.URL, "--redis-url", env.Redis.URL)
	shows := func(want string) {
		t.Helper()
		eventually(t, time.Minute, "queued visitors get "+want, func() (bool, string) {
			a := get(t, newVisitorClient, g.URL+"/pages/x", "")
			return strings.Contains(a.body, want), a.body
		})
	}
	shows("<p>the room's page</p>")
	page, begin := "<p>the event's page</p>", time.Now().Add(-time.Second)
	end := time.Now().Add(20 * time.Second)
	if _, err := rc.AddEvent(context.Background(), s.Name, engine.Event{Name: "launch", EventStartTime: begin, EventEndTime: end,
		CustomPageHTML: &page}); err != nil {
		t.Fatal(err)
	}
	shows("<p>the event's page</p>")
	shows("<p>the room's page</p>")
	if time.Now().Before(end) {
		t.Errorf("the room's page came back before the event ended")
	}
}
