package admit

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"
)

// Room is a room's whole state, kept by whoever rolls its minutes up: the
// room workflow (where it lives in workflow state and crosses
// continue-as-new as JSON) and the simulator. Every method takes the time as
// an argument; none reads a clock, draws a random number or ranges over a
// map, so a workflow can call them deterministically.
type Room struct {
	Settings        Settings  `json:"settings"` // as configured, defaults applied
	SettingsVersion int64     `json:"settingsVersion"`
	Events          []Event   `json:"events,omitempty"` // by start
	MinuteSeconds   int       `json:"minuteSeconds"`
	Created         time.Time `json:"created"`
	Seq             int64     `json:"seq"`

	Ledger   Ledger    `json:"ledger"`
	Snapshot *Snapshot `json:"snapshot,omitempty"` // the last one published
	// The pools of the last snapshot of an earlier minute, whose remainders
	// stale gates may still spend (see Allocate).
	PrevPools  []Pool    `json:"prevPools,omitempty"`
	PrevMinute time.Time `json:"prevMinute,omitzero"`
	// PrevStaleFreed is that snapshot's StaleFreed: what the room holds
	// for stale gates in the minute after it.
	PrevStaleFreed int `json:"prevStaleFreed,omitempty"`

	// Rev is the revision of the rules the room follows (see Revision):
	// RevCurrent for a new room; the room workflow sets each run's from its
	// version markers, so a run replays with the rules it ran with.
	// Recreate keeps it.
	Rev Revision `json:"rev"`
	// PublishAtGrace makes the room publish at the grace without waiting
	// for final reports, whatever its revision: the simulator's model,
	// whose gates send none. It is no version: the workflow never sets it.
	PublishAtGrace bool `json:"-"`
	// OutageMinute is the minute of the first snapshot after an outage
	// (InOutage on the snapshot before): gates admitted on its outage
	// counter before they read it, and their reports of it reach the room
	// only as it ends (a data center's aggregate), so it is allotted whole
	// to that counter (the new visitors' pool, Anywhere) and what they took
	// counts against its slots. Kept for republishing in that minute.
	OutageMinute time.Time `json:"outageMinute,omitzero"`
	// Returned is the minute of the first snapshot after minutes that had
	// none of their own (RevOutageReports): the gates' reports of those
	// minutes may reach the room only after it published it, so they stay
	// open until two minutes after it (see outage_reports.go).
	Returned time.Time `json:"returned,omitzero"`
	// AwaitingOutage is when the room, back, began waiting for those
	// reports before that snapshot (at most FinalWait).
	AwaitingOutage time.Time `json:"awaitingOutage,omitzero"`

	Shuffles []TimeRange     `json:"shuffles,omitempty"`
	Recent   []MinuteSummary `json:"recent,omitempty"` // the last RecentMinutes minutes, oldest first
}

// Window sizes.
const (
	RecentMinutes  = 60
	letInMinutes   = 5 // the let-in rate is the average of the last 5 minutes
	ledgerMinutes  = MaxSessionMinutes + letInMinutes + 2
	DefaultMinute  = 60
	MinMinuteSecs  = 3
	maxEventsStore = 50
)

// LedgerMinutes is how many minutes back from its current one a room keeps
// the totals of its closed minutes (the longest session, the let-in
// window and two): a minute's late reports reach the room's record only
// while it is within them, so gates keep the reports Temporal did not take
// that long (an outage's minutes before that hold no session still
// running).
const LedgerMinutes = ledgerMinutes

// NewRoom creates a room from validated settings and publishes its first
// snapshot at once (every slot in the Anywhere pool, so it admits from its
// first second). minuteSeconds is the length of the room's minute: 60 in
// production, shorter in tests.
//
// It checks them as recorded (route paths as first accepted, without the
// later rule that they be matchable): a room's history replays with the
// settings it was started or recreated with; new settings are checked with
// Validate before (the room workflow's start and its update validators do).
func NewRoom(s Settings, minuteSeconds int, now time.Time) (*Room, error) {
	return NewRoomAt(s, minuteSeconds, now, RevCurrent)
}

// NewRoomAt is NewRoom for a room following the rules of revision rev: a
// workflow replaying a run begun on an earlier one.
func NewRoomAt(s Settings, minuteSeconds int, now time.Time, rev Revision) (*Room, error) {
	s = s.WithDefaults()
	if err := s.validate(checks{legacyPages: rev < RevStrictPages, recordedPaths: true}); err != nil {
		return nil, err
	}
	if minuteSeconds == 0 {
		minuteSeconds = DefaultMinute
	}
	if minuteSeconds < MinMinuteSecs || minuteSeconds > DefaultMinute {
		return nil, fmt.Errorf("minute length must be between %d and %d seconds, got %d", MinMinuteSecs, DefaultMinute, minuteSeconds)
	}
	r := &Room{Settings: s, SettingsVersion: 1, MinuteSeconds: minuteSeconds, Created: now.UTC(), Rev: rev}
	r.publish(now, MinuteOf(now, r.MinuteLength()))
	return r, nil
}

// Recreate starts the room afresh with new settings (a deleted room created
// again): no history, no events, but its sequence and settings version keep
// growing so caches notice, and it keeps its revision.
func (r *Room) Recreate(s Settings, now time.Time) error {
	nr, err := NewRoomAt(s, r.MinuteSeconds, now, r.Rev)
	if err != nil {
		return err
	}
	if nr.Settings.Name != r.Settings.Name {
		return &InvalidError{Problems: []*FieldError{{Field: "name", Reason: fmt.Sprintf("this room is %q, not %q", r.Settings.Name, nr.Settings.Name)}}}
	}
	nr.SettingsVersion = r.SettingsVersion + 1
	nr.Seq = r.Seq + 1
	nr.Snapshot.Seq, nr.Snapshot.SettingsVersion = nr.Seq, nr.SettingsVersion
	*r = *nr
	return nil
}

// MinuteLength is the length of the room's minute.
func (r *Room) MinuteLength() time.Duration { return time.Duration(r.MinuteSeconds) * time.Second }

// Grace is how long after a minute ends the room waits for the gates' last
// reports of it before publishing the next snapshot; gates spend the
// previous snapshot's remainders meanwhile.
func (r *Room) Grace() time.Duration { return r.MinuteLength() / 12 }

// FinalWait is how far into a minute the room waits for the gates' final
// reports of the minute before (RevAwaitFinals); a gate that died without
// sending one delays the snapshot no longer than that.
func (r *Room) FinalWait() time.Duration { return r.MinuteLength() / 4 }

// AddReport keeps a gate's report if it is valid and newer than what the
// room has of that gate and minute. Reports of closed minutes are dropped.
func (r *Room) AddReport(rep Report, now time.Time) error {
	length := r.MinuteLength()
	if err := rep.Validate(r.Settings.Name, length); err != nil {
		return err
	}
	if rep.Minute.After(MinuteOf(now, length).Add(length)) {
		return fmt.Errorf("report of minute %s is from the future (now %s)", rep.Minute.Format(time.RFC3339), now.Format(time.RFC3339))
	}
	if r.Rev < RevCountsStore {
		rep.StoreTaken = nil
	}
	if r.Rev >= RevBounded {
		_, err := r.Ledger.AddBounded(rep, r.Settings.ReportersPerMinute())
		return err
	}
	r.Ledger.Add(rep)
	return nil
}

// NextWake is when Advance has something to do: the next minute's snapshot,
// or an event beginning, starting or ending.
func (r *Room) NextWake(now time.Time) time.Time {
	next := r.Snapshot.Minute.Add(r.MinuteLength() + r.Grace())
	if r.awaitsFinals() && !now.Before(next) {
		// A snapshot is due and waits for final reports, or for this.
		next = MinuteOf(now.Add(-r.Grace()), r.MinuteLength()).Add(r.FinalWait())
		if back := r.AwaitingOutage.Add(r.FinalWait()); !r.AwaitingOutage.IsZero() && back.After(now) && (back.Before(next) || !next.After(now)) {
			next = back
		}
	}
	if t, ok := NextEventChange(r.Events, now); ok && t.Before(next) {
		next = t
	}
	return next
}

// Advance publishes a new snapshot if one is due at now — a new minute has
// passed its grace, or an event changed phase — and returns it.
func (r *Room) Advance(now time.Time) (*Snapshot, bool) {
	length := r.MinuteLength()
	due := MinuteOf(now.Add(-r.Grace()), length)
	if current := MinuteOf(now, length); r.awaitsFinals() && r.Rev >= RevPublishOnFinals && current.After(due) && current.After(r.Snapshot.Minute) &&
		r.Ledger.Final(current.Add(-2*length), current.Add(-length)) && r.Ledger.Reported(current.Add(-length)) {
		due = current // every final is in before the grace
	}
	switch {
	case due.After(r.Snapshot.Minute):
		if r.awaitsFinals() && now.Before(due.Add(r.FinalWait())) && (!r.Ledger.Final(due.Add(-2*length), due.Add(-length))) {
			return r.Snapshot, false // gates keep spending what the current snapshot leaves them
		}
		if r.awaitsFinals() && r.awaitsOutageReports(due, now) {
			return r.Snapshot, false // the gates keep to the outage's rules a few seconds more
		}
		r.Events = PruneEvents(r.Events, now)
		return r.publish(now, due), true
	case r.eventChanged(now):
		r.Events = PruneEvents(r.Events, now)
		return r.publish(now, r.Snapshot.Minute), true
	}
	return r.Snapshot, false
}

// awaitsFinals says whether the room waits for the gates' final reports
// before it publishes (RevAwaitFinals).
func (r *Room) awaitsFinals() bool { return r.Rev >= RevAwaitFinals && !r.PublishAtGrace }

// ErrVersion means settings were changed by someone else since they were read.
var ErrVersion = errors.New("the room's settings changed since they were read; read them again")

// CheckSettings validates a settings change: the settings must be valid,
// keep the room's name, and (when ifVersion is not 0) replace the version
// they were read at.
func (r *Room) CheckSettings(s Settings, ifVersion int64) error {
	return r.checkSettings(s, ifVersion, checks{minuteSeconds: r.MinuteSeconds})
}

func (r *Room) checkSettings(s Settings, ifVersion int64, c checks) error {
	s = s.WithDefaults()
	if err := s.validate(c); err != nil {
		return err
	}
	if s.Name != r.Settings.Name {
		return &InvalidError{Problems: []*FieldError{{Field: "name", Reason: fmt.Sprintf("a room cannot be renamed (%q to %q); create a new one", r.Settings.Name, s.Name)}}}
	}
	if ifVersion != 0 && ifVersion != r.SettingsVersion {
		return fmt.Errorf("%w (read at version %d, now %d)", ErrVersion, ifVersion, r.SettingsVersion)
	}
	return nil
}

// SetSettings applies a checked settings change and republishes the current
// minute's snapshot with it: a change of queueing method takes effect now,
// and the buckets keep everyone's place.
func (r *Room) SetSettings(s Settings, ifVersion int64, now time.Time) (*Snapshot, error) {
	// As recorded: the validator (CheckSettings) refused anything newer.
	if err := r.checkSettings(s, ifVersion, checks{legacyPages: r.Rev < RevStrictPages, recordedPaths: true}); err != nil {
		return nil, err
	}
	r.Settings = s.WithDefaults()
	r.SettingsVersion++
	return r.republish(now), nil
}

// republish recomputes the snapshot of the current minute (or of a later
// one, if one is due).
func (r *Room) republish(now time.Time) *Snapshot {
	due := MinuteOf(now.Add(-r.Grace()), r.MinuteLength())
	return r.publish(now, later(due, r.Snapshot.Minute))
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// publish computes the snapshot of minute from the ledger and makes it
// current.
func (r *Room) publish(now, minute time.Time) *Snapshot {
	length := r.MinuteLength()
	if r.Snapshot != nil && minute.After(r.Snapshot.Minute) {
		r.PrevPools, r.PrevMinute, r.PrevStaleFreed = r.Snapshot.Pools, r.Snapshot.Minute, r.Snapshot.StaleFreed
		r.recordRecent(r.Snapshot)
	}
	eff, ev, phase := Effective(r.Settings, r.Events, now)
	r.trackShuffle(ev, phase)
	outage := r.outageMinute(minute)
	previous := minute.Add(-length)
	if r.Rev >= RevSettleRecent {
		r.settleRecent(previous)
	}
	r.Ledger.Close(r.closeBefore(minute, previous), minute.Add(-time.Duration(ledgerMinutes)*length))
	last := r.Ledger.Totals(previous)

	active := r.Ledger.Sessions(minute.Add(-time.Duration(eff.SessionDuration)*length), minute)
	slots := SlotsAvailable(eff.TotalActiveUsers, active, eff.NewUsersPerMinute)
	buckets := r.waitingBuckets(last.Queued)
	buckets, newSlots := Reserve(buckets, slots)
	r.passShuffled(buckets, minute)
	shares, anywhere := Shares(last.DataCenters, eff.TotalActiveUsers)
	waiting := 0
	for _, b := range buckets {
		waiting += b.Waiting
	}

	s := &Snapshot{
		Room: eff.Name, MinuteSeconds: r.MinuteSeconds, Minute: minute, PublishedAt: now.UTC(),
		SettingsVersion: r.SettingsVersion, Settings: eff,
		ActiveUsers: active, SlotsAvailable: slots, NewUserSlots: newSlots,
		Buckets: buckets, CurrentlyWaiting: waiting, TrafficHistory: shares, AnywhereShare: anywhere,
		Shuffled: slices.Clone(r.Shuffles),
	}
	s.Settings.CustomPageHTML = ""
	for _, t := range shares {
		s.GatesActive += t.DataCenterWorkersActive
	}
	s.Utilization = min(1, max(float64(active)/float64(eff.TotalActiveUsers), float64(last.Admitted)/float64(eff.NewUsersPerMinute)))
	if ev != nil {
		s.Event = &EventInfo{Name: ev.Name, Phase: phase, PrequeueStartTime: ev.PrequeueStartTime,
			EventStartTime: ev.EventStartTime, EventEndTime: ev.EventEndTime, ShuffleAtEventStart: ev.ShuffleAtEventStart}
	}
	switch {
	case eff.Suspended:
		s.Status = StatusSuspended
	case phase == EventPrequeueing:
		s.Status = StatusEventPrequeueing
	case waiting > 0 || eff.QueueAll || eff.QueueingMethod == Reject:
		s.Status = StatusQueueing
	default:
		s.Status = StatusNotQueueing
	}
	method := eff.QueueingMethod
	if s.Status == StatusSuspended || s.Status == StatusEventPrequeueing || eff.QueueAll {
		method = "" // nobody new is admitted: only the remainders stale gates may spend
	}
	carry := r.carry(minute, outage, slots)
	if outage && (method == FIFO || method == Random) {
		// The outage counter may already hold all the minute's slots.
		carry = append(carry, Remainder{Scope: Anywhere, Slots: slots})
	}
	s.Pools = Allocate(AllocationInput{Method: method, Slots: slots, Buckets: buckets, NewUserSlots: newSlots,
		Shares: shares, TotalActiveUsers: eff.TotalActiveUsers, Carry: carry})
	setHeadroom(s.Pools, eff.TotalActiveUsers-active-slots, slots)
	s.PacedRelease = method == Random && waiting > 0
	if r.Rev >= RevStaleFreed {
		expiring := active - r.Ledger.Sessions(minute.Add(-time.Duration(eff.SessionDuration-1)*length), minute)
		s.StaleFreed = StaleFreedCap(eff, method, active, expiring, slots, s.PacedRelease)
	}
	s.LetInPerMinute = r.letIn(minute, slots)
	if eff.QueueAll || phase == EventPrequeueing {
		s.Estimate = Estimate{}
	} else {
		s.Estimate = Estimates(eff.QueueingMethod, s.LetInPerMinute, waiting)
	}
	r.Seq++
	s.Seq = r.Seq
	r.Snapshot = s
	return s
}

// waitingBuckets turns the net waiting counts of the previous minute into
// buckets, shuffled ranges merged, oldest first.
func (r *Room) waitingBuckets(queued []MinuteCount) []Bucket {
	var out []Bucket
	for _, q := range queued {
		key := q.Minute
		for _, sh := range r.Shuffles {
			if sh.Contains(key) {
				key = sh.From
			}
		}
		i, found := slices.BinarySearchFunc(out, key, func(b Bucket, k time.Time) int { return b.Key.Compare(k) })
		if found {
			out[i].Waiting += q.Count
		} else {
			out = slices.Insert(out, i, Bucket{Key: key, Waiting: q.Count})
		}
	}
	return slices.DeleteFunc(out, func(b Bucket) bool { return b.Waiting <= 0 })
}

// carry lists the floors of minute's allocation: what the gates already
// took this minute, and what stale gates may still spend from the pools of
// the previous allocation after what they took in the minutes since.
func (r *Room) carry(minute time.Time, outage bool, slots int) []Remainder {
	var out []Remainder
	for _, t := range r.Ledger.Totals(minute).Taken {
		if b, ok := parsePoolKey(t.Pool); ok && t.Count > 0 {
			out = append(out, Remainder{Bucket: b, Scope: t.Scope, Slots: t.Count})
		}
	}
	// In an outage minute gates take from the outage counter only: no
	// stale gate spends the previous pools.
	if outage || r.PrevMinute.IsZero() || !r.PrevMinute.Before(minute) {
		return out
	}
	var totals []MinuteTotals
	for m := r.PrevMinute; m.Before(minute); m = m.Add(r.MinuteLength()) {
		totals = append(totals, r.Ledger.Totals(m))
	}
	var stale []Remainder
	for _, p := range r.PrevPools {
		if !StaleSpendable(p) {
			continue
		}
		for _, sc := range p.Scopes {
			used := 0
			for _, t := range totals {
				used += t.TakenFrom(p.Key(), sc.Name)
			}
			if left := StaleRemainder(sc, used); left > 0 {
				stale = append(stale, Remainder{Bucket: p.Bucket, Scope: sc.Name, Slots: left})
			}
		}
	}
	if r.PrevMinute.Add(r.MinuteLength()).Equal(minute) {
		stale = HoldStaleFreed(stale, min(r.PrevStaleFreed, slots))
	}
	return append(out, stale...)
}

// outageMinute reports whether gates may have admitted in minute on the
// outage counter before its snapshot (see OutageMinute), and remembers it.
func (r *Room) outageMinute(minute time.Time) bool {
	if r.Rev < RevOutageMinute {
		return false
	}
	if r.Snapshot != nil && minute.After(r.Snapshot.Minute) && InOutage(r.Snapshot, minute) {
		r.OutageMinute = minute
	}
	return r.OutageMinute.Equal(minute) && !minute.IsZero()
}

// setHeadroom shares the room's headroom beyond this minute's slots between
// the scopes, in proportion to their limits, rounded down.
func setHeadroom(pools []Pool, headroom, slots int) {
	if headroom <= 0 {
		return
	}
	allocated := 0
	for _, p := range pools {
		allocated += p.Slots
	}
	total := max(slots, allocated) // the floors may take the pools past the slots
	for i := range pools {
		for j := range pools[i].Scopes {
			sc := &pools[i].Scopes[j]
			sc.Headroom = int(int64(sc.Limit) * int64(headroom) / int64(max(total, 1)))
		}
	}
}

func parsePoolKey(key string) (time.Time, bool) {
	if key == PoolNew {
		return time.Time{}, true
	}
	ms, err := strconv.ParseInt(key, 10, 64)
	if err != nil || ms <= 0 {
		return time.Time{}, false
	}
	return fromMillis(ms), true
}

// letIn is the average number of visitors admitted per minute over the last
// few minutes the room existed, or this minute's slots if none were.
func (r *Room) letIn(minute time.Time, slots int) float64 {
	length := r.MinuteLength()
	n, sum := 0, 0
	for m := minute.Add(-letInMinutes * length); m.Before(minute); m = m.Add(length) {
		if m.Before(MinuteOf(r.Created, length)) {
			continue
		}
		n++
		sum += r.Ledger.Totals(m).Admitted
	}
	if sum == 0 {
		return float64(slots)
	}
	return float64(sum) / float64(n)
}
