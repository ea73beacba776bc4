package admit

import (
	"testing"
	"time"
)

// A decision in the newest minute that counts nothing (a running session's
// request) neither waits for nor takes the tally's lock, which every
// request of the room would otherwise share.
func TestTallyNewestMinuteTakesNoLock(t *testing.T) {
	start := time.Date(2026, 12, 1, 15, 0, 10, 0, time.UTC)
	clock := func() time.Time { return start }
	tally := NewTally("r", Gate{DataCenter: "ams", ID: "ams-1"}, 1)
	_, minute := tally.Begin(clock, time.Minute) // the minute's first decision makes it
	tally.End(minute, Effect{})

	tally.mu.Lock() // as if the reporter held it
	done := make(chan time.Time)
	go func() {
		_, m := tally.Begin(clock, time.Minute)
		tally.End(m, Effect{})
		done <- m
	}()
	select {
	case m := <-done:
		if !m.Equal(minute) {
			t.Errorf("minute %v, want %v", m, minute)
		}
	case <-time.After(10 * time.Second): // a deadlock detector, not a timing
		t.Fatal("Begin/End of a running session's request waited for the tally's lock")
	}
	tally.mu.Unlock()
}

// A decision begun on the lock-free path keeps its minute open: Finish
// does not finalize it until the decision is counted.
func TestTallyLockFreeDecisionKeepsMinuteOpen(t *testing.T) {
	now := time.Date(2026, 12, 1, 15, 0, 10, 0, time.UTC)
	clock := func() time.Time { return now }
	tally := NewTally("r", Gate{DataCenter: "ams", ID: "ams-1"}, 1)
	_, minute := tally.Begin(clock, time.Minute)
	tally.End(minute, Effect{})
	_, m := tally.Begin(clock, time.Minute) // lock-free: the newest minute
	if got := tally.Finish(minute.Add(time.Minute)); len(got) != 0 {
		t.Fatalf("finished %v with a decision still being counted", got)
	}
	tally.End(m, Effect{})
	if got := tally.Finish(minute.Add(time.Minute)); len(got) != 1 || !got[0].Equal(minute) {
		t.Fatalf("finished %v, want %v", got, minute)
	}
	// A decision after the minute went final takes the lock and is
	// counted in its minute, as before.
	_, m = tally.Begin(clock, time.Minute)
	tally.End(m, Effect{Minute: m, Seen: true})
	if r, _ := tally.Report(minute); r.Seen != 1 || !r.Final {
		t.Errorf("report %+v: want one seen, final", r)
	}
}
