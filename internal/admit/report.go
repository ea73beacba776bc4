package admit

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// MinuteCount counts something by minute (a bucket, or a session's minute).
type MinuteCount struct {
	Minute time.Time `json:"minute"`
	Count  int       `json:"count"`
}

// PoolCount counts slots taken from one scope of one pool.
type PoolCount struct {
	Pool  string `json:"pool"`
	Scope string `json:"scope"`
	Count int    `json:"count"`
}

// Report is what one gate counted in one minute, cumulative: a newer report
// (higher Seq) of the same gate and minute replaces the older one, so a lost
// or repeated report costs nothing. Gates send one every few seconds while
// the minute runs and a last one just after it ends, and at least one a
// minute even when idle, so the even split knows how many gates there are.
type Report struct {
	Room       string    `json:"room"`
	DataCenter string    `json:"dataCenter"`
	Gate       string    `json:"gate"`
	Minute     time.Time `json:"minute"`
	// Incarnation tells apart the processes that ran the gate under one
	// name (its start time): a restarted gate's counts of a minute add to
	// its earlier process's instead of replacing them.
	Incarnation uint64 `json:"incarnation,omitempty"`
	Seq         uint64 `json:"seq"`

	NewVisitors       int           `json:"newVisitors,omitempty"`
	Admitted          int           `json:"admitted,omitempty"`
	AdmittedFromQueue int           `json:"admittedFromQueue,omitempty"`
	Queued            []MinuteCount `json:"queued,omitempty"`             // net waiting visitors by bucket
	Seen              int           `json:"activeSessionsSeen,omitempty"` // distinct sessions seen this minute
	Renewed           []MinuteCount `json:"renewed,omitempty"`            // sessions moved into this minute, by the minute they left
	Revoked           []MinuteCount `json:"revoked,omitempty"`            // sessions the origin ended, by their minute
	EarlyRefreshes    int           `json:"earlyRefreshesIgnored,omitempty"`
	Closed            int           `json:"closed,omitempty"`
	Taken             []PoolCount   `json:"taken,omitempty"` // slots by pool and scope
	// StoreTaken is, in a final report, what the shared counters the gate
	// reads had handed out in the minute once it was over, by pool and
	// scope, whoever took the slots: the room counts what is beyond every
	// report's Taken (the admissions of a gate that died before reporting
	// them). Empty without shared counters.
	StoreTaken []PoolCount `json:"storeTaken,omitempty"`
	// Unsure are the takes whose answer the gate did not get (TakeError):
	// slots the store may have counted that nobody was admitted to.
	Unsure []PoolCount `json:"unsure,omitempty"`
	// Final says the gate will count nothing more in this minute: it ended
	// on the gate's clock and every decision made in it has been counted.
	// Leaving says the gate is shutting down and reports no later minute.
	Final   bool `json:"final,omitempty"`
	Leaving bool `json:"leaving,omitempty"`
	// Gates is set on a data center's aggregated report (Aggregate, under
	// the gate name AggregateGate): the number of gates whose counts it
	// sums, which the even split counts. Zero on a gate's own report.
	Gates int `json:"gates,omitempty"`

	size int // its JSON's length, once a bounded ledger measured it
}

// Report limits, so one malformed report cannot bloat a room's state.
const (
	maxReportEntries = 2000
	maxNameLength    = 64
	// maxAggregatedGates bounds what one aggregated report may claim to
	// sum, so a bad one cannot shrink every gate's even share to nothing.
	maxAggregatedGates = 100000
)

// Validate checks a report before a room accepts it.
func (r Report) Validate(room string, minute time.Duration) error {
	switch {
	case r.Room != room:
		return fmt.Errorf("report for room %q sent to room %q", r.Room, room)
	case !validLabel(r.DataCenter):
		return fmt.Errorf("report: data center %q must be 1-%d letters, digits, '.', '_' or '-'", r.DataCenter, maxNameLength)
	case !validLabel(r.Gate):
		return fmt.Errorf("report: gate %q must be 1-%d letters, digits, '.', '_' or '-'", r.Gate, maxNameLength)
	case r.Minute.IsZero() || !MinuteOf(r.Minute, minute).Equal(r.Minute):
		return fmt.Errorf("report: minute %s is not the start of a minute", r.Minute)
	case r.NewVisitors < 0 || r.Admitted < 0 || r.AdmittedFromQueue < 0 || r.Seen < 0 || r.EarlyRefreshes < 0 || r.Closed < 0:
		return fmt.Errorf("report: negative count")
	case r.Gates < 0 || r.Gates > maxAggregatedGates:
		return fmt.Errorf("report: gates %d must be between 0 and %d", r.Gates, maxAggregatedGates)
	case len(r.Queued) > maxReportEntries || len(r.Renewed) > maxReportEntries || len(r.Revoked) > maxReportEntries || len(r.Taken) > maxReportEntries || len(r.StoreTaken) > maxReportEntries || len(r.Unsure) > maxReportEntries:
		return fmt.Errorf("report: more than %d entries in a list", maxReportEntries)
	}
	for _, l := range [][]MinuteCount{r.Renewed, r.Revoked} {
		for _, c := range l {
			if c.Count < 0 || !c.Minute.Before(r.Minute) {
				return fmt.Errorf("report: a session entry must count up and name an earlier minute")
			}
		}
	}
	for _, c := range r.Queued {
		if c.Minute.After(r.Minute) {
			return fmt.Errorf("report: bucket %s is after the report's minute", c.Minute)
		}
	}
	for _, t := range slices.Concat(r.Taken, r.StoreTaken, r.Unsure) {
		if t.Count < 0 || (t.Scope != Anywhere && !validLabel(t.Scope)) || t.Pool == "" || len(t.Pool) > maxNameLength {
			return fmt.Errorf("report: bad slot entry %+v", t)
		}
	}
	return nil
}

func validLabel(s string) bool {
	if s == "" || len(s) > maxNameLength {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("._-", c)) {
			return false
		}
	}
	return true
}

// ValidLabel reports whether s can name a data center or a gate.
func ValidLabel(s string) bool { return validLabel(s) }

// Tally adds up one gate's decisions into its reports, minute by minute.
// It is safe for concurrent use.
type Tally struct {
	mu      sync.Mutex
	room    string
	gate    Gate
	seq     uint64
	minutes []*tallyMinute // oldest first
	leaving bool
	// cur is the newest minute: Begin and End of a decision in it that
	// counts nothing (most requests of running sessions) take no lock.
	cur atomic.Pointer[tallyMinute]

	incarnation uint64
}

type tallyMinute struct {
	minute                                                             time.Time
	newVisitors, admitted, fromQueue, seen, earlyRefreshes, closedRoom int
	queued, renewed, revoked                                           map[int64]int // by Unix ms
	taken, unsure                                                      map[[2]string]int
	dirty                                                              bool
	storeTaken                                                         []PoolCount
	// deciding counts decisions begun in the minute, not yet counted, and
	// final says nothing more will be counted in it: atomic, for Begin's
	// and End's lock-free path (written under mu otherwise).
	deciding atomic.Int64
	final    atomic.Bool
}

// NewTally starts an empty tally for a gate of a room. incarnation tells
// this tally's reports from those of the gate's earlier processes (a gate
// passes its start time in microseconds), so that the room adds them up.
func NewTally(room string, gate Gate, incarnation uint64) *Tally {
	return &Tally{room: room, gate: gate, incarnation: incarnation}
}

func (t *Tally) at(m time.Time) *tallyMinute {
	i, ok := slices.BinarySearchFunc(t.minutes, m, func(e *tallyMinute, m time.Time) int { return e.minute.Compare(m) })
	if !ok {
		t.minutes = slices.Insert(t.minutes, i, &tallyMinute{minute: m, queued: map[int64]int{}, renewed: map[int64]int{},
			revoked: map[int64]int{}, taken: map[[2]string]int{}, unsure: map[[2]string]int{}})
		if i == len(t.minutes)-1 {
			t.cur.Store(t.minutes[i])
		}
	}
	return t.minutes[i]
}

// Begin reads the clock for a decision about to be made, in the minute
// of that length, and holds the minute open until End counts the decision:
// a minute is final only once every decision made in it is counted.
//
// In the newest minute it takes no lock: the decision is counted as begun
// before the clock is read, and Finish, which finalizes a minute only with
// none begun, cannot finalize it in between (the atomics are sequentially
// consistent); if the clock names another minute, or the minute is final
// already, it takes the lock as before.
func (t *Tally) Begin(clock func() time.Time, length time.Duration) (now, minute time.Time) {
	if m := t.cur.Load(); m != nil {
		m.deciding.Add(1)
		now = clock()
		minute = MinuteOf(now, length)
		if minute.Equal(m.minute) && !m.final.Load() {
			return now, minute
		}
		m.deciding.Add(-1)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	now = clock()
	minute = MinuteOf(now, length)
	t.at(minute).deciding.Add(1)
	return now, minute
}

// End counts the effect of a decision begun in minute (see Begin). One
// that counts nothing in the newest minute takes no lock.
func (t *Tally) End(minute time.Time, e Effect) {
	if m := t.cur.Load(); m != nil && e.Minute.IsZero() && m.minute.Equal(minute) {
		m.deciding.Add(-1)
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	m := t.at(minute)
	if m.deciding.Add(-1) < 0 {
		m.deciding.Store(0)
	}
	t.add(e)
}

// Add counts one decision's effect (a zero Effect counts nothing).
func (t *Tally) Add(e Effect) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.add(e)
}

func (t *Tally) add(e Effect) {
	if e.Minute.IsZero() {
		return
	}
	m := t.at(e.Minute)
	m.dirty = true
	if e.NewVisitor {
		m.newVisitors++
	}
	if e.Admitted {
		m.admitted++
		if e.FromQueue {
			m.fromQueue++
		}
		if e.Pool != "" {
			m.taken[[2]string{e.Pool, e.Scope}]++
		}
	}
	if e.Seen {
		m.seen++
	}
	if !e.Renewed.IsZero() {
		m.renewed[e.Renewed.UnixMilli()]++
	}
	if !e.Revoked.IsZero() {
		m.revoked[e.Revoked.UnixMilli()]++
	}
	if e.Waiting != 0 {
		m.queued[e.Bucket.UnixMilli()] += e.Waiting
	}
	if e.EarlyRefresh {
		m.earlyRefreshes++
	}
	if e.Closed {
		m.closedRoom++
	}
}

// Finish marks every minute before current final once no decision made in
// it is still being counted, so its next report tells the room so. It
// returns the minutes that became final, oldest first.
func (t *Tally) Finish(current time.Time) []time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	var finished []time.Time
	for _, m := range t.minutes {
		if m.minute.Before(current) && !m.final.Load() && m.deciding.Load() == 0 {
			m.final.Store(true)
			m.dirty = true
			finished = append(finished, m.minute)
		}
	}
	return finished
}

// Unsure counts a take whose answer the gate did not get (see TakeError).
func (t *Tally) Unsure(e *TakeError) {
	t.mu.Lock()
	defer t.mu.Unlock()
	m := t.at(e.Minute)
	m.unsure[[2]string{e.Pool, e.Scope}]++
	m.dirty = true
}

// StoreTaken records what the shared counters had handed out in a minute
// (Report.StoreTaken), for its next report.
func (t *Tally) StoreTaken(minute time.Time, taken []PoolCount) {
	t.mu.Lock()
	defer t.mu.Unlock()
	m := t.at(minute)
	m.storeTaken, m.dirty = slices.Clone(taken), true
}

// Leave marks every minute final and the gate as leaving (it is shutting
// down), so the room waits for none of its later reports.
func (t *Tally) Leave() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.leaving = true
	for _, m := range t.minutes {
		m.final.Store(true)
		m.dirty = true
	}
}

// Heartbeat makes sure the minute is reported even if nothing happened in it.
func (t *Tally) Heartbeat(minute time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.at(minute).dirty = true
}

// Pending returns a cumulative report of every minute that changed since the
// last call, each with a new sequence number, oldest first.
func (t *Tally) Pending() []Report {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []Report
	for _, m := range t.minutes {
		if m.dirty {
			m.dirty = false
			out = append(out, t.report(m))
		}
	}
	return out
}

// Report returns the cumulative report of a minute, without changing what
// is pending.
func (t *Tally) Report(minute time.Time) (Report, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	i, ok := slices.BinarySearchFunc(t.minutes, minute, func(e *tallyMinute, m time.Time) int { return e.minute.Compare(m) })
	if !ok {
		return Report{}, false
	}
	return t.report(t.minutes[i]), true
}

// Kept returns the counts of every minute the tally still keeps, oldest
// first, for status pages (sequence numbers are left at zero).
func (t *Tally) Kept() []Report {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]Report, 0, len(t.minutes))
	for _, m := range t.minutes {
		out = append(out, t.counts(m))
	}
	return out
}

// Forget drops the minutes before a time (already reported for good).
func (t *Tally) Forget(before time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	cur := t.cur.Load()
	t.minutes = slices.DeleteFunc(t.minutes, func(m *tallyMinute) bool {
		return m.minute.Before(before) && !m.dirty && m.deciding.Load() == 0 && m != cur
	})
}

// report is a minute's counts as the next report to send (numbered).
func (t *Tally) report(m *tallyMinute) Report {
	t.seq++
	r := t.counts(m)
	r.Seq = t.seq
	return r
}

// counts is a minute's counts, unnumbered.
func (t *Tally) counts(m *tallyMinute) Report {
	return Report{Room: t.room, DataCenter: t.gate.DataCenter, Gate: t.gate.ID, Minute: m.minute, Incarnation: t.incarnation,
		NewVisitors: m.newVisitors, Admitted: m.admitted, AdmittedFromQueue: m.fromQueue, Seen: m.seen,
		EarlyRefreshes: m.earlyRefreshes, Closed: m.closedRoom,
		Queued: minuteCounts(m.queued), Renewed: minuteCounts(m.renewed), Revoked: minuteCounts(m.revoked),
		Taken: poolCounts(m.taken), StoreTaken: slices.Clone(m.storeTaken), Unsure: poolCounts(m.unsure), Final: m.final.Load(), Leaving: t.leaving}
}

func minuteCounts(m map[int64]int) []MinuteCount {
	out := make([]MinuteCount, 0, len(m))
	for k, v := range m {
		if v != 0 {
			out = append(out, MinuteCount{Minute: fromMillis(k), Count: v})
		}
	}
	slices.SortFunc(out, func(a, b MinuteCount) int { return a.Minute.Compare(b.Minute) })
	return out
}

func poolCounts(m map[[2]string]int) []PoolCount {
	out := make([]PoolCount, 0, len(m))
	for k, v := range m {
		out = append(out, PoolCount{Pool: k[0], Scope: k[1], Count: v})
	}
	slices.SortFunc(out, func(a, b PoolCount) int {
		return cmp.Or(strings.Compare(a.Pool, b.Pool), strings.Compare(a.Scope, b.Scope))
	})
	return out
}
