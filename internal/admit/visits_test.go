package admit

import (
	"strconv"
	"testing"
	"time"
)

func seenIn(minute, from time.Time) Effect { return Effect{Minute: minute, Seen: true, Renewed: from} }

// A visitor's session moves into a minute once, from the latest minute
// the gate counted it in, whatever minute its cookie names; admissions and
// effects without a move pass untouched.
func TestVisitsCountAMoveOncePerMinute(t *testing.T) {
	var v Visits
	keep := 7 * time.Minute
	m := func(i int) time.Time { return t0.Add(time.Duration(i) * time.Minute) }
	if e := v.Effect(seenIn(m(1), m(0)), "a", keep, false); !e.Seen || !e.Renewed.Equal(m(0)) {
		t.Fatalf("first request of minute 1: %+v", e)
	}
	for range 5 {
		if e := v.Effect(seenIn(m(1), m(0)), "a", keep, false); e.Seen || !e.Renewed.IsZero() {
			t.Fatalf("a replay in minute 1 counted: %+v", e)
		}
	}
	// Minute 3, with the cookie of minute 0 again: moved from minute 1,
	// where the visitor is counted, not from 0 (counted in 1 since).
	if e := v.Effect(seenIn(m(3), m(0)), "a", keep, false); !e.Seen || !e.Renewed.Equal(m(1)) {
		t.Fatalf("an old cookie in minute 3: %+v, want a move from minute 1", e)
	}
	if e := v.Effect(seenIn(m(3), m(2)), "b", keep, false); !e.Seen || !e.Renewed.Equal(m(2)) {
		t.Fatalf("another visitor: %+v", e)
	}
	adm := Effect{Minute: m(3), Admitted: true, Seen: true}
	if e := v.Effect(adm, "b", keep, false); e != adm {
		t.Fatalf("an admission changed: %+v", e)
	}
	// Sessions without renewal: counted once a minute, no move.
	if e := v.Effect(seenIn(m(4), time.Time{}), "c", keep, false); !e.Seen || !e.Renewed.IsZero() {
		t.Fatalf("without renewal: %+v", e)
	}
	if e := v.Effect(seenIn(m(4), time.Time{}), "c", keep, false); e.Seen {
		t.Fatalf("without renewal, again: %+v", e)
	}
}

// With a shared store, first sightings are not counted at the request:
// they wait for Drain, with the minute to move from.
func TestVisitsDeferred(t *testing.T) {
	var v Visits
	m1 := t0.Add(time.Minute)
	for range 3 {
		if e := v.Effect(seenIn(m1, t0), "a", 7*time.Minute, true); e.Seen || !e.Renewed.IsZero() {
			t.Fatalf("a deferred sighting was counted at the request: %+v", e)
		}
	}
	if !v.Pending() {
		t.Fatal("nothing pending")
	}
	got := v.Drain()
	if len(got) != 1 || got[0] != (Sighting{Visitor: "a", Minute: m1, From: t0}) {
		t.Fatalf("drained %+v, want the one sighting", got)
	}
	if e := got[0].Effect(); e != seenIn(m1, t0) {
		t.Fatalf("its effect %+v", e)
	}
	if v.Pending() || len(v.Drain()) != 0 {
		t.Fatal("drained twice")
	}
}

// Memory is bounded: visitors are forgotten once no cookie can name their
// minute, and past the cap a visitor not remembered is counted at each
// request, as before de-duplication, and the overflow counted.
func TestVisitsBounded(t *testing.T) {
	v := Visits{Cap: visitShards} // one per shard
	m1 := t0.Add(time.Minute)
	counted := 0
	for i := range 10 * visitShards {
		if v.Effect(seenIn(m1, t0), "v"+strconv.Itoa(i), 3*time.Minute, false).Seen {
			counted++
		}
	}
	if counted != 10*visitShards || v.Overflow() == 0 {
		t.Fatalf("past the cap: %d counted, overflow %d", counted, v.Overflow())
	}
	remembered := 0
	for i := range v.shards {
		remembered += len(v.shards[i].last)
	}
	if remembered > visitShards {
		t.Fatalf("%d visitors remembered, cap %d", remembered, visitShards)
	}
	// Four minutes later (keep is 3), a request in every shard sweeps it.
	m5 := t0.Add(5 * time.Minute)
	for i := range 10 * visitShards {
		v.Effect(seenIn(m5, t0.Add(4*time.Minute)), "w"+strconv.Itoa(i), 3*time.Minute, false)
	}
	for i := range v.shards {
		for k, m := range v.shards[i].last {
			if m < m5.Add(-3*time.Minute).UnixMilli() {
				t.Fatalf("visitor %s of %s still remembered", k, fromMillis(m))
			}
		}
	}
}

// Once: the first time in a minute only, again in the next.
func TestVisitsOnce(t *testing.T) {
	var v Visits
	m1 := t0.Add(time.Minute)
	if !v.Once(t0, "q", 2*time.Minute) || v.Once(t0, "q", 2*time.Minute) {
		t.Fatal("minute 0: want the first time only")
	}
	if !v.Once(m1, "q", 2*time.Minute) || v.Once(m1, "q", 2*time.Minute) || !v.Once(m1, "r", 2*time.Minute) {
		t.Fatal("minute 1: want each visitor's first time only")
	}
}
