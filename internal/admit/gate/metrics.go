package gate

import (
	"slices"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/edgeflow/edgeflow/internal/admit"
)

// outcomes are every decision a request can get, in the order of the
// metric's label values.
var outcomes = []admit.Outcome{admit.Pass, admit.Admit, admit.Queue, admit.Prequeue, admit.Closed, admit.Bypass}

// decisionCounts counts one room's decisions by outcome (outcomes' order).
type decisionCounts [6]atomic.Uint64

// requestTally counts decisions per room; its zero value is ready.
type requestTally struct{ rooms sync.Map } // room name → *decisionCounts

func (t *requestTally) add(room string, o admit.Outcome) {
	i := outcomeIndex(o)
	if i < 0 {
		return
	}
	c, ok := t.rooms.Load(room)
	if !ok {
		c, _ = t.rooms.LoadOrStore(room, new(decisionCounts))
	}
	c.(*decisionCounts)[i].Add(1)
}

func (t *requestTally) counts(room string) *decisionCounts {
	if c, ok := t.rooms.Load(room); ok {
		return c.(*decisionCounts)
	}
	return new(decisionCounts)
}

func outcomeIndex(o admit.Outcome) int {
	for i, x := range outcomes {
		if x == o {
			return i
		}
	}
	return -1
}

// fallbackTally counts, per room, the requests served the default page in
// place of a custom page, by reason (fallbackReasons' order); its zero
// value is ready.
type fallbackTally struct{ rooms sync.Map } // room name → *[3]atomic.Uint64

func (t *fallbackTally) add(room, reason string) {
	i := slices.Index(fallbackReasons, reason)
	if i < 0 {
		return
	}
	c, ok := t.rooms.Load(room)
	if !ok {
		c, _ = t.rooms.LoadOrStore(room, new([3]atomic.Uint64))
	}
	c.(*[3]atomic.Uint64)[i].Add(1)
}

func (t *fallbackTally) counts(room string) *[3]atomic.Uint64 {
	if c, ok := t.rooms.Load(room); ok {
		return c.(*[3]atomic.Uint64)
	}
	return new([3]atomic.Uint64)
}

var (
	fallbacksDesc = prometheus.NewDesc("edgeflow_gate_page_fallbacks_total",
		"Queued requests of a room served the default page in place of its custom page (the room's or its event's), by reason: size, the page rendered over 256 KiB; time, rendering took over 50 ms; error, it failed to render. A page that broke a bound is not rendered again for a minute.",
		[]string{"room", "reason"}, nil)
	requestsDesc = prometheus.NewDesc("edgeflow_gate_requests_total",
		"Requests this gate decided for a room, by outcome: admit is a visitor let in (a slot taken), pass a running session, queue and prequeue the waiting room page, closed a rejecting room, bypass a suspended one.",
		[]string{"room", "outcome"}, nil)
	waitingDesc = prometheus.NewDesc("edgeflow_room_waiting_visitors",
		"Visitors waiting in the room's queue, as of the room's snapshot (the queue length, every gate's).", []string{"room"}, nil)
	activeDesc = prometheus.NewDesc("edgeflow_room_active_users",
		"Admitted sessions running in the room, as of its snapshot.", []string{"room"}, nil)
	slotsDesc = prometheus.NewDesc("edgeflow_room_slots_available",
		"Slots the room's snapshot leaves for new visitors this minute.", []string{"room"}, nil)
	visitsOverflowDesc = prometheus.NewDesc("edgeflow_gate_visits_uncapped_total",
		"Session moves and waiting check-ins this gate counted without de-duplicating the visitor, because it remembered as many visitors of the room as it may (admit.DefaultVisitsCap): each such request counted as a visitor.", []string{"room"}, nil)
	visitsAloneDesc = prometheus.NewDesc("edgeflow_gate_visits_unsettled_total",
		"Visitors this gate counted in a minute without the shared store's word on whether another gate counted them first (the store failed): such a visitor may count at two gates.", []string{"room"}, nil)
	ageDesc = prometheus.NewDesc("edgeflow_gate_snapshot_age_seconds",
		"How old the room snapshot this gate decides on is (since the room published it); past the room's maximum age it spends nothing of its minute, and from the third minute after its own the outage's rules decide.", []string{"room"}, nil)
	revokedDesc = prometheus.NewDesc("edgeflow_gate_revoked_sessions",
		"Revoked sessions this gate holds for the room (its own and those read from the other gates), until they would have ended.", []string{"room"}, nil)
	revokedDroppedDesc = prometheus.NewDesc("edgeflow_gate_revocations_dropped_total",
		"Revocations this gate did not keep because it held the room's maximum already: those sessions ended, but a copy of their old cookie passes until they would have ended.", []string{"room"}, nil)
	revokedUnsentDesc = prometheus.NewDesc("edgeflow_gate_revocations_unsent",
		"Revocations made at this gate not yet written to Redis (it did not answer): they hold at this gate, and reach the others once written.", nil, nil)
	vanishedDesc = prometheus.NewDesc("edgeflow_gate_room_vanished",
		"1 while the room's workflow is gone without the room having been deleted (terminated or failed): the gate decides on its last snapshot, for 24 h or until the room is back or deleted.", []string{"room"}, nil)
)

// Collector exports the gate's metrics for Prometheus: per room it knows,
// its decisions by outcome (every outcome from the start, at zero until
// used), the requests served the default page in place of its custom page
// (by reason, at zero until used) and the room's queue, sessions, free
// slots and snapshot age, read when scraped.
func (g *Gate) Collector() prometheus.Collector { return gateCollector{g} }

type gateCollector struct{ g *Gate }

func (c gateCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{requestsDesc, waitingDesc, activeDesc, slotsDesc, ageDesc, vanishedDesc,
		revokedDesc, revokedDroppedDesc, revokedUnsentDesc, visitsOverflowDesc, visitsAloneDesc, fallbacksDesc, redisDroppedDesc} {
		ch <- d
	}
}

func (c gateCollector) Collect(ch chan<- prometheus.Metric) {
	now := c.g.now()
	revs := c.g.counters.Revocations
	if revs != nil {
		ch <- prometheus.MustNewConstMetric(revokedUnsentDesc, prometheus.GaugeValue, float64(revs.Unsent()))
	}
	if c.g.counters.Drops != nil {
		c.g.counters.Drops.collect(ch)
	}
	for _, r := range c.g.rooms.Rooms() {
		counts := c.g.tally.counts(r.name)
		for i, o := range outcomes {
			ch <- prometheus.MustNewConstMetric(requestsDesc, prometheus.CounterValue, float64(counts[i].Load()), r.name, string(o))
		}
		fallbacks := c.g.fallbacks.counts(r.name)
		for i, reason := range fallbackReasons {
			ch <- prometheus.MustNewConstMetric(fallbacksDesc, prometheus.CounterValue, float64(fallbacks[i].Load()), r.name, reason)
		}
		if revs != nil {
			held, dropped := revs.Held(r.name)
			ch <- prometheus.MustNewConstMetric(revokedDesc, prometheus.GaugeValue, float64(held), r.name)
			ch <- prometheus.MustNewConstMetric(revokedDroppedDesc, prometheus.CounterValue, float64(dropped), r.name)
		}
		ch <- prometheus.MustNewConstMetric(visitsOverflowDesc, prometheus.CounterValue, float64(r.visits.Overflow()+r.waiting.Overflow()), r.name)
		ch <- prometheus.MustNewConstMetric(visitsAloneDesc, prometheus.CounterValue, float64(r.visits.Unconfirmed()), r.name)
		st := r.state.Load()
		if st == nil || st.snap == nil {
			continue
		}
		s := st.snap
		ch <- prometheus.MustNewConstMetric(waitingDesc, prometheus.GaugeValue, float64(s.CurrentlyWaiting), r.name)
		ch <- prometheus.MustNewConstMetric(activeDesc, prometheus.GaugeValue, float64(s.ActiveUsers), r.name)
		ch <- prometheus.MustNewConstMetric(slotsDesc, prometheus.GaugeValue, float64(s.SlotsAvailable), r.name)
		ch <- prometheus.MustNewConstMetric(ageDesc, prometheus.GaugeValue, max(0, now.Sub(s.PublishedAt).Seconds()), r.name)
		vanished := 0.0
		if !st.vanishedAt.IsZero() {
			vanished = 1
		}
		ch <- prometheus.MustNewConstMetric(vanishedDesc, prometheus.GaugeValue, vanished, r.name)
	}
}
