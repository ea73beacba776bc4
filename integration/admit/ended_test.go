package admit

import (
	"context"
	"fmt"
	"testing"
	"time"

	engine "github.com/edgeflow/edgeflow/internal/admit"
	gatepkg "github.com/edgeflow/edgeflow/internal/admit/gate"
	"github.com/edgeflow/edgeflow/internal/admit/roomclient"
	"github.com/edgeflow/edgeflow/internal/testenv"
	"github.com/edgeflow/edgeflow/workflows/admit/contract"
)

// A gate started after a room's workflow was terminated finds the room on
// the real server (its ended run, by visibility) and holds it from its last
// state, read by query of the ended run: its path is routed, vanished
// since the workflow ended. Before, the gate listed running rooms only.
func TestGateStartedAfterTerminationHoldsTheRoom(t *testing.T) {
	startWorker(t)
	rc := roomclient.Client{C: env.Client}
	ctx := context.Background()
	name := fmt.Sprintf("it-ended-%d", time.Now().UnixNano()%1e9)
	s := engine.Settings{Name: name, Path: "/" + name + "/", TotalActiveUsers: 10, NewUsersPerMinute: 5}
	if _, err := rc.Create(ctx, s, roomclient.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, rc, name, 30*time.Second, "the room publishes", func(engine.Snapshot) bool { return true })
	if err := env.Client.TerminateWorkflow(ctx, contract.RoomWorkflowID(name), "", "terminated by hand, not deleted"); err != nil {
		t.Fatal(err)
	}

	reg := gatepkg.NewRegistry(engine.Gate{DataCenter: "ams", ID: "ams-late"})
	w := &gatepkg.Watcher{Source: gatepkg.TemporalRooms{Client: rc}, Registry: reg}
	testenv.Eventually(t, 30*time.Second, 200*time.Millisecond, "a gate started later holds the terminated room", func() (bool, string) {
		if err := w.Sync(ctx); err != nil {
			return false, err.Error()
		}
		r := reg.Match("h", "/"+name+"/cart")
		if r == nil || r.VanishedAt().IsZero() {
			return false, fmt.Sprintf("room %v", r)
		}
		return true, ""
	})
}
