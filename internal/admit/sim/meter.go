package sim

import (
	"time"

	"github.com/edgeflow/edgeflow/internal/admit"
)

// MinuteStats is the ground truth of one minute of a run, next to what the
// room thought of it.
type MinuteStats struct {
	Minute   int `json:"minute"` // since the start
	Arrivals int `json:"arrivals"`
	// Admitted visitors (FromQueue of them had been queued).
	Admitted  int `json:"admitted"`
	FromQueue int `json:"fromQueue"`
	// QueuedForLimits counts decisions that queued a visitor for lack of a
	// slot (re-checks included); FirstQueueUtilization is the room's
	// utilization at the first of them (0 if none).
	QueuedForLimits       int     `json:"queuedForLimits"`
	FirstQueueUtilization float64 `json:"firstQueueUtilization,omitempty"`
	EarlyRefreshes        int     `json:"earlyRefreshes"`
	Abandoned             int     `json:"abandoned"`
	// Sessions alive when the minute began, the most alive at once during
	// it, and the slots the limits allowed this minute from that start:
	// min(total_active_users - ActiveAtStart, new_users_per_minute).
	ActiveAtStart int `json:"activeAtStart"`
	// EndedAtStart sessions ended exactly as the minute began (a last
	// check-in on the first millisecond of a minute): the room, counting by
	// minute, still counts them at its start.
	EndedAtStart int `json:"endedAtStart,omitempty"`
	PeakActive   int `json:"peakActive"`
	SlotsAllowed int `json:"slotsAllowed"`
	// The room's view: its snapshot of this minute, and its count of this
	// minute's admissions once closed (-1 until the room closed it).
	RoomActive   int `json:"roomActive"`
	RoomSlots    int `json:"roomSlots"`
	RoomWaiting  int `json:"roomWaiting"`
	RoomAdmitted int `json:"roomAdmitted"`
	// Slots of the minute's pools nobody took: of the buckets' reservations
	// (FIFO) and of the new visitors' pool, each in data centers' scopes
	// (their share of the previous minute's traffic) and in Anywhere.
	UnusedReservedShares   int `json:"unusedReservedShares"`
	UnusedReservedAnywhere int `json:"unusedReservedAnywhere"`
	UnusedNewShares        int `json:"unusedNewShares"`
	UnusedNewAnywhere      int `json:"unusedNewAnywhere"`
}

// meter keeps the ground truth of a run: sessions alive (from each
// visitor's ticket, as the engine defines a session), admissions by minute,
// and the limits checked after every admission and every simulated second.
type meter struct {
	total, perMinute int
	sessionLength    time.Duration

	active   int
	sessions eventHeap // session ends; stale versions skipped
	minutes  []MinuteStats

	peakActive       int
	peakMinute       int // most admitted in one minute
	firstQueue       time.Duration
	firstQueueUtil   float64
	checks           int // limit checks made
	violationsActive int // checks that found active > total
	violationsMinute int // checks that found a minute's admissions > per minute
}

func newMeter(s admit.Settings) *meter {
	return &meter{total: s.TotalActiveUsers, perMinute: s.NewUsersPerMinute,
		sessionLength: time.Duration(s.SessionDuration) * time.Minute, firstQueue: -1}
}

func (m *meter) minute(at time.Duration) *MinuteStats {
	i := int(at / time.Minute)
	for len(m.minutes) <= i {
		m.minutes = append(m.minutes, MinuteStats{Minute: len(m.minutes), RoomAdmitted: -1})
	}
	return &m.minutes[i]
}

// expire ends the sessions whose end is at or before t, and returns how
// many ended exactly at t.
func (m *meter) expire(t time.Duration, visitors []*visitor) int {
	atT := 0
	for m.sessions.Len() > 0 && m.sessions.peek().at <= t {
		e := m.sessions.pop()
		if visitors[e.visitor].sessionVersion == e.version {
			m.active--
			if e.at == t {
				atT++
			}
		}
	}
	return atT
}

// startSession counts an admission at at, its session ending at end.
func (m *meter) startSession(v *visitor, at, end time.Duration) {
	v.sessionVersion++
	v.sessionEnd = end
	m.sessions.push(event{at: end, visitor: v.id, version: v.sessionVersion})
	m.active++
	ms := m.minute(at)
	ms.Admitted++
	if v.queued >= 0 {
		ms.FromQueue++
	}
	m.check(at)
}

// renew moves a session's end (the ticket was rewritten).
func (m *meter) renew(v *visitor, end time.Duration) {
	if end == v.sessionEnd {
		return
	}
	v.sessionVersion++
	v.sessionEnd = end
	m.sessions.push(event{at: end, visitor: v.id, version: v.sessionVersion})
}

// check compares the room with its limits at at (sessions ending by then
// already ended).
func (m *meter) check(at time.Duration) {
	ms := m.minute(at)
	m.checks++
	ms.PeakActive = max(ms.PeakActive, m.active)
	m.peakActive = max(m.peakActive, m.active)
	m.peakMinute = max(m.peakMinute, ms.Admitted)
	if m.active > m.total {
		m.violationsActive++
	}
	if ms.Admitted > m.perMinute {
		m.violationsMinute++
	}
}

// utilization is the measure: the larger of active users over
// total_active_users and admitted this minute over new_users_per_minute.
func (m *meter) utilization(at time.Duration) float64 {
	ms := m.minute(at)
	return max(float64(m.active)/float64(m.total), float64(ms.Admitted)/float64(m.perMinute))
}

// queuedForLimits counts a visitor queued for lack of a slot.
func (m *meter) queuedForLimits(at time.Duration) {
	ms := m.minute(at)
	if ms.QueuedForLimits == 0 {
		ms.FirstQueueUtilization = m.utilization(at)
	}
	ms.QueuedForLimits++
	if m.firstQueue < 0 {
		m.firstQueue, m.firstQueueUtil = at, m.utilization(at)
	}
}

// startMinute records the sessions alive as a minute begins (ended: those
// that ended exactly then).
func (m *meter) startMinute(at time.Duration, ended int) {
	ms := m.minute(at)
	ms.EndedAtStart = ended
	ms.ActiveAtStart = m.active
	ms.SlotsAllowed = admit.SlotsAvailable(m.total, m.active, m.perMinute)
	ms.PeakActive = max(ms.PeakActive, m.active)
}
