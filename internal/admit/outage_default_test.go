package admit

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// defaultRoom is a room at its defaults (snapshot_max_age_seconds 120,
// sessions of five minutes renewed, FIFO, 60-second minutes) with the
// limits `make run`'s trial had: 30 new users a minute.
func defaultRoom() Settings {
	return Settings{Name: "shop", TotalActiveUsers: 200, NewUsersPerMinute: 30}.WithDefaults()
}

// With the room's defaults, gates on the shared counters keep admitting new
// visitors through a 30-minute outage of the room (its workers or Temporal
// down), within both limits, from the sessions the ledger shows. Before, the
// snapshot went stale about two minutes in and every new visitor was queued
// from then on (0 of the 895 allowed); and renewed sessions counted as
// running for ever, so the door closed once the outage's admissions filled
// total_active_users.
func TestDefaultRoomKeepsAdmittingThroughALongOutage(t *testing.T) {
	s := defaultRoom()
	// One new visitor a second: twice what the room admits.
	run := runOutageWith(t, s, outageOptions{minutes: 30, arriveEvery: time.Second, recordSessions: true})
	// Allowed: new_users_per_minute for the outage's length (each visitor
	// leaves once admitted: 30 a minute for five minutes leave
	// total_active_users room to spare).
	allowed := int(float64(s.NewUsersPerMinute) * run.outageTo.Sub(run.outageFrom).Minutes())
	share := float64(run.inOutage) / float64(allowed)
	t.Logf("admitted while the room was down: %d of %d allowed (%.1f%%); most alive at once %d", run.inOutage, allowed, 100*share, run.mostAlive)
	if share < 0.9 {
		t.Errorf("admitted %d of the %d allowed through a 30-minute outage (%.1f%%), want at least 90%%", run.inOutage, allowed, 100*share)
	}
	for m := MinuteOf(run.outageFrom, time.Minute).Add(3 * time.Minute); m.Before(MinuteOf(run.outageTo, time.Minute)); m = m.Add(time.Minute) {
		if run.admitted[m] < s.NewUsersPerMinute {
			t.Errorf("outage minute %s admitted %d, want new_users_per_minute %d", m.Format("15:04"), run.admitted[m], s.NewUsersPerMinute)
		}
	}
}

// When total_active_users binds (sessions renewed for as long as the ledger
// shows them), the outage admits into the places of the sessions that
// ended, never past the limit (runOutage checks every second).
func TestDefaultRoomOutageHoldsTotalActiveUsers(t *testing.T) {
	s := defaultRoom()
	s.TotalActiveUsers = 100 // 30 a minute for five minutes would be 150
	run := runOutageWith(t, s, outageOptions{minutes: 30, arriveEvery: time.Second, recordSessions: true})
	t.Logf("admitted while the room was down: %d; most alive at once %d", run.inOutage, run.mostAlive)
	// Sessions of five minutes, 100 at most: 20 places free a minute.
	late := MinuteOf(run.outageFrom, time.Minute).Add(10 * time.Minute)
	for m := late; m.Before(late.Add(10 * time.Minute)); m = m.Add(time.Minute) {
		if run.admitted[m] == 0 {
			t.Errorf("outage minute %s admitted nobody while sessions ended", m.Format("15:04"))
		}
	}
	if run.mostAlive < s.TotalActiveUsers*8/10 {
		t.Errorf("at most %d sessions at once through the outage, want near total_active_users %d", run.mostAlive, s.TotalActiveUsers)
	}
}

// Without shared counters (each gate on its own: no Redis, or Redis down) a
// gate keeps admitting in an outage within its own last share of the room's
// minute, never more a minute. Before, it admitted nobody new.
func TestEvenSplitOutageAdmitsItsLastShare(t *testing.T) {
	for _, renewed := range []bool{false, true} {
		t.Run(fmt.Sprintf("renewed=%t", renewed), func(t *testing.T) {
			s := defaultRoom()
			s.DisableSessionRenewal = !renewed
			var shared Counter
			own := map[string]*onOwn{}
			run := runOutageWith(t, s, outageOptions{minutes: 12, arriveEvery: time.Second,
				strategy: func(g Gate) Strategy {
					if shared == nil {
						shared = NewMemoryCounter(func() time.Time { return t0 })
					}
					// The shared counters until the minute before the
					// outage (a fresh room's first minutes name no gates,
					// so each gate's even share would be the whole room),
					// then each gate on its own.
					own[g.ID] = &onOwn{from: t0.Add(4 * time.Minute), shared: SharedCounters{shared},
						even: EvenSplit{Store: NewMemoryCounter(nil)}, perMinute: map[time.Time]int{}}
					return own[g.ID]
				}})
			t.Logf("admitted while the room was down: %d; most alive at once %d", run.inOutage, run.mostAlive)
			outage := MinuteOf(run.outageFrom, time.Minute).Add(3 * time.Minute)
			for m := outage; m.Before(MinuteOf(run.outageTo, time.Minute)); m = m.Add(time.Minute) {
				if run.admitted[m] == 0 && (!renewed || m.Before(outage.Add(2*time.Minute))) {
					t.Errorf("outage minute %s admitted nobody", m.Format("15:04"))
				}
			}
			for id, g := range own {
				for m, n := range g.perMinute {
					if !m.Before(outage) && n > g.share {
						t.Errorf("gate %s, minute %s: admitted %d, its last share %d", id, m.Format("15:04"), n, g.share)
					}
				}
			}
		})
	}
}

// onOwn is a gate's strategy that counts on the shared counters until
// from, and on its own (the even split) from then on, keeping count of
// what it admitted each minute and its last share.
type onOwn struct {
	from       time.Time
	shared     Strategy
	even       EvenSplit
	perMinute  map[time.Time]int
	share      int
	shareKnown bool
}

func (o *onOwn) Name() string { return "on-own" }

func (o *onOwn) TakeSlot(ctx context.Context, req SlotRequest) (string, bool, error) {
	if req.Now.Before(o.from) {
		return o.shared.TakeSlot(ctx, req)
	}
	if InOutage(req.Snapshot, req.Now) && !o.shareKnown {
		o.share, _ = EvenShare(req.Snapshot, req.Gate, false)
		o.shareKnown = true
	}
	sc, ok, err := o.even.TakeSlot(ctx, req)
	if ok && InOutage(req.Snapshot, req.Now) {
		o.perMinute[MinuteOf(req.Now, req.Snapshot.MinuteLength())]++
	}
	return sc, ok, err
}
