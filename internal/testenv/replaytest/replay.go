// Package replaytest is what the workflow packages' replay and record tests
// share: replaying every history recorded in testdata/ against the current
// workflow code, and recording those histories on a Temporal dev server.
// Only tests import it.
package replaytest

import (
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"
)

// Expect is how a recorded history must look, so that a regenerated file
// of another workflow, or one that ends differently, is noticed.
type Expect struct {
	Type     string          // the workflow the history is of
	ClosedBy enums.EventType // its last event
}

// QuietLogger logs errors only: a replay's routine lines would bury the
// test's output.
func QuietLogger() log.Logger {
	return log.NewStructuredLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})))
}

// HistoryFiles lists the recorded histories: testdata/ holds those of the
// current code, and each subfolder those of an earlier workflow revision,
// which must still replay (runs in flight when a new worker deploys).
func HistoryFiles(t testing.TB) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	older, err := filepath.Glob(filepath.Join("testdata", "*", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, older...)
	if len(files) == 0 {
		t.Fatal("no recorded histories in testdata/; see TestRecordHistories")
	}
	return files
}

// ReplayAll replays every recorded history, each in a subtest named by its
// path below testdata/, on a fresh replayer with what register registers:
// a change that would break runs in flight (nondeterminism) fails here.
// A history whose file name is in recorded (in testdata/ or a subfolder)
// must look as said there, and each name in recorded must be in testdata/.
// check, when not nil, checks every history further before it is replayed.
func ReplayAll(t *testing.T, register func(worker.WorkflowRegistry), recorded map[string]Expect,
	check func(t *testing.T, path string, events []*historypb.HistoryEvent)) {
	t.Helper()
	seen := map[string]bool{}
	for _, path := range HistoryFiles(t) {
		name := filepath.Base(path)
		// An earlier revision's copy in a subfolder does not stand in
		// for a missing current one.
		if filepath.Dir(path) == "testdata" {
			seen[name] = true
		}
		t.Run(strings.TrimSuffix(strings.TrimPrefix(path, "testdata/"), ".json"), func(t *testing.T) {
			hist := Load(t, path)
			events := hist.GetEvents()
			if len(events) < 3 {
				t.Fatalf("%s has %d events", path, len(events))
			}
			if want, ok := recorded[name]; ok {
				if got := WorkflowType(events); got != want.Type {
					t.Errorf("%s is a %s history, want %s", name, got, want.Type)
				}
				if last := events[len(events)-1].GetEventType(); last != want.ClosedBy {
					t.Errorf("%s ends with %v, want %v", name, last, want.ClosedBy)
				}
			}
			if check != nil {
				check(t, path, events)
			}
			r := worker.NewWorkflowReplayer()
			register(r)
			if err := r.ReplayWorkflowHistory(QuietLogger(), hist); err != nil {
				t.Errorf("replay %s: %v", path, err)
			}
		})
	}
	for _, name := range slices.Sorted(maps.Keys(recorded)) {
		if !seen[name] {
			t.Errorf("testdata/%s is missing; run TestRecordHistories", name)
		}
	}
}
