package migrate

import (
	"math/rand/v2"
	"testing"
)

func TestCursor(t *testing.T) {
	var c Cursor
	if !c.Accept(0, "t1", false) || c.Seq != 1 || c.Token != "t1" || c.Done {
		t.Fatalf("first page: %+v", c)
	}
	// A retried listing of page 0 answering again is a duplicate.
	if c.Accept(0, "t1", false) || c.Seq != 1 {
		t.Fatalf("duplicate page 0 accepted: %+v", c)
	}
	// An answer for a page not yet asked is stale too.
	if c.Accept(2, "t3", false) {
		t.Fatal("page 2 accepted before page 1")
	}
	if !c.Accept(1, "", false) || !c.Done {
		t.Fatalf("an empty token ends the listing: %+v", c)
	}
	if c.Accept(2, "x", false) {
		t.Fatal("a page after the end was accepted")
	}
	var d Cursor
	d.Accept(0, "more", true)
	if !d.Done {
		t.Fatal("last=true did not end the listing")
	}
}

func TestPagesBoundedAndExact(t *testing.T) {
	var p Pages
	const total = 5000
	const window = 16
	rng := rand.New(rand.NewPCG(1, 2))
	var inFlight []int
	done := 0
	maxDone := 0
	for done < total {
		for p.Scheduled < total && p.InFlight() < window && p.Span() < 4*window {
			seq := p.Scheduled
			if err := p.Schedule(seq); err != nil {
				t.Fatal(err)
			}
			inFlight = append(inFlight, seq)
		}
		// Finish a random in-flight page; sometimes report it twice.
		i := rng.IntN(len(inFlight))
		seq := inFlight[i]
		inFlight = append(inFlight[:i], inFlight[i+1:]...)
		if !p.MarkDone(seq) {
			t.Fatalf("page %d: first report refused", seq)
		}
		done++
		if rng.IntN(4) == 0 && p.MarkDone(seq) {
			t.Fatalf("page %d: duplicate report counted", seq)
		}
		if len(p.Done) > maxDone {
			maxDone = len(p.Done)
		}
		if p.InFlight() != len(inFlight) {
			t.Fatalf("InFlight %d, want %d", p.InFlight(), len(inFlight))
		}
	}
	if !p.AllDone() || p.Low != total || len(p.Done) != 0 {
		t.Fatalf("end state %+v", p)
	}
	if maxDone > 4*window {
		t.Fatalf("Done held %d pages with %d in flight: memory is not bounded by the span", maxDone, window)
	}
	if p.MarkDone(total) || p.MarkDone(-1) {
		t.Fatal("a page never scheduled was counted")
	}
}

func TestPagesOutstanding(t *testing.T) {
	var p Pages
	for i := range 6 {
		_ = p.Schedule(i)
	}
	p.MarkDone(0)
	p.MarkDone(2)
	p.MarkDone(5)
	got := p.Outstanding()
	want := []int{1, 3, 4}
	if len(got) != len(want) {
		t.Fatalf("Outstanding %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("Outstanding %v, want %v", got, want)
		}
	}
	if err := p.Schedule(9); err == nil {
		t.Fatal("out-of-order schedule accepted")
	}
}
