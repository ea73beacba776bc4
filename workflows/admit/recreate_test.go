package admit_test

import (
	"testing"
	"time"

	engine "github.com/edgeflow/edgeflow/internal/admit"
	"github.com/edgeflow/edgeflow/workflows/admit/contract"
)

// A room created again keeps the rules of its run: it still bounds what a
// minute's reports hold (the third of three reporters, over its bound of
// two, is refused). Recreate used to start the room with none of them (no
// bound, no final reports awaited) until its next run.
func TestRecreatedRoomKeepsItsBounds(t *testing.T) {
	rt := newRoomTest(t)
	in := shopInput()
	in.Settings.MaxReportersPerMinute = 2
	rt.update(5*time.Second, contract.DeleteUpdate, func(_ contract.Change, err error) {
		if err != nil {
			t.Fatalf("delete: %v", err)
		}
	})
	rt.update(10*time.Second, contract.RecreateUpdate, func(c contract.Change, err error) {
		if err != nil || c.Deleted {
			t.Fatalf("recreate: %v %+v", err, c)
		}
	}, in.Settings)
	rt.at(15*time.Second, func() {
		for _, g := range []string{"ams-1", "ams-2", "ams-3"} {
			rt.signal(engine.Report{DataCenter: "ams", Gate: g, Minute: minute(44), Seq: 1, Admitted: 1, Seen: 1})
		}
	})
	rt.at(20*time.Second, func() {
		if d := rt.describe(); d.Stats.Reports != 2 || d.Stats.ReportsRefused != 1 {
			t.Errorf("recreated room took %d reports and refused %d, want 2 and 1 (bound of 2 reporters)", d.Stats.Reports, d.Stats.ReportsRefused)
		}
	})
	canceled(t, rt.run(in, 25*time.Second))
}
