package admit

import (
	"testing"
	"time"
)

// A client dropping its cookie at 10 requests a second, in a random room
// that queues, gets in no more often than an honest visitor: a request
// without a ticket gets one and no try, its first try coming a refresh
// interval later. And the room's waiting count counts the honest visitors
// who come back, not the tickets handed out to the dropper's requests.
// Deterministic: the world's entropy is a fixed sequence and the counters
// have no randomness.
func TestDroppingTheCookieBuysNothing(t *testing.T) {
	w := newWorld(t, Settings{Name: "shop", TotalActiveUsers: 1000, NewUsersPerMinute: 6, QueueingMethod: Random,
		RefreshIntervalSeconds: 10, SessionDuration: 1}, t0, 0, Gate{"ams", "ams-1"})
	const honest = 80
	tickets := make([]*Ticket, honest)
	admittedAt := make([]time.Time, honest)
	dropper, dropperTries := 0, 0
	end := t0.Add(10 * time.Minute)
	for step := 0; w.now.Before(end); step++ {
		// The honest arrive in the first 40 s and come back when told.
		for i := range tickets {
			arrives := t0.Add(time.Duration(i) * 500 * time.Millisecond) // over 40 s
			t := tickets[i]
			switch {
			case !admittedAt[i].IsZero(), w.now.Before(arrives):
				continue
			case t != nil && w.now.Before(t.LastCheckIn().Add(time.Duration(t.RefreshIntervalSeconds)*time.Second)):
				continue
			}
			if d := w.request("ams-1", &tickets[i]); d.Outcome == Admit {
				admittedAt[i] = w.now
			}
		}
		// From minute 2, when the room queues, the dropper: no cookie,
		// ever, 10 requests a second.
		if !w.now.Before(t0.Add(2 * time.Minute)) {
			if w.room.Snapshot.Status != StatusQueueing {
				t.Fatalf("at %s the room does not queue: %s", w.now.Sub(t0), w.room.Snapshot)
			}
			var none *Ticket
			dropperTries++
			if d := w.request("ams-1", &none); d.Outcome == Admit {
				dropper++
			}
		}
		if w.now.Sub(t0)%time.Minute == 30*time.Second && w.now.After(t0.Add(2*time.Minute)) {
			// Half a minute into a minute the dropper has been at it for
			// (at least) all of the last: the snapshot counts at most the
			// honest visitors still waiting.
			waiting := 0
			for i := range tickets {
				if admittedAt[i].IsZero() || !admittedAt[i].Before(w.room.Snapshot.Minute.Add(-time.Minute)) {
					waiting++
				}
			}
			if s := w.room.Snapshot; s.CurrentlyWaiting > waiting {
				t.Errorf("at %s the room counts %d waiting, but only %d honest visitors were (%d cookieless requests so far)",
					w.now.Sub(t0), s.CurrentlyWaiting, waiting, dropperTries)
			}
		}
		w.step(100 * time.Millisecond)
	}
	honestIn := 0
	for _, a := range admittedAt {
		if !a.IsZero() {
			honestIn++
		}
	}
	// Each honest visitor gets in at most once over the run (and most do):
	// the dropper, no more often than one of them.
	if dropper > 1 || honestIn < 40 {
		t.Fatalf("the cookie dropper got in %d times in %d requests; %d of %d honest visitors got in", dropper, dropperTries, honestIn, honest)
	}
	t.Logf("dropper: %d admissions in %d requests; honest: %d of %d admitted", dropper, dropperTries, honestIn, honest)
}
