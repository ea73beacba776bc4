package admit

import (
	"context"
	"slices"
	"testing"
	"time"
)

// PacedLimit releases slot k of n once in the k-th n-th of the minute, at
// a moment the seed decides: never more than the limit, never taking a
// slot back, all of them by the minute's end.
func TestPacedLimit(t *testing.T) {
	for _, c := range []struct {
		limit   int
		elapsed time.Duration
		want    int
	}{{60, -time.Second, 0}, {60, time.Minute, 60}, {60, 2 * time.Minute, 60}, {0, time.Second, 0}, {-3, time.Second, 0}} {
		if got := PacedLimit(c.limit, c.elapsed, time.Minute, 1); got != c.want {
			t.Errorf("PacedLimit(%d, %s) = %d, want %d", c.limit, c.elapsed, got, c.want)
		}
	}
	for _, limit := range []int{1, 7, 60, 2147483647} {
		stripe := time.Minute / time.Duration(limit)
		for seed := range uint64(20) {
			last := 0
			for e := time.Duration(0); e < time.Minute; e += time.Minute / 997 {
				got := PacedLimit(limit, e, time.Minute, seed)
				k := int(int64(e) * int64(limit) / int64(time.Minute)) // e's stripe, for small limits
				if limit > 1000 {
					k = int(float64(e) / float64(time.Minute) * float64(limit))
				}
				if got < last || got > limit || (limit < 1000 && (got < k || got > k+1)) || (limit > 1000 && (got < k-2 || got > k+2)) {
					t.Fatalf("limit %d seed %d: %d at %s (stripe %s, before %d)", limit, seed, got, e, stripe, last)
				}
				last = got
			}
		}
	}
}

// In a random queue with visitors waiting, the gates release a minute's
// slots at moments drawn anew every minute, spread over the minute: a slot
// is not there for whoever checks in first after the minute starts, nor at
// the same offsets every minute.
func TestRandomReleaseMoments(t *testing.T) {
	snap := roomSnapshot(t, func(s *Settings) { s.QueueingMethod = Random; s.NewUsersPerMinute = 6 })
	snap.PacedRelease = true
	if p := snap.Pool(time.Time{}); p == nil || p.Slots != 6 {
		t.Fatalf("pools %+v", snap.Pools)
	}
	var firsts []time.Duration // when each minute's first slot could be taken
	takes := 0
	for m := range 60 {
		s := *snap
		s.Minute = t0.Add(time.Duration(m) * time.Minute)
		s.PublishedAt = s.Minute
		strategy := SharedCounters{NewMemoryCounter(func() time.Time { return s.Minute })}
		first := time.Duration(-1)
		for e := time.Duration(0); e < time.Minute; e += 250 * time.Millisecond {
			_, ok, err := strategy.TakeSlot(context.Background(), SlotRequest{Snapshot: &s, Now: s.Minute.Add(e), Gate: Gate{"ams", "ams-1"}, Pool: s.Pool(time.Time{})})
			if err != nil {
				t.Fatal(err)
			}
			if ok {
				takes++
				if first < 0 {
					first = e
				}
				// Probed every 250 ms: taken within 250 ms of a moment in its stripe.
				if slot := time.Duration(takes - 1 - 6*m); e < slot*10*time.Second || e >= (slot+1)*10*time.Second+250*time.Millisecond {
					t.Fatalf("minute %d: slot %d taken at %s, outside its sixth of the minute", m, slot, e)
				}
			}
		}
		firsts = append(firsts, first)
	}
	if takes != 60*6 {
		t.Fatalf("%d slots taken over 60 minutes of 6", takes)
	}
	slices.Sort(firsts)
	// Over 60 minutes the first release falls all over its 10 s stripe.
	if firsts[0] > 2*time.Second || firsts[len(firsts)-1] < 8*time.Second {
		t.Errorf("first releases between %s and %s, want spread over 0-10 s: %v", firsts[0], firsts[len(firsts)-1], firsts)
	}
}

// A gate still on the last minute's snapshot of a random queue spends its
// share of the new minute at that minute's release moments too: in the
// seconds before the new snapshot reaches it, whoever checks in first gets
// no more than those moments release.
func TestRandomReleaseOnStaleSnapshot(t *testing.T) {
	snap := roomSnapshot(t, func(s *Settings) { s.QueueingMethod = Random; s.NewUsersPerMinute = 60 })
	snap.PacedRelease = true
	strategy := SharedCounters{NewMemoryCounter(func() time.Time { return t0 })}
	next := t0.Add(time.Minute)
	took := 0
	for _, at := range []time.Duration{time.Second, 3 * time.Second, 5 * time.Second} {
		for range 20 {
			_, ok, err := strategy.TakeSlot(context.Background(), SlotRequest{Snapshot: snap, Now: next.Add(at), Gate: Gate{"ams", "ams-1"}, Pool: snap.Pool(time.Time{})})
			if err != nil {
				t.Fatal(err)
			}
			if ok {
				took++
			}
		}
		// 60 slots a minute: by at, the slots of the seconds before it, and
		// maybe the one of the second under way (not the stale quarter, 15).
		if whole := int(at / time.Second); took < whole || took > whole+1 {
			t.Fatalf("%s into the next minute: %d slots taken, want %d or %d", at, took, whole, whole+1)
		}
	}
}
