package sim

import (
	"time"

	"github.com/edgeflow/edgeflow/internal/admit"
)

// Result is what one run measured. Everything in it is a function of the
// run's Config: two runs of the same Config give equal Results.
type Result struct {
	Profile            string        `json:"profile"`
	Strategy           string        `json:"strategy"`
	Method             string        `json:"queueing_method"`
	Seed               uint64        `json:"seed"`
	DataCenters        int           `json:"data_centers"`
	GatesPerDataCenter int           `json:"gates_per_data_center"`
	PropagationDelay   time.Duration `json:"-"`
	TotalActiveUsers   int           `json:"total_active_users"`
	NewUsersPerMinute  int           `json:"new_users_per_minute"`
	SessionDuration    int           `json:"session_duration"`

	// Where every visitor ended up: Visitors = Admitted + Abandoned +
	// StillWaiting (admitted ones browse or have left).
	Visitors     int `json:"visitors"`
	Admitted     int `json:"admitted"`
	Abandoned    int `json:"abandoned"`
	StillWaiting int `json:"still_waiting"`
	Decisions    int `json:"decisions"`

	// QueueingStartPct is the room's utilization when the first visitor
	// was queued for lack of a slot (100 if nobody was), FirstQueueAt when.
	QueueingStartPct float64       `json:"queueing_start_pct"`
	FirstQueueAt     time.Duration `json:"-"`
	// QueueingMinutes had someone queued for lack of a slot; of those,
	// BelowLimitsMinutes admitted less than BelowLimitsShare of what the
	// limits allowed that minute (min(total_active_users - active at its
	// start, new_users_per_minute)). Only whole minutes count.
	QueueingMinutes    int     `json:"queueing_minutes"`
	BelowLimitsMinutes int     `json:"queueing_below_limits_minutes"`
	BelowLimitsPct     float64 `json:"queueing_below_limits_minutes_pct"`
	// Peaks and overshoots, checked after every admission and every
	// simulated second (LimitChecks times).
	PeakActive        int     `json:"peak_active_users"`
	PeakMinute        int     `json:"peak_admitted_in_a_minute"`
	OvershootTotalPct float64 `json:"overshoot_total_pct"`
	OvershootNewPct   float64 `json:"overshoot_new_pct"`
	LimitChecks       int     `json:"limit_checks"`

	// The room's own counts against the ground truth: the largest
	// difference of its active users at a minute's start, and the minutes
	// whose admissions it counted differently.
	RoomActiveError   int `json:"room_active_error"`
	RoomAdmittedDiffs int `json:"room_admitted_minutes_differing"`
	// Reports the room received, each minute (the workflow's signals).
	ReportsPerMinute []int `json:"reports_per_minute"`

	// Minutes of the run; the last may be partial: the first
	// CompleteMinutes were simulated whole.
	Minutes         []MinuteStats   `json:"minutes"`
	CompleteMinutes int             `json:"complete_minutes"`
	People          []VisitorRecord `json:"-"`
	Cohorts         []Cohort        `json:"-"`
	Duration        time.Duration   `json:"-"` // simulated, arrivals and drain

	room          *admit.Room // as the run left it
	maxStateBytes int         // the room's largest state at a rollup (measureState)
}

// BelowLimitsShare: a queueing minute that admitted less than this share of
// what the limits allowed counts as queueing below the limits (the 98% the
// issue asks counters to start queueing at).
const BelowLimitsShare = 0.98

// VisitorRecord is one visitor's story, for fairness and the heatmaps.
type VisitorRecord struct {
	DataCenter int
	Arrival    time.Duration // since the start
	Bucket     int           // minute of the first request, since the start
	Queued     bool          // was ever queued
	AdmittedAt time.Duration // -1 if never admitted
	Refresh    Refresh
	State      State
}

// Wait is how long the visitor waited to be admitted (-1 if it was not).
func (r VisitorRecord) Wait() time.Duration {
	if r.AdmittedAt < 0 {
		return -1
	}
	return r.AdmittedAt - r.Arrival
}

func (w *world) result() *Result {
	c, m := w.cfg, w.meter
	r := &Result{Profile: c.Profile.Name(), Strategy: c.Strategy, Method: string(c.Room.QueueingMethod), Seed: c.Seed,
		DataCenters: c.DataCenters, GatesPerDataCenter: c.GatesPerDataCenter, PropagationDelay: c.PropagationDelay,
		TotalActiveUsers: c.Room.TotalActiveUsers, NewUsersPerMinute: c.Room.NewUsersPerMinute, SessionDuration: c.Room.SessionDuration,
		Decisions: w.decisions, PeakActive: m.peakActive, PeakMinute: m.peakMinute, LimitChecks: m.checks,
		FirstQueueAt: m.firstQueue, QueueingStartPct: 100, RoomActiveError: w.roomActiveDiff,
		ReportsPerMinute: w.reportsByMin, Cohorts: w.cohortResults(), room: w.room, maxStateBytes: w.maxStateBytes}
	if m.firstQueue >= 0 {
		r.QueueingStartPct = round2(100 * m.firstQueueUtil)
	}
	r.OvershootTotalPct = round2(max(0, 100*(float64(m.peakActive)/float64(m.total)-1)))
	r.OvershootNewPct = round2(max(0, 100*(float64(m.peakMinute)/float64(m.perMinute)-1)))
	r.Minutes, r.CompleteMinutes = m.minutes, min(len(m.minutes), w.completeMinutes)
	for _, ms := range r.Minutes[:r.CompleteMinutes] {
		if ms.QueuedForLimits > 0 {
			r.QueueingMinutes++
			if float64(ms.Admitted) < BelowLimitsShare*float64(ms.SlotsAllowed) {
				r.BelowLimitsMinutes++
			}
		}
		if ms.RoomAdmitted >= 0 && ms.RoomAdmitted != ms.Admitted {
			r.RoomAdmittedDiffs++
		}
	}
	if r.QueueingMinutes > 0 {
		r.BelowLimitsPct = round2(100 * float64(r.BelowLimitsMinutes) / float64(r.QueueingMinutes))
	}
	r.People = make([]VisitorRecord, len(w.visitors))
	for i, v := range w.visitors {
		r.Visitors++
		switch v.state {
		case Browsing, Left:
			r.Admitted++
		case Abandoned:
			r.Abandoned++
		case Waiting:
			r.StillWaiting++
		}
		r.People[i] = VisitorRecord{DataCenter: v.dc, Arrival: v.arrival, Bucket: int(v.bucket.Sub(c.Start) / time.Minute),
			Queued: v.queued >= 0, AdmittedAt: v.admitAt, Refresh: v.refresh, State: v.state}
	}
	r.Duration = time.Duration(r.CompleteMinutes) * time.Minute
	return r
}

func round2(x float64) float64 {
	if x < 0 {
		return -float64(int64(-x*100+0.5)) / 100
	}
	return float64(int64(x*100+0.5)) / 100
}
