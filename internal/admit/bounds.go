package admit

import (
	"fmt"
	"slices"
	"time"
)

// A room's state crosses continue-as-new in one payload, which Temporal
// refuses above 2 MiB (and terminates the room). What a room keeps is
// bounded so that it always crosses: its pages (MaxPageBytes), its events
// (50), what a minute's reports hold (Ledger.AddBounded), and what Trim
// sheds when the input is measured too large.

// CheckPages refuses settings (nil: the room's) or a new event (nil: none)
// that would take the custom pages the room keeps, its own and all its
// events' together, past MaxPageBytes.
func (r *Room) CheckPages(s *Settings, e *Event) error {
	if s == nil {
		s = &r.Settings
	}
	total := len(s.CustomPageHTML)
	for _, ev := range r.Events {
		if ev.CustomPageHTML != nil {
			total += len(*ev.CustomPageHTML)
		}
	}
	if e != nil && e.CustomPageHTML != nil {
		total += len(*e.CustomPageHTML)
	}
	if total > MaxPageBytes {
		return &InvalidError{Problems: []*FieldError{{Field: "custom_page_html", Reason: fmt.Sprintf(
			"the room's pages, its own and its events' together, would hold %d bytes, at most %d", total, MaxPageBytes)}}}
	}
	return nil
}

// Trim sheds state a room can do without, step by step (0, 1, ...), to
// keep what crosses continue-as-new small; it reports whether step did
// anything. Step 0 forgets the slots taken in closed minutes before the
// previous snapshot's (only the allocation of the minutes since reads
// them) and all but the last 10 recent minutes; step 1 closes the minutes
// before the current snapshot's, whose reports have all been read into
// it (a later report of them is dropped and counted); step 2 forgets the
// recent minutes.
func (r *Room) Trim(step int) bool {
	switch step {
	case 0:
		for i := range r.Ledger.Closed {
			if r.Ledger.Closed[i].Minute.Before(r.PrevMinute) {
				r.Ledger.Closed[i].Taken = nil
			}
		}
		if len(r.Recent) > 10 {
			r.Recent = slices.Delete(r.Recent, 0, len(r.Recent)-10)
		}
	case 1:
		length := r.MinuteLength()
		r.Ledger.Close(r.Snapshot.Minute, r.Snapshot.Minute.Add(-time.Duration(ledgerMinutes)*length))
	case 2:
		r.Recent = nil
	default:
		return false
	}
	return true
}
