package admit

import (
	"context"
	"testing"
	"time"
)

// forgedLedger is a session ledger someone wrote to by hand: a million
// sessions ended.
type forgedLedger struct{ *MemoryCounter }

func (forgedLedger) SessionsEnded(context.Context, string, time.Time, time.Time) (int64, error) {
	return 1_000_000, nil
}

// A session ledger claiming more sessions ended than the snapshot counted
// frees no more places than it counted: with 2 sessions running in a room
// of 2, at most 2 visitors take their places. Before, the forged count
// freed the whole new_users_per_minute (10) past total_active_users.
func TestForgedLedgerFreesNoMoreThanTheSnapshotCounted(t *testing.T) {
	r, c, now := freedRoom(t)
	snap := *r.Snapshot
	snap.ActiveUsers, snap.Settings.TotalActiveUsers, snap.SlotsAvailable = 2, 2, 0
	*now = snap.Minute.Add(time.Second)
	admitted := 0
	for range 20 {
		d, err := Decide(context.Background(), Input{Now: *now, Snapshot: &snap, Gate: Gate{"ams", "ams-1"},
			Strategy: SharedCounters{forgedLedger{c}}, Entropy: 7})
		if err != nil {
			t.Fatal(err)
		}
		if d.Outcome == Admit {
			admitted++
		}
	}
	if admitted != 2 {
		t.Errorf("%d visitors admitted in the place of ended sessions, want the 2 the snapshot counted", admitted)
	}
}
