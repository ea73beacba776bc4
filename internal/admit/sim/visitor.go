package sim

import (
	"math/rand/v2"
	"time"

	"github.com/edgeflow/edgeflow/internal/admit"
)

// Refresh is how a queued visitor refreshes the waiting room page.
type Refresh uint8

// The refresh behaviours.
const (
	OnTime Refresh = iota // the moment the page says (the browser does it)
	Late                  // a while after (a background tab, a slow phone)
	Hammer                // every couple of seconds, whatever the page says
)

func (r Refresh) String() string {
	return [...]string{"on_time", "late", "hammering"}[r]
}

// State is where a visitor is.
type State uint8

// The states. Every visitor is in exactly one.
const (
	Waiting   State = iota // queued, still checking in
	Browsing               // admitted, still requesting pages
	Left                   // admitted, done browsing (its session may still count)
	Abandoned              // gave up waiting
)

// never is a time that does not come.
const never = time.Duration(1<<63 - 1)

// visitor is one person, with its cookie (the engine's ticket).
type visitor struct {
	id       int32
	dc       int
	arrival  time.Duration // first request, since the start
	refresh  Refresh
	patience time.Duration // never: waits as long as it takes
	browse   time.Duration

	state   State
	ticket  *admit.Ticket
	bucket  time.Time // the bucket of the first request's minute
	queued  time.Duration
	admitAt time.Duration
	leaveAt time.Duration

	sessionEnd     time.Duration // of the current session, if admitted
	sessionVersion int32
	checkIns       int32 // requests while queued
	earlyRefreshes int32
}

func newVisitor(id int32, a arrival, b Behaviour, rng *rand.Rand) *visitor {
	v := &visitor{id: id, dc: a.dc, arrival: a.at, patience: never, queued: -1, admitAt: -1, leaveAt: -1}
	v.browse = uniform(rng, b.BrowseMin, b.BrowseMax)
	if b.AbandonShare > 0 && rng.Float64() < b.AbandonShare {
		v.patience = time.Duration(rng.ExpFloat64() * float64(b.PatienceMean))
	}
	switch x := rng.Float64(); {
	case x < b.HammerShare:
		v.refresh = Hammer
	case x < b.HammerShare+b.LateShare:
		v.refresh = Late
	}
	return v
}

// uniform draws a duration in [lo, hi], to the millisecond.
func uniform(rng *rand.Rand, lo, hi time.Duration) time.Duration {
	if hi <= lo {
		return lo
	}
	return lo + time.Duration(rng.Int64N(int64((hi-lo)/time.Millisecond)+1))*time.Millisecond
}

// nextCheckIn is when a queued visitor asks again, told to come back in
// refreshIn.
func (v *visitor) nextCheckIn(at, refreshIn time.Duration, b Behaviour, rng *rand.Rand) time.Duration {
	switch v.refresh {
	case Late:
		return at + refreshIn + uniform(rng, b.LateMin, b.LateMax)
	case Hammer:
		return at + uniform(rng, b.HammerGap/2, b.HammerGap*3/2)
	default:
		// The browser's timer fires on time; the request takes a moment.
		return at + refreshIn + uniform(rng, 0, 300*time.Millisecond)
	}
}

// gaveUpBy is when the visitor gives up waiting.
func (v *visitor) gaveUpBy() time.Duration {
	if v.patience == never {
		return never
	}
	return v.arrival + v.patience
}

// waitingAt reports whether the visitor was in the queue at t: queued by
// then, and neither admitted nor gone.
func (v *visitor) waitingAt(t time.Duration) bool {
	if v.queued < 0 || v.queued > t {
		return false
	}
	if v.admitAt >= 0 && v.admitAt <= t {
		return false
	}
	return v.state != Abandoned || v.gaveUpBy() > t
}
