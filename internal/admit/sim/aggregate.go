package sim

import (
	"fmt"
	"slices"
	"time"

	"github.com/edgeflow/edgeflow/internal/admit"
)

// dcMinute is what a data center's gates wrote for one minute: the newest
// report of each gate, as they keep it in their data center's Redis.
type dcMinute struct {
	dataCenter string
	minute     time.Time
	reports    []admit.Report // by gate
}

// store keeps a gate's report in its data center's store.
func (w *world) store(rep admit.Report) {
	for i := range w.dcStore {
		d := &w.dcStore[i]
		if d.dataCenter != rep.DataCenter || !d.minute.Equal(rep.Minute) {
			continue
		}
		if j := slices.IndexFunc(d.reports, func(r admit.Report) bool { return r.Gate == rep.Gate }); j >= 0 {
			d.reports[j] = rep
		} else {
			d.reports = append(d.reports, rep)
		}
		return
	}
	w.dcStore = append(w.dcStore, dcMinute{dataCenter: rep.DataCenter, minute: rep.Minute, reports: []admit.Report{rep}})
}

// sendAggregates sends, once a minute has ended, each data center's sum of
// its gates' reports of it to the room (the gate's Aggregator does the
// same from Redis). The simulator's gates count every decision when it is
// made, so the minute's reports are all in at its first flush after it.
func (w *world) sendAggregates(at time.Duration) {
	if at%time.Minute != 0 {
		return
	}
	length := w.room.MinuteLength()
	ended := admit.MinuteOf(w.now, length).Add(-length)
	for _, d := range w.dcStore {
		if !d.minute.Equal(ended) {
			continue
		}
		var prev []admit.Report
		for _, p := range w.dcStore {
			if p.dataCenter == d.dataCenter && p.minute.Equal(ended.Add(-length)) {
				prev = p.reports
			}
		}
		rep, ok := admit.Aggregate(w.cfg.Room.Name, d.dataCenter, d.minute, prev, d.reports, true)
		if !ok {
			continue
		}
		if err := w.room.AddReport(rep, w.now); err != nil {
			w.err = fmt.Errorf("data center %s: report refused: %w", d.dataCenter, err)
			return
		}
		w.countReport(at)
	}
	w.dcStore = slices.DeleteFunc(w.dcStore, func(d dcMinute) bool { return d.minute.Before(ended.Add(-length)) })
}
