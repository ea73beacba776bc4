package console

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/edgeflow/edgeflow/internal/admit"
	"github.com/edgeflow/edgeflow/internal/admit/roomclient"
	"github.com/edgeflow/edgeflow/internal/console"
	"github.com/edgeflow/edgeflow/workflows/admit/contract"
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
	if got.MinuteSeconds != 3 || len(got.Minutes) > admit.RecentMinutes {
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
	closedByDataCenter(t, a, room)
	a.fails(a.do("GET", "/api/v1/waiting_rooms/it-console-no-room/minutes", roSecret, ""), 404, "name")
	a.fails(a.do("GET", "/api/v1/waiting_rooms/bad%20name/minutes", roSecret, ""), 400, "name")
	a.fails(a.do("GET", "/api/v1/waiting_rooms/"+room+"/minutes", "", ""), 401, "Authorization")
	a.ok(a.do("DELETE", "/api/v1/waiting_rooms/"+room, rwSecret, ""), 200, nil)
	a.fails(a.do("GET", "/api/v1/waiting_rooms/"+room+"/minutes", roSecret, ""), 404, "deleted")
}

// closedByDataCenter reports a minute from gates in two data centers (as
// gates do, by signal) and reads the minute, once closed, by data center.
func closedByDataCenter(t *testing.T, a *api, room string) {
	t.Helper()
	ctx := context.Background()
	d, err := (roomclient.Client{C: env.Client}).Describe(ctx, room)
	if err != nil {
		t.Fatal(err)
	}
	minute := d.Snapshot.Minute.Add(time.Duration(d.MinuteSeconds) * time.Second) // the next: open for the whole of it
	for i, dc := range []string{"it-sjc", "it-lhr", "it-lhr"} {
		r := admit.Report{Room: room, DataCenter: dc, Gate: fmt.Sprintf("%s-%d", dc, i), Minute: minute, Seq: 1,
			Admitted: 2 + i, Seen: 10 + i, Queued: []admit.MinuteCount{{Minute: minute, Count: 1}}}
		if err := env.Client.SignalWorkflow(ctx, contract.RoomWorkflowID(room), "", contract.ReportSignal, r); err != nil {
			t.Fatal(err)
		}
	}
	want := []console.DataCenterMinute{{DataCenter: "it-lhr", Admitted: 7, Queued: 2, Active: 23}, {DataCenter: "it-sjc", Admitted: 2, Queued: 1, Active: 10}}
	deadline := time.Now().Add(time.Minute)
	for {
		var got console.Minutes
		a.ok(a.do("GET", "/api/v1/waiting_rooms/"+room+"/minutes", roSecret, ""), 200, &got)
		for _, m := range got.Minutes {
			if m.Minute.Equal(minute) {
				if !got.ByDataCenter || !reflect.DeepEqual(m.DataCenters, want) || m.Admitted != 9 {
					t.Fatalf("the closed minute %s: by data center %v, %+v; want %+v", minute, got.ByDataCenter, m, want)
				}
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the minute %s never closed: %+v", minute, got)
		}
		time.Sleep(500 * time.Millisecond)
	}
}
