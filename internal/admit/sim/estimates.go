package sim

import (
	"slices"
	"time"

	"github.com/edgeflow/edgeflow/internal/admit"
)

// cohort is the visitors waiting when a random queue's snapshot reached the
// gates, with what that snapshot predicted for them.
type cohort struct {
	at          time.Duration
	estimate    admit.Estimate
	letIn       float64
	roomWaiting int
	members     []int32
}

// Cohort compares one snapshot's predicted percentile waits of a random
// queue with the waits its waiting visitors then had, in minutes.
type Cohort struct {
	Minute           int        `json:"minute"` // since the start
	LetInPerMinute   float64    `json:"let_in_per_minute"`
	CurrentlyWaiting int        `json:"currently_waiting"` // the room's count
	Waiting          int        `json:"waiting"`           // ground truth, at the snapshot's arrival
	Admitted         int        `json:"admitted"`          // of them, later admitted (the others gave up or the run ended)
	Predicted        [3]float64 `json:"predicted_p25_p50_p75"`
	Observed         [3]float64 `json:"observed_p25_p50_p75"`
}

// observe notes the cohort of a random queue's snapshot as the gates get it.
func (w *world) observe(snap *admit.Snapshot, at time.Duration) {
	if snap.Settings.QueueingMethod != admit.Random || snap.CurrentlyWaiting == 0 || !snap.Estimate.Known {
		return
	}
	c := cohort{at: at, estimate: snap.Estimate, letIn: snap.LetInPerMinute, roomWaiting: snap.CurrentlyWaiting}
	for _, v := range w.visitors {
		if v.waitingAt(at) {
			c.members = append(c.members, v.id)
		}
	}
	w.cohorts = append(w.cohorts, c)
}

// cohortResults turns the cohorts into predicted and observed percentiles:
// the observed wait of a member is from the snapshot's arrival to its
// admission.
func (w *world) cohortResults() []Cohort {
	out := make([]Cohort, 0, len(w.cohorts))
	for _, c := range w.cohorts {
		r := Cohort{Minute: int(c.at / time.Minute), LetInPerMinute: round2(c.letIn), CurrentlyWaiting: c.roomWaiting, Waiting: len(c.members),
			Predicted: [3]float64{round2(c.estimate.P25Minutes), round2(c.estimate.P50Minutes), round2(c.estimate.P75Minutes)}}
		var waits []float64
		for _, id := range c.members {
			if v := w.visitors[id]; v.admitAt >= 0 {
				waits = append(waits, (v.admitAt - c.at).Minutes())
			}
		}
		r.Admitted = len(waits)
		slices.Sort(waits)
		for i, p := range []float64{0.25, 0.5, 0.75} {
			r.Observed[i] = round2(Percentile(waits, p))
		}
		out = append(out, r)
	}
	return out
}

// Percentile is the p-quantile of sorted values by linear interpolation
// (0 for none).
func Percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	x := p * float64(len(sorted)-1)
	i := int(x)
	if i >= len(sorted)-1 {
		return sorted[len(sorted)-1]
	}
	return sorted[i] + (x-float64(i))*(sorted[i+1]-sorted[i])
}
