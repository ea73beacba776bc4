package admit

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
)

// MinuteTotals is what all gates counted in one minute.
type MinuteTotals struct {
	Minute            time.Time `json:"minute"`
	Reports           int       `json:"reports,omitempty"`
	NewVisitors       int       `json:"newVisitors,omitempty"`
	Admitted          int       `json:"admitted,omitempty"`
	AdmittedFromQueue int       `json:"admittedFromQueue,omitempty"`
	EarlyRefreshes    int       `json:"earlyRefreshes,omitempty"`
	Closed            int       `json:"closed,omitempty"`
	Revocations       int       `json:"revocations,omitempty"`
	// Sessions counted in this minute are Entered - Left: Entered are those
	// admitted or renewed in it, Left those that renewed into a later minute
	// or were revoked since.
	Entered int         `json:"entered,omitempty"`
	Left    int         `json:"left,omitempty"`
	Taken   []PoolCount `json:"taken,omitempty"`
	// Unreported are the slots the shared counters handed out in the minute
	// beyond what the gates' reports count: admissions of a gate that died
	// before it reported them. They are counted in Admitted, Entered and
	// Taken too.
	Unreported int `json:"unreported,omitempty"`

	// Only for minutes still open (computed from their reports):
	Queued      []MinuteCount     `json:"-"`
	DataCenters []DataCenterUsers `json:"-"`
}

// Ledger keeps a room's reports: the newest report of each gate for the
// minutes still open (the current and the previous one), and totals of a
// bounded window of closed minutes, enough for the longest session. Its JSON
// form is what a room carries across continue-as-new.
type Ledger struct {
	Closed       []MinuteTotals `json:"closed,omitempty"` // oldest first
	Open         []Report       `json:"open,omitempty"`   // by minute, data center, gate
	ClosedBefore time.Time      `json:"closedBefore,omitzero"`
	Dropped      int            `json:"dropped,omitempty"` // reports too late for their minute
	// Reports a bounded room dropped (AddBounded): from reporters beyond
	// max_reporters_per_minute, and beyond MaxMinuteReportBytes.
	OverReporters int `json:"overReporters,omitempty"`
	OverBytes     int `json:"overBytes,omitempty"`
}

// MaxMinuteReportBytes bounds the JSON of one minute's reports, all
// reporters together, in a bounded room: a room carries up to three open
// minutes across continue-as-new, in one payload under 1 MiB with its
// settings and pages (see MaxPageBytes).
const MaxMinuteReportBytes = 64 << 10

// BoundError is what AddBounded refuses a report with.
type BoundError struct{ Reason string }

func (e *BoundError) Error() string { return e.Reason }

// AddBounded is Add for a room that bounds what a minute holds: a report
// from a reporter (gate process) new to its minute once the minute has
// maxReporters is dropped and counted in OverReporters, and one that would
// take the minute's reports past MaxMinuteReportBytes of JSON together is
// dropped and counted in OverBytes (a gate's newer report then leaves its
// older one in place). Nothing is ever stored in part.
func (l *Ledger) AddBounded(r Report, maxReporters int) (bool, error) {
	if r.Minute.Before(l.ClosedBefore) {
		l.Dropped++
		return false, nil
	}
	i, found := slices.BinarySearchFunc(l.Open, r, compareReports)
	if found && l.Open[i].Seq >= r.Seq {
		return false, nil
	}
	from, _ := slices.BinarySearchFunc(l.Open, r.Minute, func(o Report, m time.Time) int { return o.Minute.Compare(m) })
	to := from
	bytes := 0
	for to < len(l.Open) && l.Open[to].Minute.Equal(r.Minute) {
		if to != i || !found {
			bytes += reportSize(&l.Open[to])
		}
		to++
	}
	if !found && to-from >= maxReporters {
		l.OverReporters++
		return false, &BoundError{fmt.Sprintf("minute %s already has reports of %d gates (max_reporters_per_minute)", r.Minute.Format(time.RFC3339), to-from)}
	}
	if bytes+reportSize(&r) > MaxMinuteReportBytes {
		l.OverBytes++
		return false, &BoundError{fmt.Sprintf("minute %s's reports would hold %d bytes together, at most %d", r.Minute.Format(time.RFC3339), bytes+reportSize(&r), MaxMinuteReportBytes)}
	}
	if found {
		l.Open[i] = r
	} else {
		l.Open = slices.Insert(l.Open, i, r)
	}
	return true, nil
}

// reportSize measures a report's JSON once.
func reportSize(r *Report) int {
	if r.size == 0 {
		b, _ := json.Marshal(r)
		r.size = len(b)
	}
	return r.size
}

func compareReports(a, b Report) int {
	return cmp.Or(a.Minute.Compare(b.Minute), strings.Compare(a.DataCenter, b.DataCenter), strings.Compare(a.Gate, b.Gate),
		cmp.Compare(a.Incarnation, b.Incarnation))
}

// Add keeps r unless the ledger already has a newer report of the same gate
// and minute, or the minute is closed. It reports whether r was kept.
func (l *Ledger) Add(r Report) bool {
	if r.Minute.Before(l.ClosedBefore) {
		l.Dropped++
		return false
	}
	i, found := slices.BinarySearchFunc(l.Open, r, compareReports)
	if found {
		if l.Open[i].Seq >= r.Seq {
			return false
		}
		l.Open[i] = r
		return true
	}
	l.Open = slices.Insert(l.Open, i, r)
	return true
}

// Close folds the reports of minutes before `before` into closed totals and
// forgets closed minutes before keepFrom. Reports of folded minutes that
// arrive later are dropped.
func (l *Ledger) Close(before, keepFrom time.Time) {
	n := 0
	for n < len(l.Open) && l.Open[n].Minute.Before(before) {
		n++
	}
	for _, r := range l.Open[:n] {
		t := l.closedAt(r.Minute, true)
		addReport(t, r)
		for _, c := range r.Renewed {
			if s := l.closedAt(c.Minute, !c.Minute.Before(keepFrom)); s != nil {
				s.Left += c.Count
			}
		}
		for _, c := range r.Revoked {
			if s := l.closedAt(c.Minute, !c.Minute.Before(keepFrom)); s != nil {
				s.Left += c.Count
			}
		}
	}
	for _, group := range byMinute(l.Open[:n]) {
		addUnreported(l.closedAt(group[0].Minute, true), unreported(group))
	}
	l.Open = slices.Delete(l.Open, 0, n)
	if before.After(l.ClosedBefore) {
		l.ClosedBefore = before
	}
	l.Closed = slices.DeleteFunc(l.Closed, func(t MinuteTotals) bool { return t.Minute.Before(keepFrom) })
}

// closedAt finds (or, with create, makes) the closed totals of a minute.
func (l *Ledger) closedAt(m time.Time, create bool) *MinuteTotals {
	i, found := slices.BinarySearchFunc(l.Closed, m, func(t MinuteTotals, m time.Time) int { return t.Minute.Compare(m) })
	if !found {
		if !create {
			return nil
		}
		l.Closed = slices.Insert(l.Closed, i, MinuteTotals{Minute: m})
	}
	return &l.Closed[i]
}

// addReport adds a report's own-minute counts to t.
func addReport(t *MinuteTotals, r Report) {
	t.Reports++
	t.NewVisitors += r.NewVisitors
	t.Admitted += r.Admitted
	t.AdmittedFromQueue += r.AdmittedFromQueue
	t.EarlyRefreshes += r.EarlyRefreshes
	t.Closed += r.Closed
	t.Entered += r.Admitted
	for _, c := range r.Renewed {
		t.Entered += c.Count
	}
	for _, c := range r.Revoked {
		t.Revocations += c.Count
	}
	for _, p := range r.Taken {
		t.Taken = addTaken(t.Taken, p)
	}
}

// addTaken adds slots of a pool's scope to a sorted list.
func addTaken(taken []PoolCount, p PoolCount) []PoolCount {
	i, found := slices.BinarySearchFunc(taken, p, comparePoolScope)
	if found {
		taken[i].Count += p.Count
		return taken
	}
	return slices.Insert(taken, i, p)
}

// largestReadings merges readings into store (sorted by pool and scope),
// keeping each counter's largest reading.
func largestReadings(store, readings []PoolCount) []PoolCount {
	for _, p := range readings {
		i, found := slices.BinarySearchFunc(store, p, comparePoolScope)
		switch {
		case !found:
			store = slices.Insert(store, i, p)
		case p.Count > store[i].Count:
			store[i].Count = p.Count
		}
	}
	return store
}

// unreported is what the shared counters handed out in a minute beyond
// what its reports (all of that minute) count, by pool and scope. Gates
// read the counters once the minute is over (Report.StoreTaken); the
// largest reading of a counter is the most it is known to have handed out.
// It exceeds the reports' takes, and the takes whose answer a gate lost
// (Report.Unsure), only by the admissions of a gate that died before
// reporting them. A report that arrives later lowers it again, so nothing
// is counted twice.
func unreported(reports []Report) []PoolCount {
	var store []PoolCount // the largest reading of each counter
	for _, r := range reports {
		store = largestReadings(store, r.StoreTaken)
	}
	var extra []PoolCount
	for _, s := range store {
		reported := 0
		for _, r := range reports {
			for _, list := range [][]PoolCount{r.Taken, r.Unsure} {
				for _, p := range list {
					if comparePoolScope(p, s) == 0 {
						reported += p.Count
					}
				}
			}
		}
		if s.Count > reported {
			extra = append(extra, PoolCount{Pool: s.Pool, Scope: s.Scope, Count: s.Count - reported})
		}
	}
	return extra
}

// addUnreported counts slots no report counts as admissions of the minute.
func addUnreported(t *MinuteTotals, extra []PoolCount) {
	for _, p := range extra {
		t.Unreported += p.Count
		t.Admitted += p.Count
		t.Entered += p.Count
		t.Taken = addTaken(t.Taken, p)
	}
}

// byMinute splits reports sorted by minute into one group per minute.
func byMinute(reports []Report) [][]Report {
	var groups [][]Report
	for i := 0; i < len(reports); {
		j := i + 1
		for j < len(reports) && reports[j].Minute.Equal(reports[i].Minute) {
			j++
		}
		groups = append(groups, reports[i:j])
		i = j
	}
	return groups
}

// openOf returns the open reports of minute m.
func (l *Ledger) openOf(m time.Time) []Report {
	for _, group := range byMinute(l.Open) {
		if group[0].Minute.Equal(m) {
			return group
		}
	}
	return nil
}

func comparePoolScope(a, b PoolCount) int {
	return cmp.Or(strings.Compare(a.Pool, b.Pool), strings.Compare(a.Scope, b.Scope))
}

// Totals is what the gates counted in minute m: the closed totals, or the
// sum of its open reports, with the waiting visitors by bucket and the users
// by data center.
func (l *Ledger) Totals(m time.Time) MinuteTotals {
	if t := l.closedAt(m, false); t != nil {
		out := *t
		out.Taken = slices.Clone(t.Taken)
		return out
	}
	out := MinuteTotals{Minute: m}
	var queued []MinuteCount
	for _, r := range l.Open {
		if !r.Minute.Equal(m) {
			continue
		}
		addReport(&out, r)
		for _, q := range r.Queued {
			i, found := slices.BinarySearchFunc(queued, q.Minute, func(c MinuteCount, m time.Time) int { return c.Minute.Compare(m) })
			if found {
				queued[i].Count += q.Count
			} else {
				queued = slices.Insert(queued, i, q)
			}
		}
		// Open reports are sorted by data center, then gate.
		if n := len(out.DataCenters); n == 0 || out.DataCenters[n-1].DataCenter != r.DataCenter {
			out.DataCenters = append(out.DataCenters, DataCenterUsers{DataCenter: r.DataCenter})
		}
		dc := &out.DataCenters[len(out.DataCenters)-1]
		dc.Users += r.Seen
		dc.Gates = append(dc.Gates, r.Gate)
		if r.Gates > 1 {
			dc.Aggregated += r.Gates - 1
		}
	}
	addUnreported(&out, unreported(l.openOf(m)))
	out.Queued = queued
	// Left counts of open minutes come from later open reports.
	for _, r := range l.Open {
		for _, c := range r.Renewed {
			if c.Minute.Equal(m) {
				out.Left += c.Count
			}
		}
		for _, c := range r.Revoked {
			if c.Minute.Equal(m) {
				out.Left += c.Count
			}
		}
	}
	return out
}

// Sessions counts the sessions whose minute is in [from, to): admitted or
// renewed in it, and not renewed or revoked in a later minute before to.
// (Sessions renewed in `to` itself or later still count where they were:
// the count is of the sessions alive when `to` began.)
func (l *Ledger) Sessions(from, to time.Time) int {
	n := 0
	for _, t := range l.Closed {
		if !t.Minute.Before(from) && t.Minute.Before(to) {
			n += t.Entered - t.Left
		}
	}
	in := func(m time.Time) bool { return !m.Before(from) && m.Before(to) }
	for _, r := range l.Open {
		if !r.Minute.Before(to) {
			continue
		}
		if in(r.Minute) {
			n += r.Admitted
			for _, c := range r.Renewed {
				n += c.Count
			}
		}
		for _, c := range r.Renewed {
			if in(c.Minute) {
				n -= c.Count
			}
		}
		for _, c := range r.Revoked {
			if in(c.Minute) {
				n -= c.Count
			}
		}
	}
	for _, group := range byMinute(l.Open) {
		if in(group[0].Minute) {
			for _, p := range unreported(group) {
				n += p.Count
			}
		}
	}
	return max(n, 0)
}

// Final reports whether every gate that counts in minute m has said it
// will count nothing more there: each gate with a report of m, and each
// gate with a report of the minute before (prev) that was not leaving, has
// a final report of m. Only open minutes are checked.
func (l *Ledger) Final(prev, m time.Time) bool {
	type gateKey struct {
		dc, gate    string
		incarnation uint64
	}
	final := map[gateKey]bool{} // only looked up, never ranged over
	for _, r := range l.Open {
		if r.Minute.Equal(m) {
			if !r.Final {
				return false
			}
			final[gateKey{r.DataCenter, r.Gate, r.Incarnation}] = true
		}
	}
	for _, r := range l.Open {
		if r.Minute.Equal(prev) && !r.Leaving && !final[gateKey{r.DataCenter, r.Gate, r.Incarnation}] {
			return false
		}
	}
	return true
}

// Reported says whether minute m has a report (open or closed).
func (l *Ledger) Reported(m time.Time) bool {
	if l.closedAt(m, false) != nil {
		return true
	}
	_, found := slices.BinarySearchFunc(l.Open, m, func(o Report, m time.Time) int { return o.Minute.Compare(m) })
	return found
}

// Taken is how many slots of a pool's scope the gates took in minute m.
func (t MinuteTotals) TakenFrom(pool, scope string) int {
	i, found := slices.BinarySearchFunc(t.Taken, PoolCount{Pool: pool, Scope: scope}, comparePoolScope)
	if !found {
		return 0
	}
	return t.Taken[i].Count
}
