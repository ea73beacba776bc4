package admit

import (
	"fmt"
	"testing"
	"time"
)

// When Temporal itself was down (not only the room's workers), the gates'
// reports of the outage's minutes reach the room only after it is back and
// has published: its timer fires first. The room takes them over all the
// same: its record of every outage minute holds what the gates admitted in
// it, and every snapshot from its return on counts the outage's sessions
// as active. Before, the room closed those minutes as it came back and
// dropped their reports: the admissions of the outage were missing from
// its record (the admit-outage chaos suite: 30 of the minute the freeze
// began) and from its active users for session_duration.
//
// It holds for an outage of 30 minutes too (the figure): the room
// takes every outage minute the gates kept, however far back.
func TestFrozenTemporalOutageReachesTheRecord(t *testing.T) {
	for _, c := range []struct {
		minutes    int
		aggregated bool
	}{{4, false}, {4, true}, {30, false}, {30, true}} {
		aggregated := c.aggregated
		name := fmt.Sprintf("%d minutes, %s", c.minutes, map[bool]string{false: "gates' own reports", true: "data centers' aggregates"}[aggregated])
		t.Run(name, func(t *testing.T) {
			// Sessions of five minutes, not renewed, and room to spare in
			// total_active_users: the room's active users are exactly the
			// admissions of the five minutes before its snapshot's.
			s := Settings{Name: "shop", TotalActiveUsers: 300, NewUsersPerMinute: 12, SessionDuration: 5, DisableSessionRenewal: true,
				RefreshIntervalSeconds: 10, SnapshotMaxAgeSeconds: 3600}
			run := runOutageWith(t, s, outageOptions{minutes: c.minutes, aggregated: aggregated, frozen: true,
				// Early in its minute, after its snapshot: most of the
				// minute's admissions are made during the outage.
				beginsAt: 10 * time.Second})
			length := time.Minute
			first, back := MinuteOf(run.outageFrom, length), MinuteOf(run.outageTo, length)
			settled := MinuteOf(run.outageTo, length).Add(3 * length) // closed by the run's end
			inOutage := 0
			for m := first.Add(-length); m.Before(settled); m = m.Add(length) {
				if m.Before(back) {
					inOutage += run.admitted[m]
				}
				if got := run.room.Ledger.Totals(m).Admitted; got != run.admitted[m] {
					t.Errorf("minute %s: the room's ledger holds %d admissions, the gates made %d", m.Format("15:04"), got, run.admitted[m])
				}
			}
			if inOutage == 0 {
				t.Fatal("nobody was admitted in the outage's minutes: the test shows nothing")
			}
			for _, r := range run.room.Recent {
				if r.Minute.Before(settled) && r.Admitted != run.admitted[r.Minute] {
					t.Errorf("the room's record of minute %s says %d admitted, the gates made %d", r.Minute.Format("15:04"), r.Admitted, run.admitted[r.Minute])
				}
			}
			if len(run.published) < 3 {
				t.Fatalf("%d snapshots after the room came back", len(run.published))
			}
			for _, snap := range run.published {
				want := 0
				for m := snap.Minute.Add(-time.Duration(s.SessionDuration) * length); m.Before(snap.Minute); m = m.Add(length) {
					want += run.admitted[m]
				}
				if snap.ActiveUsers != want {
					t.Errorf("snapshot of %s (published %s): %d active users, the gates admitted %d in the %d minutes before",
						snap.Minute.Format("15:04"), snap.PublishedAt.Format("15:04:05"), snap.ActiveUsers, want, s.SessionDuration)
				}
			}
		})
	}
}
