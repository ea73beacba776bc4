package admit_test

import (
	"path/filepath"
	"testing"
	"time"

	"go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	engine "github.com/edgeflow/edgeflow/internal/admit"
	"github.com/edgeflow/edgeflow/internal/testenv/replaytest"
	roomwf "github.com/edgeflow/edgeflow/workflows/admit"
	"github.com/edgeflow/edgeflow/workflows/admit/contract"
)

// recorded says how each history TestRecordHistories writes ends.
var recorded = map[string]replaytest.Expect{
	"room_continued_first_run.json": {Type: contract.WorkflowTypeRoom, ClosedBy: enums.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW},
	"room_last_run.json":            {Type: contract.WorkflowTypeRoom, ClosedBy: enums.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED},
}

// TestReplayRecordedHistories replays every recorded room history (and
// those of earlier revisions, in subfolders) against the current code: a
// change that would break rooms in flight fails here. After an intended
// incompatible change, gate it with workflow.GetVersion, or keep the old
// histories in a subfolder and record new ones.
func TestReplayRecordedHistories(t *testing.T) {
	replaytest.ReplayAll(t, func(r worker.WorkflowRegistry) { roomwf.Register(r) }, recorded,
		func(t *testing.T, path string, events []*historypb.HistoryEvent) {
			// Every history here is a room's, whatever its file is called.
			if got := replaytest.WorkflowType(events); got != contract.WorkflowTypeRoom {
				t.Errorf("a %s history", got)
			}
		})
}

// The recorded histories hold what the replay is meant to cover: reports,
// a timer per minute, updates, continue-as-new with the state carried, the
// version marker of final reports.
func TestRecordedHistoriesCoverTheRoom(t *testing.T) {
	readings := 0   // reports that read the shared counters
	aggregates := 0 // a data center's aggregated reports
	count := func(file string) map[enums.EventType]int {
		hist := replaytest.Load(t, filepath.Join("testdata", file))
		n := map[enums.EventType]int{}
		for _, ev := range hist.GetEvents() {
			n[ev.GetEventType()]++
			if a := ev.GetWorkflowExecutionSignaledEventAttributes(); a != nil && a.GetSignalName() == contract.ReportSignal {
				var rep engine.Report
				if err := converter.GetDefaultDataConverter().FromPayloads(a.GetInput(), &rep); err == nil && len(rep.StoreTaken) > 0 {
					readings++
				}
				if rep.Gate == engine.AggregateGate && rep.Gates > 0 {
					aggregates++
				}
			}
			if a := ev.GetWorkflowExecutionContinuedAsNewEventAttributes(); a != nil {
				var next contract.RoomInput
				if err := converter.GetDefaultDataConverter().FromPayloads(a.GetInput(), &next); err != nil {
					t.Fatal(err)
				}
				if next.State == nil || next.State.Runs != 1 || next.State.Stats.Reports == 0 || next.State.Room.Snapshot == nil || next.MinuteSeconds != 3 ||
					next.State.Room.Rev < engine.RevBounded || next.State.Stats.ReportsUndecodable != 1 {
					t.Errorf("continue-as-new input %+v", next)
				}
				// The room came back from minutes it published no
				// snapshot of and took their reports late, dropping none
				// (await-outage-reports).
				if l := next.State.Room.Ledger; next.State.Room.Returned.IsZero() || l.Dropped != 0 {
					t.Errorf("first run: returned %s, %d reports dropped; want a return from an outage and none dropped", next.State.Room.Returned, l.Dropped)
				}
			}
		}
		return n
	}
	first := count("room_continued_first_run.json")
	// A minute's snapshot is published on the last gate's final report
	// or on the timer, whichever comes first: timers are started every
	// minute, and most (with publish-on-final-reports, all) are
	// cancelled. The markers are the versions a new room asks for
	// (engine.RevCurrent): pages-read-no-files, matchable-route-paths,
	// await-final-reports, count-unreported-slots, bound-room-state,
	// drop-undecodable-reports, publish-on-final-reports,
	// allot-outage-minute, hold-stale-freed, settle-recent-minutes and
	// await-outage-reports.
	if first[enums.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED] < 10 || first[enums.EVENT_TYPE_TIMER_STARTED] < 3 ||
		first[enums.EVENT_TYPE_TIMER_FIRED]+first[enums.EVENT_TYPE_TIMER_CANCELED] < 3 || first[enums.EVENT_TYPE_MARKER_RECORDED] != 11 {
		t.Errorf("first run: %v", first)
	}
	// The gates' final reports carry their readings of the shared counters.
	if readings == 0 {
		t.Error("no report in the first run reads the shared counters")
	}
	// A data center's aggregate beside a gate's own reports (a rolling
	// upgrade).
	if aggregates == 0 {
		t.Error("no aggregated report in the first run")
	}
	// The second run's: the same but matchable-route-paths (asked only as
	// a room starts), and keep-revision-on-recreate (asked as it is
	// created again).
	last := count("room_last_run.json")
	if last[enums.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED] < 6 || last[enums.EVENT_TYPE_TIMER_CANCELED] == 0 || last[enums.EVENT_TYPE_MARKER_RECORDED] != 11 {
		t.Errorf("last run: %v", last)
	}
}

// The replayer catches a room that no longer does what its history says.
func TestReplayDetectsNondeterminism(t *testing.T) {
	r := worker.NewWorkflowReplayer()
	r.RegisterWorkflowWithOptions(func(ctx workflow.Context, in contract.RoomInput) error {
		// An hour-long timer where the history has the minute's.
		return workflow.Sleep(ctx, time.Hour)
	}, workflow.RegisterOptions{Name: contract.WorkflowTypeRoom})
	if err := r.ReplayWorkflowHistoryFromJSONFile(replaytest.QuietLogger(), filepath.Join("testdata", "room_continued_first_run.json")); err == nil {
		t.Fatal("replaying a changed room against its history succeeded")
	}
}
