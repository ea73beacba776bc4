package admit

import (
	"testing"
	"time"
)

// A minute is final once it has ended and its last decision is counted;
// a decision begun before the minute ended holds it open until then.
func TestTallyFinalOnlyOnceDecisionsAreCounted(t *testing.T) {
	const length = 12 * time.Second
	clock := t0.Add(11 * time.Second)
	tl := NewTally("shop", Gate{"ams", "ams-1"}, 100)
	now, m := tl.Begin(func() time.Time { return clock }, length)
	if !m.Equal(t0) || !now.Equal(clock) {
		t.Fatalf("began at %s in minute %s", now, m)
	}
	// The minute ends while the decision runs: not final yet.
	if tl.Finish(t0.Add(length)) {
		t.Fatal("a minute with a decision still running was finished")
	}
	tl.End(m, Effect{Minute: m, NewVisitor: true, Admitted: true, Seen: true, Pool: PoolNew, Scope: Anywhere})
	if !tl.Finish(t0.Add(length)) {
		t.Fatal("the minute was not finished once its decision was counted")
	}
	reps := tl.Pending()
	if len(reps) != 1 || !reps[0].Final || reps[0].Admitted != 1 || reps[0].Incarnation != 100 || reps[0].Leaving {
		t.Fatalf("reports %+v", reps)
	}
	if tl.Finish(t0.Add(length)) {
		t.Fatal("a final minute was finished twice")
	}
	tl.Heartbeat(t0.Add(length))
	tl.Leave()
	reps = tl.Pending()
	if len(reps) != 2 || !reps[1].Final || !reps[1].Leaving {
		t.Fatalf("reports on leaving %+v", reps)
	}
}

// The room's view: a minute is final when every gate that reported it, and
// every gate that reported the minute before without leaving, said so.
func TestLedgerFinal(t *testing.T) {
	const length = 12 * time.Second
	prev, m := t0, t0.Add(length)
	rep := func(gate string, minute time.Time, final, leaving bool) Report {
		return Report{Room: "shop", DataCenter: "ams", Gate: gate, Minute: minute, Seq: 1, Final: final, Leaving: leaving}
	}
	var l Ledger
	l.Add(rep("a", prev, true, false))
	l.Add(rep("b", prev, true, true)) // b left
	l.Add(rep("a", m, false, false))
	if l.Final(prev, m) {
		t.Fatal("final with a's report of the minute not final")
	}
	l.Add(Report{Room: "shop", DataCenter: "ams", Gate: "a", Minute: m, Seq: 2, Final: true})
	if !l.Final(prev, m) {
		t.Fatal("not final once a's report is, with b gone")
	}
	l.Add(rep("c", prev, true, false)) // c reported the minute before, nothing since
	if l.Final(prev, m) {
		t.Fatal("final without c, which reported the minute before and did not leave")
	}
}

// A gate restarted under its name reports as a new incarnation: the room
// adds its counts of a minute to the earlier process's instead of keeping
// only one of them, whichever numbers its reports higher.
func TestRestartedGateCountsAddUp(t *testing.T) {
	before := NewTally("shop", Gate{"ams", "ams-1"}, 1000)
	after := NewTally("shop", Gate{"ams", "ams-1"}, 2000)
	admit := func(tl *Tally, n int) {
		for range n {
			tl.Add(Effect{Minute: t0, NewVisitor: true, Admitted: true, Seen: true, Pool: PoolNew, Scope: Anywhere})
		}
	}
	var l Ledger
	admit(before, 5)
	for _, r := range before.Pending() {
		l.Add(r)
	}
	admit(after, 3) // the restarted process, same minute
	for _, r := range after.Pending() {
		l.Add(r)
	}
	if got := l.Totals(t0); got.Admitted != 8 || got.Reports != 2 {
		t.Fatalf("the minute's totals %+v, want 8 admitted from 2 reports", got)
	}
	if n := l.Sessions(t0, t0.Add(time.Minute)); n != 8 {
		t.Fatalf("%d sessions, want 8", n)
	}
}
