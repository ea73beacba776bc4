package admit

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
)

// The live view: what a room's gates count in the current minute, within
// seconds, beside the minute rollup (the snapshot), which stays the record.
// Each data center's aggregator (the gate holding its lease) sums its
// gates' counts of the current minute every second (LiveCounts) and writes
// them into the Anywhere Redis under LiveKey, stamped with that Redis's
// clock; readers (room status, room list, the console) read them there and
// put them together with the room's snapshot (LiveView). Nothing of it
// goes through the room workflow: a room's history grows with its minutes,
// not with how often someone looks.

// LiveMaxAge is how old a data center's live counts may be and still be
// shown as live: its aggregator writes them every second from counts its
// gates write every two; older ones are marked stale.
const LiveMaxAge = 5 * time.Second

// LiveForget is how long a data center's live counts are kept after its
// aggregator last wrote them (the data center is shown stale until then,
// then left out): its gates have gone, or its Redis is down for long.
const LiveForget = 5 * time.Minute

// LiveKey is the Redis hash of a room's live view: one field per data
// center, its LiveCounts.
func LiveKey(room string) string { return "admit/" + room + "/live" }

// LiveCounts is one data center's counts of the current minute so far.
type LiveCounts struct {
	DataCenter string    `json:"dataCenter"`
	Minute     time.Time `json:"minute"`
	// Gates is how many gate processes' counts of the minute it sums.
	Gates int `json:"gates"`
	// Admitted is the visitors admitted in the minute so far.
	Admitted int `json:"admitted"`
	// Active is the distinct sessions seen in the minute so far (those
	// admitted in it included).
	Active int `json:"active"`
	// Queued is the visitors waiting: by bucket, those counted waiting
	// this minute or, if more, those counted in the minute before (a
	// waiting visitor checks in once a refresh interval, so a minute's
	// count grows through it), less those let in from the queue since.
	Queued      int `json:"queued"`
	NewVisitors int `json:"newVisitors"`
	// AsOf is when the counts reached Redis, on its clock (not in the
	// JSON: Redis stamps it).
	AsOf time.Time `json:"-"`
}

// LiveDataCenter sums a data center's gates' reports of minute (cur, the
// newest of each gate process) into its live counts; prev are the same
// gates' reports of the minute before.
func LiveDataCenter(dataCenter string, minute time.Time, prev, cur []Report) LiveCounts {
	out := LiveCounts{DataCenter: dataCenter, Minute: minute}
	counted := map[int64]int{} // waiting by bucket, this minute
	before := map[int64]int{}  // and the minute before
	var gates []string
	fromQueue := 0
	for _, r := range cur {
		out.Admitted += r.Admitted
		out.Active += r.Seen
		out.NewVisitors += r.NewVisitors
		fromQueue += r.AdmittedFromQueue
		addMinuteCounts(counted, r.Queued)
		if i, found := slices.BinarySearch(gates, r.Gate); !found {
			gates = slices.Insert(gates, i, r.Gate)
		}
	}
	for _, r := range prev {
		addMinuteCounts(before, r.Queued)
	}
	seen, carried := 0, 0
	for b, n := range counted {
		seen += max(n, 0)
		carried += max(n, before[b], 0)
	}
	for b, n := range before {
		if _, ok := counted[b]; !ok {
			carried += max(n, 0)
		}
	}
	// Those let in from the queue after being counted this minute are out
	// of its count already: the minute's own count is the floor.
	out.Queued = max(seen, carried-fromQueue)
	out.Gates = len(gates)
	return out
}

// Live is a room's live view, as room status, room list, the API and the
// console show it (JSON in the status API's style).
type Live struct {
	// AsOf is the time of the oldest data center's counts in the totals
	// (absent without any); AgeSeconds how old they were when read.
	AsOf       *time.Time `json:"as_of,omitempty"`
	AgeSeconds float64    `json:"age_seconds"`
	// Stale is true when the totals are not all at most MaxAgeSeconds old:
	// no data center has fresh counts, one is stale (left out of the
	// totals), or the view could not be read (Error).
	Stale         bool      `json:"stale"`
	MaxAgeSeconds int       `json:"max_age_seconds"`
	Minute        time.Time `json:"minute,omitzero"`
	// ActiveUsers is the snapshot's active users plus those admitted since
	// (sessions that ended since count until the next minute's rollup).
	ActiveUsers          int `json:"active_users"`
	QueuedUsers          int `json:"queued_users"`
	AdmittedThisMinute   int `json:"admitted_this_minute"`
	EstimatedWaitMinutes int `json:"estimated_wait_minutes"`
	// DataCenters are every data center heard from in the last
	// LiveForget, by name, each marked stale past LiveMaxAge.
	DataCenters []LiveDataCenterView `json:"data_centers"`
	Error       string               `json:"error,omitempty"`
}

// LiveDataCenterView is one data center's part of the live view.
type LiveDataCenterView struct {
	DataCenter         string    `json:"data_center"`
	AsOf               time.Time `json:"as_of"`
	AgeSeconds         float64   `json:"age_seconds"`
	Stale              bool      `json:"stale"`
	Minute             time.Time `json:"minute"`
	Gates              int       `json:"gates"`
	ActiveUsers        int       `json:"active_users"`
	QueuedUsers        int       `json:"queued_users"`
	AdmittedThisMinute int       `json:"admitted_this_minute"`
}

// LiveUnavailable is the live view that could not be read, and why: stale,
// with no figures.
func LiveUnavailable(reason string) *Live {
	return &Live{Stale: true, MaxAgeSeconds: int(LiveMaxAge / time.Second), DataCenters: []LiveDataCenterView{}, Error: reason}
}

// LiveView puts a room's data centers' live counts together with its
// snapshot at now (the clock the counts were stamped on). Counts older
// than LiveMaxAge, or of another minute than the newest, are listed as
// stale and left out of the totals; those older than LiveForget are left
// out altogether.
func LiveView(snap *Snapshot, counts []LiveCounts, now time.Time) *Live {
	out := &Live{MaxAgeSeconds: int(LiveMaxAge / time.Second), DataCenters: []LiveDataCenterView{}}
	var minute time.Time
	for _, c := range counts {
		if now.Sub(c.AsOf) <= LiveMaxAge && c.Minute.After(minute) {
			minute = c.Minute
		}
	}
	var oldest time.Time
	for _, c := range counts {
		age := now.Sub(c.AsOf)
		if age > LiveForget {
			continue
		}
		v := LiveDataCenterView{DataCenter: c.DataCenter, AsOf: c.AsOf.UTC(), AgeSeconds: seconds(age), Minute: c.Minute.UTC(),
			Gates: c.Gates, ActiveUsers: c.Active, QueuedUsers: c.Queued, AdmittedThisMinute: c.Admitted,
			Stale: age > LiveMaxAge || !c.Minute.Equal(minute)}
		out.DataCenters = append(out.DataCenters, v)
		if v.Stale {
			out.Stale = true
			continue
		}
		out.QueuedUsers += c.Queued
		out.AdmittedThisMinute += c.Admitted
		if oldest.IsZero() || c.AsOf.Before(oldest) {
			oldest = c.AsOf
		}
	}
	slices.SortFunc(out.DataCenters, func(a, b LiveDataCenterView) int { return strings.Compare(a.DataCenter, b.DataCenter) })
	if oldest.IsZero() {
		out.Stale = true
		if out.Error == "" {
			out.Error = "no data center has written live counts in the last " + fmt.Sprint(LiveMaxAge) +
				" (no gate with a data center Redis reports this room, or their Redis is down)"
		}
	} else {
		asOf := oldest.UTC()
		out.AsOf, out.AgeSeconds, out.Minute = &asOf, seconds(now.Sub(oldest)), minute.UTC()
	}
	if snap == nil {
		return out
	}
	out.ActiveUsers = snap.ActiveUsers + out.AdmittedThisMinute
	out.EstimatedWaitMinutes = liveWait(snap, out.QueuedUsers)
	return out
}

// liveWait is the status API's max_estimated_time_minutes for queued
// visitors waiting at the snapshot's rate of letting them in.
func liveWait(snap *Snapshot, queued int) int {
	if queued <= 0 || snap.Settings.QueueAll || snap.Status == StatusEventPrequeueing || snap.Status == StatusSuspended {
		return 0
	}
	e := Estimates(snap.Settings.QueueingMethod, snap.LetInPerMinute, queued)
	if !e.Known {
		return 0
	}
	return ceilMinutes(e.MaxMinutes)
}

func seconds(d time.Duration) float64 {
	return float64(max(d, 0).Round(100*time.Millisecond)) / float64(time.Second)
}

// maxLiveCount bounds a count read from Redis: no room counts more.
const maxLiveCount = 1 << 30

// ParseLiveCounts reads one field of a room's live hash (LiveKey): the
// data center's name, and "stamp|counts" where stamp is the Unix
// milliseconds Redis stamped it with and counts the LiveCounts' JSON. A
// value that does not parse, names another data center, or holds a
// negative or impossible count is refused, saying why.
func ParseLiveCounts(field, value string) (LiveCounts, error) {
	var c LiveCounts
	stamp, body, ok := strings.Cut(value, "|")
	var ms int64
	if _, err := fmt.Sscan(stamp, &ms); !ok || err != nil || ms <= 0 {
		return c, fmt.Errorf("live counts of %q: no time stamp", field)
	}
	if err := json.Unmarshal([]byte(body), &c); err != nil {
		return c, fmt.Errorf("live counts of %q: %v", field, err)
	}
	switch {
	case c.DataCenter != field || !validLabel(field):
		return c, fmt.Errorf("live counts of %q: name data center %q", field, c.DataCenter)
	case c.Minute.IsZero():
		return c, fmt.Errorf("live counts of %q: no minute", field)
	}
	for _, n := range []int{c.Gates, c.Admitted, c.Active, c.Queued, c.NewVisitors} {
		if n < 0 || n > maxLiveCount {
			return c, fmt.Errorf("live counts of %q: count %d out of range", field, n)
		}
	}
	c.AsOf = time.UnixMilli(ms).UTC()
	return c, nil
}

// LiveStatus is the status API's answer with the room's live view beside
// it: `room status --json` and GET /api/v1/waiting_rooms/{name}/status.
// The status API's fields stay the minute rollup's.
type LiveStatus struct {
	StatusAPI
	Live *Live `json:"live"`
}
