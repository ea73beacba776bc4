package admit

import (
	"fmt"
	"slices"
	"time"
)

// Event is a scheduled period that overrides some of a room's settings, under
// Cloudflare Waiting Room's names. Nil overrides inherit the room's value.
type Event struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// Visitors arriving between the pre-queue start and the event start wait
	// on a pre-queue page; nobody new is admitted until the start.
	PrequeueStartTime *time.Time `json:"prequeue_start_time,omitempty"`
	EventStartTime    time.Time  `json:"event_start_time"`
	EventEndTime      time.Time  `json:"event_end_time"`
	// At the start, pre-queued visitors leave in random order instead of in
	// the order they arrived (needs a pre-queue).
	ShuffleAtEventStart bool `json:"shuffle_at_event_start,omitempty"`

	TotalActiveUsers      *int            `json:"total_active_users,omitempty"`
	NewUsersPerMinute     *int            `json:"new_users_per_minute,omitempty"`
	SessionDuration       *int            `json:"session_duration,omitempty"`
	QueueingMethod        *QueueingMethod `json:"queueing_method,omitempty"`
	DisableSessionRenewal *bool           `json:"disable_session_renewal,omitempty"`
	CustomPageHTML        *string         `json:"custom_page_html,omitempty"`
}

// EventPhase is where the clock stands in an event.
type EventPhase string

// The phases of an event.
const (
	NoEvent          EventPhase = ""
	EventPrequeueing EventPhase = "prequeueing"
	EventActive      EventPhase = "active"
)

// Begins is when the event first changes the room: its pre-queue start, or
// its start.
func (e Event) Begins() time.Time {
	if e.PrequeueStartTime != nil {
		return *e.PrequeueStartTime
	}
	return e.EventStartTime
}

// PhaseAt says what the event does to the room at now.
func (e Event) PhaseAt(now time.Time) EventPhase {
	switch {
	case now.Before(e.Begins()) || !now.Before(e.EventEndTime):
		return NoEvent
	case now.Before(e.EventStartTime):
		return EventPrequeueing
	default:
		return EventActive
	}
}

// Apply returns s with the event's overrides.
func (e Event) Apply(s Settings) Settings {
	if e.TotalActiveUsers != nil {
		s.TotalActiveUsers = *e.TotalActiveUsers
	}
	if e.NewUsersPerMinute != nil {
		s.NewUsersPerMinute = *e.NewUsersPerMinute
	}
	if e.SessionDuration != nil {
		s.SessionDuration = *e.SessionDuration
	}
	if e.QueueingMethod != nil {
		s.QueueingMethod = *e.QueueingMethod
	}
	if e.DisableSessionRenewal != nil {
		s.DisableSessionRenewal = *e.DisableSessionRenewal
	}
	if e.CustomPageHTML != nil {
		s.CustomPageHTML = *e.CustomPageHTML
	}
	return s
}

// EventAt returns the event that affects the room at now, and how.
func EventAt(events []Event, now time.Time) (*Event, EventPhase) {
	for i := range events {
		if ph := events[i].PhaseAt(now); ph != NoEvent {
			return &events[i], ph
		}
	}
	return nil, NoEvent
}

// Effective is the room's settings at now, with the overrides of the event
// active then. While an event pre-queues only its page applies (the pre-queue
// page); its limits, session and method apply from its start.
func Effective(s Settings, events []Event, now time.Time) (Settings, *Event, EventPhase) {
	e, ph := EventAt(events, now)
	switch {
	case e == nil:
		return s, nil, NoEvent
	case ph == EventPrequeueing:
		if e.CustomPageHTML != nil {
			s.CustomPageHTML = *e.CustomPageHTML
		}
		return s, e, ph
	}
	return e.Apply(s), e, ph
}

// NextEventChange is the first moment after now at which an event begins,
// starts or ends, so a room can set a timer for it.
func NextEventChange(events []Event, now time.Time) (time.Time, bool) {
	var next time.Time
	for _, e := range events {
		for _, t := range []time.Time{e.Begins(), e.EventStartTime, e.EventEndTime} {
			if t.After(now) && (next.IsZero() || t.Before(next)) {
				next = t
			}
		}
	}
	return next, !next.IsZero()
}

// ValidateEvent checks e against the room's settings and its other events
// at now: an event must end in the future, start before it ends, pre-queue
// before it starts, never overlap another event, and every override must be
// valid for the room.
func ValidateEvent(e Event, room Settings, others []Event, now time.Time) error {
	return validateEvent(e, room, others, now, false)
}

// validateEvent is ValidateEvent; legacyPages checks custom_page_html by its
// syntax only (see RevStrictPages).
func validateEvent(e Event, room Settings, others []Event, now time.Time, legacyPages bool) error {
	var p problems
	if !ValidName(e.Name) {
		p.add("name", "must be 1-64 letters, digits, hyphens or underscores, got %q", e.Name)
	}
	if len(e.Description) > 1024 {
		p.add("description", "must be at most 1024 bytes, got %d", len(e.Description))
	}
	switch {
	case e.EventStartTime.IsZero():
		p.add("event_start_time", "is required")
	case e.EventEndTime.IsZero():
		p.add("event_end_time", "is required")
	case !e.EventEndTime.After(e.EventStartTime):
		p.add("event_end_time", "must be after event_start_time (%s), got %s", e.EventStartTime.Format(time.RFC3339), e.EventEndTime.Format(time.RFC3339))
	case !e.EventEndTime.After(now):
		p.add("event_end_time", "is in the past (%s)", e.EventEndTime.Format(time.RFC3339))
	}
	if e.PrequeueStartTime != nil && !e.PrequeueStartTime.Before(e.EventStartTime) {
		p.add("prequeue_start_time", "must be before event_start_time (%s), got %s", e.EventStartTime.Format(time.RFC3339), e.PrequeueStartTime.Format(time.RFC3339))
	}
	if e.ShuffleAtEventStart && e.PrequeueStartTime == nil {
		p.add("shuffle_at_event_start", "needs a prequeue_start_time: only pre-queued visitors are shuffled")
	}
	if e.TotalActiveUsers != nil && e.NewUsersPerMinute == nil {
		p.add("total_active_users", "can only be overridden together with new_users_per_minute")
	}
	eff := e.Apply(room)
	var sub problems
	validateLimits(&sub, "", eff.TotalActiveUsers, eff.NewUsersPerMinute, eff.SessionDuration, eff.QueueingMethod)
	p = append(p, sub...)
	if e.CustomPageHTML != nil {
		validatePage(&p, "custom_page_html", *e.CustomPageHTML, legacyPages)
	}
	for _, o := range others {
		if o.Name == e.Name {
			p.add("name", "the room already has an event named %q", e.Name)
			continue
		}
		if e.Begins().Before(o.EventEndTime) && o.Begins().Before(e.EventEndTime) {
			p.add("event_start_time", "overlaps event %q (%s to %s); events cannot overlap", o.Name,
				o.Begins().Format(time.RFC3339), o.EventEndTime.Format(time.RFC3339))
		}
	}
	return p.err()
}

// ParseEvent reads an event from JSON (unknown fields and wrong types are
// refused by name); validate it with ValidateEvent.
func ParseEvent(data []byte) (Event, error) {
	var e Event
	if err := decodeStrict(data, &e); err != nil {
		return Event{}, err
	}
	return e, nil
}

// SortEvents orders events by the time they begin.
func SortEvents(events []Event) {
	slices.SortStableFunc(events, func(a, b Event) int { return a.Begins().Compare(b.Begins()) })
}

// PruneEvents drops the events that ended at or before now.
func PruneEvents(events []Event, now time.Time) []Event {
	return slices.DeleteFunc(slices.Clone(events), func(e Event) bool { return !e.EventEndTime.After(now) })
}

func (e Event) String() string {
	return fmt.Sprintf("%s (%s to %s)", e.Name, e.EventStartTime.Format(time.RFC3339), e.EventEndTime.Format(time.RFC3339))
}
