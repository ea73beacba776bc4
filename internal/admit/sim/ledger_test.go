package sim

import (
	"testing"
	"time"
)

// With the sub-minute session ledger, a room bound by total_active_users
// admits in the place of sessions that end mid-minute, within the second,
// and still never overshoots: more admitted in the minutes that queue, at
// the same limits.
func TestSessionLedgerAdmitsAsSessionsEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("8 runs of an hour each; make test runs it")
	}
	bound := DefaultRoom()
	bound.TotalActiveUsers = 1200
	var cfgs []Config
	for _, pn := range Profiles {
		p := profile(t, pn)
		for _, ledger := range []bool{false, true} {
			cfgs = append(cfgs, Config{Seed: 1, Room: bound, Strategy: StrategyCounters, NoSessionLedger: !ledger,
				Profile: p, Behaviour: DefaultBehaviour(), Duration: p.Length(), Drain: 2 * time.Minute})
		}
	}
	rs, err := RunAll(t.Context(), cfgs)
	if err != nil {
		t.Fatal(err)
	}
	gained := false
	for i := 0; i < len(rs); i += 2 {
		without, with := rs[i], rs[i+1]
		a, b := admittedWhileQueueing(without), admittedWhileQueueing(with)
		t.Logf("%s: admitted in queueing minutes %d without the ledger, %d with; queueing starts at %v%%, %v%%",
			with.Profile, a, b, without.QueueingStartPct, with.QueueingStartPct)
		if with.OvershootTotalPct != 0 || with.OvershootNewPct != 0 {
			t.Errorf("%s with the ledger: overshoot %v%% of total_active_users, %v%% of new_users_per_minute, want none",
				with.Profile, with.OvershootTotalPct, with.OvershootNewPct)
		}
		for _, m := range with.Minutes[:with.CompleteMinutes] {
			if m.QueuedForLimits > 0 && m.Admitted > m.SlotsAllowed {
				gained = true // admitted beyond what the minute's start allowed
			}
		}
	}
	if !gained {
		t.Error("with the ledger no queueing minute admitted beyond the slots its start allowed: no session's place was freed mid-minute")
	}
}

func admittedWhileQueueing(r *Result) int {
	n := 0
	for _, m := range r.Minutes[:r.CompleteMinutes] {
		if m.QueuedForLimits > 0 {
			n += m.Admitted
		}
	}
	return n
}
