package admit

import (
	"slices"
	"time"
)

// The room's record of its recent minutes (Room.Recent), for live views:
// each minute recorded when the next one's snapshot is published, settled
// when the ledger closes it.

// MinuteSummary is one closed minute, for live views.
type MinuteSummary struct {
	Minute         time.Time `json:"minute"`
	ActiveUsers    int       `json:"activeUsers"`
	SlotsAvailable int       `json:"slotsAvailable"`
	Admitted       int       `json:"admitted"`
	Waiting        int       `json:"waiting"`
	Status         Status    `json:"status"`
	// Unreported of Admitted were known only to the shared counters (a
	// gate died before reporting them).
	Unreported int `json:"unreported,omitempty"`
	// DataCenters are the minute's counts by data center, the busiest by
	// name (see Ledger.DataCenterMinutes); empty in minutes recorded before
	// rooms kept them, or whose reports were closed early (Trim).
	DataCenters []DataCenterMinute `json:"dataCenters,omitempty"`
}

// settleRecent brings the recent minutes the ledger is about to close
// (those before `before`) up to their last reports. A minute is recorded
// when the next one's snapshot is published, but its reports count until
// the minute after that: a data center's aggregate comes late when the
// gate holding its lease dies and another takes the lease over after the
// room stopped waiting for final reports (FinalWait), and the record of
// that minute said 0 admissions where the gates had made 12.
func (r *Room) settleRecent(before time.Time) {
	for i := len(r.Recent) - 1; i >= 0; i-- {
		m := &r.Recent[i]
		if m.Minute.Before(r.Ledger.ClosedBefore) {
			return
		}
		if m.Minute.Before(before) {
			t := r.Ledger.Totals(m.Minute)
			m.Admitted, m.Unreported, m.DataCenters = t.Admitted, t.Unreported, r.Ledger.DataCenterMinutes(m.Minute)
		}
	}
}

func (r *Room) recordRecent(s *Snapshot) {
	t := r.Ledger.Totals(s.Minute)
	r.Recent = append(r.Recent, MinuteSummary{Minute: s.Minute, ActiveUsers: s.ActiveUsers, SlotsAvailable: s.SlotsAvailable,
		Admitted: t.Admitted, Unreported: t.Unreported, Waiting: s.CurrentlyWaiting, Status: s.Status,
		DataCenters: r.Ledger.DataCenterMinutes(s.Minute)})
	if len(r.Recent) > RecentMinutes {
		r.Recent = slices.Delete(r.Recent, 0, len(r.Recent)-RecentMinutes)
	}
}
