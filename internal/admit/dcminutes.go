package admit

import (
	"cmp"
	"slices"
	"time"
)

// RecentDataCenters is how many data centers a recent minute keeps by
// name, the busiest; the rest are summed as OtherDataCenters. It bounds
// what the last hour adds to a room's state: 60 minutes of at most
// RecentDataCenters+1 entries of a short name and three counts (under 50
// KB at the longest names), and Trim sheds it with the recent minutes.
const RecentDataCenters = 5

// OtherDataCenters names the sum of the data centers beyond the busiest.
const OtherDataCenters = "others"

// DataCenterMinute is what one data center's gates reported of a minute:
// the visitors admitted in it, those waiting at its end (net of those who
// left the queue), and the distinct sessions seen.
type DataCenterMinute struct {
	DataCenter string `json:"dataCenter"`
	Admitted   int    `json:"admitted"`
	Queued     int    `json:"queued"`
	Active     int    `json:"active"`
}

// DataCenterMinutes sums minute m's open reports by data center: the
// RecentDataCenters busiest (by active sessions, then admitted, then name)
// and OtherDataCenters for the rest; nil once m is closed (its reports are
// summed for the whole room only).
func (l *Ledger) DataCenterMinutes(m time.Time) []DataCenterMinute {
	var all []DataCenterMinute
	for _, r := range l.Open {
		if !r.Minute.Equal(m) {
			continue
		}
		// Open reports are sorted by data center, then gate.
		if n := len(all); n == 0 || all[n-1].DataCenter != r.DataCenter {
			all = append(all, DataCenterMinute{DataCenter: r.DataCenter})
		}
		dc := &all[len(all)-1]
		dc.Admitted += r.Admitted
		dc.Active += r.Seen
		for _, q := range r.Queued {
			dc.Queued += q.Count
		}
	}
	for i := range all {
		all[i].Queued = max(all[i].Queued, 0)
	}
	slices.SortStableFunc(all, func(a, b DataCenterMinute) int {
		return cmp.Or(cmp.Compare(b.Active, a.Active), cmp.Compare(b.Admitted, a.Admitted), cmp.Compare(a.DataCenter, b.DataCenter))
	})
	if len(all) <= RecentDataCenters+1 {
		return all
	}
	others := DataCenterMinute{DataCenter: OtherDataCenters}
	for _, dc := range all[RecentDataCenters:] {
		others.Admitted += dc.Admitted
		others.Queued += dc.Queued
		others.Active += dc.Active
	}
	return append(all[:RecentDataCenters:RecentDataCenters], others)
}
