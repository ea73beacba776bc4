package migrate

import (
	"fmt"
	"slices"
)

// Cursor is where the listing of a source stands: the sequence number the
// next page gets and the continuation token that lists it. It lives in the
// job's workflow state, so a listing that is retried, or answered twice,
// is recognised by its number and never scheduled twice.
type Cursor struct {
	Seq   int    `json:"seq"`
	Token string `json:"token,omitempty"`
	Done  bool   `json:"done,omitempty"`
}

// Accept advances the cursor past page seq, which the listing answered with
// the token of the next page (last: there is none). It returns false, and
// changes nothing, for any page but the one expected: a duplicate or stale
// answer.
func (c *Cursor) Accept(seq int, next string, last bool) bool {
	if c.Done || seq != c.Seq {
		return false
	}
	c.Seq++
	c.Token = next
	c.Done = last || next == ""
	return true
}

// Pages tracks which of the pages scheduled so far have finished: every page
// below Low is done, and Done holds the finished pages at or above it. Its
// size is bounded by Span, not by the job, as long as the scheduler keeps
// Span below a limit: a slow page then holds back the pages after it
// instead of growing the state.
type Pages struct {
	Scheduled int   `json:"scheduled"`
	Low       int   `json:"low"`
	Done      []int `json:"done,omitempty"`
}

// Schedule records that page seq was scheduled; pages are scheduled in order.
func (p *Pages) Schedule(seq int) error {
	if seq != p.Scheduled {
		return fmt.Errorf("page %d scheduled out of order: %d pages scheduled so far", seq, p.Scheduled)
	}
	p.Scheduled++
	return nil
}

// IsDone reports whether page seq has finished.
func (p *Pages) IsDone(seq int) bool {
	if seq < p.Low {
		return true
	}
	_, found := slices.BinarySearch(p.Done, seq)
	return found
}

// MarkDone records that page seq finished. It returns false for a page that
// was never scheduled or has already finished (a duplicate report), so a
// report is counted at most once.
func (p *Pages) MarkDone(seq int) bool {
	if seq < 0 || seq >= p.Scheduled || p.IsDone(seq) {
		return false
	}
	i, _ := slices.BinarySearch(p.Done, seq)
	p.Done = slices.Insert(p.Done, i, seq)
	for len(p.Done) > 0 && p.Done[0] == p.Low {
		p.Done = p.Done[1:]
		p.Low++
	}
	p.Done = slices.Clip(p.Done)
	return true
}

// InFlight is the number of scheduled pages that have not finished.
func (p *Pages) InFlight() int { return p.Scheduled - p.Low - len(p.Done) }

// Span is the distance from the oldest unfinished page to the next one to
// schedule, which bounds len(Done).
func (p *Pages) Span() int { return p.Scheduled - p.Low }

// AllDone reports whether every scheduled page has finished.
func (p *Pages) AllDone() bool { return p.Low == p.Scheduled }

// Outstanding lists the scheduled pages that have not finished, in order.
func (p *Pages) Outstanding() []int {
	out := make([]int, 0, p.InFlight())
	for s := p.Low; s < p.Scheduled; s++ {
		if !p.IsDone(s) {
			out = append(out, s)
		}
	}
	return out
}
