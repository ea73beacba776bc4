package admit

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"time"
)

// Status is the room's state, as Cloudflare Waiting Room's status API names it
// (plus "deleted", which a gate sees for a room that no longer exists).
type Status string

// The statuses.
const (
	StatusNotQueueing      Status = "not_queueing"
	StatusQueueing         Status = "queueing"
	StatusEventPrequeueing Status = "event_prequeueing"
	StatusSuspended        Status = "suspended"
	StatusDeleted          Status = "deleted"
)

// Anywhere names the scope of slots any data center may take (the "Anywhere"
// pool of "How Waiting Room makes queueing decisions"), next to the data
// centers' own scopes.
const Anywhere = "*"

// Bucket is a minute of first arrivals still waiting, with the slots this
// minute reserves for it (FIFO; tracked in random mode too).
type Bucket struct {
	Key           time.Time `json:"key"`
	Waiting       int       `json:"waiting"`
	ReservedSlots int       `json:"reservedSlots"`
	// Passed (an event's pre-queue shuffled at its start, in a FIFO room):
	// the share of the shuffled positions whose turn came before this
	// minute (see Turn).
	Passed float64 `json:"passed,omitempty"`
}

// Turn is the share of a shuffled bucket's positions whose turn has come
// by this minute: those passed before, and of the rest as many as the
// minute reserves for the bucket's waiting visitors.
func (b Bucket) Turn() float64 {
	if b.Waiting <= b.ReservedSlots {
		return 1
	}
	return min(1, b.Passed+(1-b.Passed)*float64(b.ReservedSlots)/float64(b.Waiting))
}

// TrafficShare is one data center's part of the previous minute's traffic:
// the sessions it saw, as a share of the room's limit.
type TrafficShare struct {
	DataCenter string   `json:"dataCenter"`
	Users      int      `json:"users"`
	Share      float64  `json:"share"`
	Gates      []string `json:"gates"` // gates that reported, sorted
	// DataCenterWorkersActive is how many gate processes reported for the
	// data center in the minute: the names in Gates, with the gates an
	// aggregated report sums counted each (Report.Gates). Cloudflare's
	// "How Cloudflare's Waiting Room works" post names it so.
	DataCenterWorkersActive int `json:"dataCenterWorkersActive"`
}

// Scope is one part of a pool: a data center's share, or Anywhere.
type Scope struct {
	Name  string `json:"scope"`
	Limit int    `json:"limit"`
	// Headroom is this scope's part of the room's room beyond this minute's
	// slots (total_active_users - activeUsers - slotsAvailable): what gates
	// still deciding on this snapshot in the next minute may spend besides
	// what is left of Limit (see StaleRemainder).
	Headroom int `json:"headroom,omitempty"`
	// Carried is the part of Limit that is there only as a floor (what
	// gates already took, or could still take from an earlier snapshot):
	// gates deciding on this snapshot after its minute spend a share of the
	// rest only (see StaleRemainder).
	Carried int `json:"carried,omitempty"`
}

// Pool is a set of slots for one kind of visitor this minute: visitors of a
// queued bucket (FIFO reservations), or new visitors (in random mode:
// everyone). Its slots are split into scopes: each data center's share,
// rounded down, and Anywhere for the rest.
type Pool struct {
	Bucket time.Time `json:"bucket,omitzero"` // zero: the pool of new visitors
	Slots  int       `json:"slots"`
	Scopes []Scope   `json:"scopes"` // data centers by name, then Anywhere
}

// PoolNew is the key of the pool of new visitors.
const PoolNew = "new"

// Key names the pool in counter keys and reports.
func (p Pool) Key() string { return poolKey(p.Bucket) }

func poolKey(bucket time.Time) string {
	if bucket.IsZero() {
		return PoolNew
	}
	return strconv.FormatInt(bucket.UnixMilli(), 10)
}

// Limit is the scope's limit, 0 when the pool has no such scope.
func (p Pool) Limit(scope string) int {
	for _, s := range p.Scopes {
		if s.Name == scope {
			return s.Limit
		}
	}
	return 0
}

// TimeRange is a half-open span of minutes.
type TimeRange struct {
	From time.Time `json:"from"`
	To   time.Time `json:"to"`
}

// Contains reports whether t is in [From, To).
func (r TimeRange) Contains(t time.Time) bool { return !t.Before(r.From) && t.Before(r.To) }

// Estimate is what the room predicts for visitors who wait now.
type Estimate struct {
	Known bool `json:"waitTimeKnown"`
	// FIFO: the wait of the newest visitor. Random: percentiles of the wait
	// of any visitor, from n = log(1-p) / log(1-P).
	MaxMinutes float64 `json:"maxEstimatedMinutes"`
	P25Minutes float64 `json:"p25Minutes"`
	P50Minutes float64 `json:"p50Minutes"`
	P75Minutes float64 `json:"p75Minutes"`
}

// EventInfo is the event that affects the room now.
type EventInfo struct {
	Name                string     `json:"name"`
	Phase               EventPhase `json:"phase"`
	PrequeueStartTime   *time.Time `json:"prequeue_start_time,omitempty"`
	EventStartTime      time.Time  `json:"event_start_time"`
	EventEndTime        time.Time  `json:"event_end_time"`
	ShuffleAtEventStart bool       `json:"shuffle_at_event_start,omitempty"`
}

// Snapshot is the room's global state for one minute: what every gate
// decides from. The room publishes one at each minute boundary (and again
// when its settings or an event change it), gates read it by query, cache
// it and decide locally.
type Snapshot struct {
	Room          string    `json:"room"`
	Seq           int64     `json:"seq"`    // grows with every publication
	Minute        time.Time `json:"minute"` // the minute whose slots this is
	MinuteSeconds int       `json:"minuteSeconds"`
	PublishedAt   time.Time `json:"publishedAt"`

	// Settings are the effective settings (event overrides applied), without
	// custom_page_html: fetch the settings again when SettingsVersion changes.
	SettingsVersion int64      `json:"settingsVersion"`
	Settings        Settings   `json:"settings"`
	Event           *EventInfo `json:"event,omitempty"`
	Status          Status     `json:"status"`

	ActiveUsers    int     `json:"activeUsers"`
	SlotsAvailable int     `json:"slotsAvailable"` // min(total_active_users - activeUsers, new_users_per_minute)
	NewUserSlots   int     `json:"newUserSlots"`   // what the FIFO reservations leave
	Utilization    float64 `json:"utilization"`    // max(active/total, admitted last minute/per minute), 0..1

	Buckets          []Bucket       `json:"buckets"` // oldest first
	CurrentlyWaiting int            `json:"currentlyWaiting"`
	TrafficHistory   []TrafficShare `json:"trafficHistory"` // the previous minute, by data center
	AnywhereShare    float64        `json:"anywhereShare"`
	GatesActive      int            `json:"globalWorkersActive"`

	Pools []Pool `json:"pools"`
	// PacedRelease: random queueing with visitors waiting releases the slots
	// at random moments through the minute (PacedLimit), so no check-in
	// moment is favoured.
	PacedRelease bool `json:"pacedRelease,omitempty"`
	// StaleFreed is how many visitors gates still deciding on this
	// snapshot in the next minute may admit in the place of sessions
	// counted at this minute's start that have ended since (TakeFreed on a
	// stale snapshot); the room holds as much of the next minute's slots
	// for them. 0: none.
	StaleFreed int `json:"staleFreed,omitempty"`
	// Shuffled buckets count as their From bucket: an event's pre-queue,
	// shuffled at its start.
	Shuffled []TimeRange `json:"shuffled,omitempty"`

	LetInPerMinute float64  `json:"letInPerMinute"`
	Estimate       Estimate `json:"estimate"`
}

// MinuteLength is the length of the room's minute.
func (s *Snapshot) MinuteLength() time.Duration {
	if s.MinuteSeconds <= 0 {
		return time.Minute
	}
	return time.Duration(s.MinuteSeconds) * time.Second
}

// MaxAge is how long gates may decide on this snapshot before they queue
// every new visitor: the setting, but at least a minute and a half, since
// a healthy room publishes once a minute.
func (s *Snapshot) MaxAge() time.Duration {
	return max(time.Duration(s.Settings.SnapshotMaxAgeSeconds)*time.Second, s.MinuteLength()*3/2)
}

// Stale reports whether the snapshot is too old to admit new visitors at now.
func (s *Snapshot) Stale(now time.Time) bool { return now.Sub(s.PublishedAt) > s.MaxAge() }

// Pool returns the pool of bucket (zero time: new visitors), or nil.
func (s *Snapshot) Pool(bucket time.Time) *Pool {
	i, ok := slices.BinarySearchFunc(s.Pools, bucket, func(p Pool, b time.Time) int { return p.Bucket.Compare(b) })
	if !ok {
		return nil
	}
	return &s.Pools[i]
}

// BucketOf maps a visitor's bucket through the shuffled ranges.
func (s *Snapshot) BucketOf(b time.Time) time.Time {
	for _, r := range s.Shuffled {
		if r.Contains(b) {
			return r.From
		}
	}
	return b
}

// ReleaseSeed seeds the schedule of release moments of a scope of a pool in
// a random queue in a minute (PacedLimit): every gate computes the same one
// from the snapshot, and it changes every minute.
func (s *Snapshot) ReleaseSeed(minute time.Time, pool, scope string) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(s.Room))
	_, _ = h.Write(binary.BigEndian.AppendUint64([]byte{0}, uint64(minute.UnixMilli())))
	_, _ = h.Write([]byte(pool + "\x00" + scope))
	return h.Sum64()
}

// InTurn reports whether a queued visitor of bucket (mapped by BucketOf)
// with lot (Input.Lot) may take a slot now. In a FIFO room, an event's
// pre-queue shuffled at its start ("shuffle_at_event_start") gives each of
// its visitors a random position (ShufflePosition), and only those whose
// position's turn has come may take the bucket's slots: the order is the
// draw's, not who checks in first. Everyone else is always in turn.
func (s *Snapshot) InTurn(bucket time.Time, lot uint64) bool {
	if s.Settings.QueueingMethod != FIFO || !slices.ContainsFunc(s.Shuffled, func(r TimeRange) bool { return r.From.Equal(bucket) }) {
		return true
	}
	for _, b := range s.Buckets {
		if b.Key.Equal(bucket) {
			return ShufflePosition(lot, bucket) < b.Turn()
		}
	}
	return true // no longer counted as waiting: nothing keeps it from a slot
}

// ShufflePosition is a visitor's place in the shuffled pre-queue that
// starts at from, as a share of the line, [0, 1): random and fixed for as
// long as the visitor keeps its ticket, different in each event.
func ShufflePosition(lot uint64, from time.Time) float64 {
	x := splitMix64(lot ^ splitMix64(uint64(from.UnixMilli())))
	return float64(x>>11) / (1 << 53)
}

// Position is how many visitors wait in buckets up to and including b: the
// place in line of the last visitor of b.
func (s *Snapshot) Position(b time.Time) int {
	n := 0
	for _, bk := range s.Buckets {
		if bk.Key.After(b) {
			break
		}
		n += bk.Waiting
	}
	return n
}

// Gates counts the gates of a data center that reported last minute, and
// all of them, each counting g itself if it was not among them.
func (s *Snapshot) Gates(g Gate) (inDataCenter, global int) {
	global = s.GatesActive
	known := false
	for _, t := range s.TrafficHistory {
		if t.DataCenter == g.DataCenter {
			inDataCenter = max(len(t.Gates), t.DataCenterWorkersActive) // rooms before it had only Gates
			_, known = slices.BinarySearch(t.Gates, g.ID)
		}
	}
	if !known {
		inDataCenter++
		global++
	}
	return inDataCenter, global
}

// StatusAPI is Cloudflare Waiting Room's status API answer.
type StatusAPI struct {
	Status                    Status `json:"status"`
	EventID                   string `json:"event_id"`
	EstimatedQueuedUsers      int    `json:"estimated_queued_users"`
	EstimatedTotalActiveUsers int    `json:"estimated_total_active_users"`
	MaxEstimatedTimeMinutes   int    `json:"max_estimated_time_minutes"`
}

// StatusAPI answers the status API from a snapshot.
func (s *Snapshot) StatusAPI() StatusAPI {
	out := StatusAPI{Status: s.Status, EstimatedQueuedUsers: s.CurrentlyWaiting, EstimatedTotalActiveUsers: s.ActiveUsers}
	if s.Event != nil {
		out.EventID = s.Event.Name
	}
	if s.Estimate.Known && s.CurrentlyWaiting > 0 {
		out.MaxEstimatedTimeMinutes = ceilMinutes(s.Estimate.MaxMinutes)
	}
	return out
}

// String is a one-line summary for logs and the Web UI.
func (s *Snapshot) String() string {
	line := fmt.Sprintf("%s: %d/%d active, %d slots this minute, %d waiting, %s", s.Status, s.ActiveUsers,
		s.Settings.TotalActiveUsers, s.SlotsAvailable, s.CurrentlyWaiting, s.Settings.QueueingMethod)
	if s.Estimate.Known && s.CurrentlyWaiting > 0 {
		line += ", max wait " + strconv.Itoa(ceilMinutes(s.Estimate.MaxMinutes)) + " min"
	}
	if s.Event != nil {
		line += ", event " + s.Event.Name + " " + string(s.Event.Phase)
	}
	return line
}
