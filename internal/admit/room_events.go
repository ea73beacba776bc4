package admit

import (
	"fmt"
	"slices"
	"time"
)

// The room's scheduled events: checking, adding and cancelling them, and
// what changes when one begins or ends.

func (r *Room) eventChanged(now time.Time) bool {
	e, phase := EventAt(r.Events, now)
	cur := r.Snapshot.Event
	switch {
	case e == nil:
		return cur != nil
	case cur == nil:
		return true
	default:
		return cur.Name != e.Name || cur.Phase != phase
	}
}

// CheckEvent validates a new event against the room and its other events.
func (r *Room) CheckEvent(e Event, now time.Time) error {
	return r.checkEvent(e, now, false)
}

func (r *Room) checkEvent(e Event, now time.Time, legacyPages bool) error {
	if err := validateEvent(e, r.Settings, r.Events, now, legacyPages); err != nil {
		return err
	}
	if len(r.Events) >= maxEventsStore {
		return fmt.Errorf("a room holds at most %d events", maxEventsStore)
	}
	return nil
}

// AddEvent schedules a checked event.
func (r *Room) AddEvent(e Event, now time.Time) (*Snapshot, error) {
	if err := r.checkEvent(e, now, r.Rev < RevStrictPages); err != nil {
		return nil, err
	}
	r.Events = append(r.Events, e)
	SortEvents(r.Events)
	r.SettingsVersion++
	return r.republish(now), nil
}

// CheckCancel reports whether the room has an event of that name.
func (r *Room) CheckCancel(name string) error {
	if !slices.ContainsFunc(r.Events, func(e Event) bool { return e.Name == name }) {
		return fmt.Errorf("the room has no event named %q", name)
	}
	return nil
}

// CancelEvent removes an event (ending it now if it runs).
func (r *Room) CancelEvent(name string, now time.Time) (*Snapshot, error) {
	if err := r.CheckCancel(name); err != nil {
		return nil, err
	}
	r.Events = slices.DeleteFunc(r.Events, func(e Event) bool { return e.Name == name })
	r.SettingsVersion++
	return r.republish(now), nil
}

// trackShuffle merges an event's pre-queue buckets into one at its start
// when the event shuffles, and forgets merged ranges nobody waits in.
func (r *Room) trackShuffle(ev *Event, phase EventPhase) {
	length := r.MinuteLength()
	if ev != nil && phase == EventActive && ev.ShuffleAtEventStart && ev.PrequeueStartTime != nil {
		rg := TimeRange{From: MinuteOf(*ev.PrequeueStartTime, length), To: MinuteOf(ev.EventStartTime.Add(length-time.Nanosecond), length)}
		if rg.To.After(rg.From) && !slices.Contains(r.Shuffles, rg) {
			r.Shuffles = append(r.Shuffles, rg)
		}
	}
	if r.Snapshot == nil {
		return
	}
	r.Shuffles = slices.DeleteFunc(r.Shuffles, func(rg TimeRange) bool {
		if ev != nil && phase == EventActive && ev.PrequeueStartTime != nil && rg.From.Equal(MinuteOf(*ev.PrequeueStartTime, length)) {
			return false
		}
		return !slices.ContainsFunc(r.Snapshot.Buckets, func(b Bucket) bool { return rg.Contains(b.Key) })
	})
}

// passShuffled sets Passed on the shuffled buckets of the snapshot of
// minute: in a new minute, the turn the last snapshot's reservation
// reached; republishing the same minute, what it had passed already. Only a
// snapshot that offered the bucket a reservation within its minute (a
// bucket's slots are spent in their minute only) advances it: not the one
// an event's start republishes after its minute ended.
func (r *Room) passShuffled(buckets []Bucket, minute time.Time) {
	prev := r.Snapshot
	if prev == nil {
		return
	}
	offered := prev.PublishedAt.Before(prev.Minute.Add(prev.MinuteLength()))
	for i := range buckets {
		key := buckets[i].Key
		if !slices.ContainsFunc(prev.Shuffled, func(rg TimeRange) bool { return rg.From.Equal(key) }) {
			continue
		}
		j := slices.IndexFunc(prev.Buckets, func(b Bucket) bool { return b.Key.Equal(key) })
		switch {
		case j < 0:
		case prev.Minute.Before(minute) && offered && prev.Pool(key) != nil:
			buckets[i].Passed = prev.Buckets[j].Turn()
		default:
			buckets[i].Passed = prev.Buckets[j].Passed
		}
	}
}
