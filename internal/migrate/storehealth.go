package migrate

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"syscall"
	"time"

	"github.com/edgeflow/edgeflow/internal/objectstore"
)

// ErrorClass says whether an error belongs to an object or may belong to
// its store.
type ErrorClass int

const (
	// ObjectClass: an error of this object (404, checksum mismatch, the
	// object changed, an invalid key) or no store error at all.
	ObjectClass ErrorClass = iota
	// Unreachable: the connection was refused; nothing is listening, so
	// one is enough to call the store down.
	Unreachable
	// StoreFailure: a reset, timeout, DNS failure or 5xx other than
	// throttling; StoreThreshold of them on distinct keys within
	// StoreWindow call the store down.
	StoreFailure
	// Denied: 403; StoreThreshold of them on distinct keys within
	// StoreWindow make the store suspect (revoked credentials?), and a
	// probe decides.
	Denied
)

// The classifier's limits, from the issue that asked for it: errors of
// one key are the key's; the same error on several keys at once is the
// store's.
const (
	StoreWindow    = 10 * time.Second
	StoreThreshold = 3
	// MaxProbeDelay caps the backoff between probes of a store that is down.
	MaxProbeDelay = time.Minute
)

// ClassifyStoreError sorts a failed request. Throttling (SlowDown, 503,
// 429) is neither: it has its own path (see IsThrottle).
func ClassifyStoreError(err error) ErrorClass {
	if err == nil || IsThrottle(err) {
		return ObjectClass
	}
	var se *objectstore.Error
	if !errors.As(err, &se) {
		// Only a store's answer (or its missing answer) speaks for the
		// store; errors of our own making (errSourceChanged) do not.
		return ObjectClass
	}
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return Unreachable
	case errors.Is(err, objectstore.ErrAccessDenied):
		return Denied
	case se.StatusCode >= 500:
		return StoreFailure
	case se.StatusCode == 0 && se.Err != nil && isNetwork(se.Err):
		return StoreFailure
	}
	return ObjectClass
}

func isNetwork(err error) bool {
	var dns *net.DNSError
	if errors.As(err, &dns) {
		return true
	}
	return objectstore.IsTransient(err)
}

// Outage is a store that is down: which side, since when, and why.
type Outage struct {
	Side   string    `json:"side"`
	Since  time.Time `json:"since"`
	Reason string    `json:"reason"`
}

// Verdict is what StoreHealth makes of one failed request.
type Verdict int

const (
	// VerdictObject: an object error; the object's own retries decide.
	VerdictObject Verdict = iota
	// VerdictRetry: a store-class error, too few yet to blame the store;
	// retry the object (it fails on its own if it stays alone).
	VerdictRetry
	// VerdictDown: the store is down; the object waits for it.
	VerdictDown
	// VerdictSuspect: denied on enough keys that the store's credentials
	// are in doubt; a probe decides (Trip or Trust).
	VerdictSuspect
)

// StoreHealth tells a store's errors from an object's, per side: a
// sliding window of the keys that failed recently, cleared by any success
// (a reset now and then among thousands of good answers is the network's
// noise, not an outage; a dead store answers nothing). It is shared by the
// transfers of one page; once a side is down it stays down (the page
// stops, and the job waits for the store).
type StoreHealth struct {
	now func() time.Time

	mu      sync.Mutex
	recent  map[string][]keyFailure // by side, oldest first
	trusted map[string]bool         // sides whose 403s a probe found to be the objects'
	down    *Outage
	downCh  chan struct{}
}

type keyFailure struct {
	at    time.Time
	key   string
	class ErrorClass
}

// NewStoreHealth starts with both sides healthy; now is the clock (nil:
// time.Now).
func NewStoreHealth(now func() time.Time) *StoreHealth {
	if now == nil {
		now = time.Now
	}
	return &StoreHealth{now: now, recent: map[string][]keyFailure{}, trusted: map[string]bool{}, downCh: make(chan struct{})}
}

// Observe records that a request for key on side failed with err.
func (h *StoreHealth) Observe(side, key string, err error) Verdict {
	class := ClassifyStoreError(err)
	if class == ObjectClass {
		return VerdictObject
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.down != nil {
		return VerdictDown // the page is stopping: the object waits too
	}
	if class == Unreachable {
		h.tripLocked(side, "connection refused: "+err.Error())
		return VerdictDown
	}
	if class == Denied && h.trusted[side] {
		return VerdictObject
	}
	now := h.now()
	kept := h.recent[side][:0]
	for _, f := range h.recent[side] {
		if now.Sub(f.at) < StoreWindow && f.key != key {
			kept = append(kept, f)
		}
	}
	kept = append(kept, keyFailure{at: now, key: key, class: class})
	h.recent[side] = kept
	n := 0
	for _, f := range kept {
		if f.class == class {
			n++
		}
	}
	switch {
	case n < StoreThreshold:
		return VerdictRetry
	case class == Denied:
		return VerdictSuspect
	}
	h.tripLocked(side, fmt.Sprintf("%d failures on distinct keys within %s, the last: %v", n, StoreWindow, err))
	return VerdictDown
}

// Succeeded records a request that worked: the failures before it were
// not a store going away.
func (h *StoreHealth) Succeeded() {
	h.mu.Lock()
	defer h.mu.Unlock()
	clear(h.recent)
}

// Trip calls side down (a probe confirmed a suspicion); the first outage
// of a page is the one it reports.
func (h *StoreHealth) Trip(side, reason string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.tripLocked(side, reason)
}

func (h *StoreHealth) tripLocked(side, reason string) {
	if h.down != nil {
		return
	}
	h.down = &Outage{Side: side, Since: h.now(), Reason: reason}
	close(h.downCh)
}

// Trust records that a probe of side passed while its requests were
// denied: those 403s are the objects' (a policy on some keys), not the
// store's.
func (h *StoreHealth) Trust(side string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.trusted[side] = true
}

// Down is the outage, nil while both sides are healthy.
func (h *StoreHealth) Down() *Outage {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.down == nil {
		return nil
	}
	o := *h.down
	return &o
}

// DownCh is closed when a side goes down.
func (h *StoreHealth) DownCh() <-chan struct{} { return h.downCh }

// StoreDownError is a page (or listing) stopped because a store is down;
// nothing of it was stored, and it is done again once the store is back.
type StoreDownError struct{ Outage }

func (e *StoreDownError) Error() string {
	return fmt.Sprintf("the %s store is unavailable: %s", e.Side, e.Reason)
}

// ProbeDelay is the wait before probe number n (from 0) of a store that is
// down: 2 s doubling, capped at MaxProbeDelay. No jitter: the job's
// workflow computes it, and it is one probe per job, not a crowd.
func ProbeDelay(n int) time.Duration {
	d := 2 * time.Second
	for i := 0; i < n && d < MaxProbeDelay; i++ {
		d *= 2
	}
	return min(d, MaxProbeDelay)
}
