package admit

import (
	"math"
	"time"
)

// QueueFullMinutes is the estimated wait past which the queue counts as full
// (queueIsFull): a day.
const QueueFullMinutes = 24 * 60

// FIFOWaitMinutes is the wait of the visitor at position (1 is next in line)
// when letInPerMinute visitors leave the queue each minute: position /
// letInPerMinute minutes. Unknown (false) while nobody is let in.
func FIFOWaitMinutes(position int, letInPerMinute float64) (float64, bool) {
	if letInPerMinute <= 0 {
		return 0, false
	}
	return float64(max(position, 0)) / letInPerMinute, true
}

// LetInProbability is the chance that a waiting visitor is let in over the
// next minute in a random queue: P = letInPerMinute / currentlyWaiting, at
// most 1.
func LetInProbability(letInPerMinute float64, currentlyWaiting int) float64 {
	if currentlyWaiting <= 0 {
		return 1
	}
	return min(max(letInPerMinute, 0)/float64(currentlyWaiting), 1)
}

// RandomWaitMinutes is the wait within which a share p of the visitors of a
// random queue get in, when each has the chance P of getting in over any
// minute: from p = 1 - (1-P)^n, n = log(1-p) / log(1-P). Unknown (false)
// while P is 0; 0 when P is 1.
func RandomWaitMinutes(p, letInPerMinute float64, currentlyWaiting int) (float64, bool) {
	P := LetInProbability(letInPerMinute, currentlyWaiting)
	switch {
	case P <= 0 || p <= 0:
		return 0, P > 0
	case P >= 1:
		return 0, true
	case p >= 1:
		return math.Inf(1), true
	}
	return math.Log(1-p) / math.Log(1-P), true
}

// Estimates computes the room's estimate: for FIFO the wait of the newest
// visitor, for random the 25th, 50th and 75th percentile waits.
func Estimates(method QueueingMethod, letInPerMinute float64, currentlyWaiting int) Estimate {
	if currentlyWaiting <= 0 {
		return Estimate{Known: true}
	}
	if letInPerMinute <= 0 {
		return Estimate{}
	}
	var e Estimate
	switch method {
	case Random:
		e.P25Minutes, e.Known = RandomWaitMinutes(0.25, letInPerMinute, currentlyWaiting)
		e.P50Minutes, _ = RandomWaitMinutes(0.50, letInPerMinute, currentlyWaiting)
		e.P75Minutes, _ = RandomWaitMinutes(0.75, letInPerMinute, currentlyWaiting)
		e.MaxMinutes = e.P75Minutes
	case FIFO:
		e.MaxMinutes, e.Known = FIFOWaitMinutes(currentlyWaiting, letInPerMinute)
	default:
		return Estimate{}
	}
	return e
}

// Wait is what a queued visitor is told: Cloudflare's JSON fields and
// template variables (waitTime, waitTimeKnown, waitTime25Percentile, …),
// in whole minutes rounded up.
type Wait struct {
	Known          bool           `json:"waitTimeKnown"`
	Minutes        int            `json:"waitTime"`
	P25            int            `json:"waitTime25Percentile"`
	P50            int            `json:"waitTime50Percentile"`
	P75            int            `json:"waitTime75Percentile"`
	QueueIsFull    bool           `json:"queueIsFull"`
	QueueAll       bool           `json:"queueAll"`
	QueueingMethod QueueingMethod `json:"queueingMethod"`
	Position       int            `json:"position,omitempty"` // FIFO: place in line (estimate)
}

// ceilMinutes rounds an estimate up to whole minutes, at least 1: "soon"
// reads as one minute, never zero while the visitor still waits.
func ceilMinutes(m float64) int {
	if math.IsInf(m, 1) || m > QueueFullMinutes*10 {
		return QueueFullMinutes * 10
	}
	return max(int(math.Ceil(m-1e-9)), 1)
}

// WaitFor is the wait shown to a visitor of bucket waiting at snapshot s.
// A visitor not yet counted in any bucket stands behind everyone.
func WaitFor(s *Snapshot, bucket time.Time, queueAll bool) Wait {
	w := Wait{QueueingMethod: s.Settings.QueueingMethod, QueueAll: queueAll}
	if queueAll {
		return w
	}
	switch s.Settings.QueueingMethod {
	case FIFO:
		pos := s.CurrentlyWaiting + 1
		if !bucket.IsZero() {
			if p := s.Position(s.BucketOf(bucket)); p > 0 {
				pos = p
			}
		}
		w.Position = pos
		m, known := FIFOWaitMinutes(pos, s.LetInPerMinute)
		if known {
			w.Known, w.Minutes = true, ceilMinutes(m)
		}
	case Random:
		waiting := max(s.CurrentlyWaiting, 1)
		p25, known := RandomWaitMinutes(0.25, s.LetInPerMinute, waiting)
		if known {
			p50, _ := RandomWaitMinutes(0.50, s.LetInPerMinute, waiting)
			p75, _ := RandomWaitMinutes(0.75, s.LetInPerMinute, waiting)
			w.Known = true
			w.P25, w.P50, w.P75 = ceilMinutes(p25), ceilMinutes(p50), ceilMinutes(p75)
			w.Minutes = w.P50
		}
	}
	w.QueueIsFull = QueueIsFull(s, w)
	return w
}

// QueueIsFull reports whether the queue reads as full: as many visitors
// waiting as the room's queue_capacity, or, without one, a wait estimated
// past a day. It is what the page tells a visitor; the gate still queues
// them (Cloudflare's queueIsFull is for the page too).
func QueueIsFull(s *Snapshot, w Wait) bool {
	if c := s.Settings.QueueCapacity; c > 0 {
		return s.CurrentlyWaiting >= c
	}
	return w.Known && max(w.Minutes, w.P75) >= QueueFullMinutes
}
