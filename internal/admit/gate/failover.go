package gate

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/edgeflow/edgeflow/internal/admit"
)

// ErrCountersDown is the error of a decision the shared counters could not
// make: the visitor is queued (the engine's counter_error) rather than
// admitted on a guess.
var ErrCountersDown = errors.New("shared counters unreachable")

// ErrCountersBusy is the error of a decision the shared counters did not
// answer in time while their store still answers a probe (the gate or the
// store is overloaded, not gone): the visitor is queued and comes back,
// and the gate keeps counting on the store. Falling back to the even split
// then would let the gates that still count on it overshoot.
var ErrCountersBusy = errors.New("shared counters slow to answer")

// Failover uses the shared counters while their store answers and the even
// split on this gate's own counters while it does not, switching only at
// minute boundaries so the two never spend the same minute's slots twice:
//
//   - the minute the store fails in, the gate admits no one new (the store
//     may have handed out the whole minute before it failed);
//   - from the next minute, the even split, which never overshoots;
//   - once the store answers again, the even split until the end of the
//     minute after next, so that the other gates, which notice the
//     recovery at about the same time, switch back in the same minute;
//   - in the first minute on either counters, nothing on the snapshot of
//     the minute before (the stale share, admit.StaleRemainder): what the
//     gate took in that minute is on the other counters, so the new ones
//     would show it all left, and the room allots the new minute only what
//     the gates' reports leave of it. The minute's snapshot comes within
//     seconds.
//
// If only some gates of a data center lose their Redis (a partial network
// partition), the others keep counting on it, and the room may take at most
// the lost gates' even shares beyond its limits for those minutes.
type Failover struct {
	Shared, Even admit.Strategy
	Probe        func(context.Context) error
	// Mirror is the shared counters' store: while the store answers
	// again but the gate still spends the even split, each even take is
	// counted there too, so the gates that never lost it see it.
	Mirror admit.Counter
	Logger *slog.Logger
	Now    func() time.Time // nil: time.Now

	mu          sync.Mutex
	failedAt    time.Time // the store's last failure; zero while healthy
	recoveredAt time.Time // when it first answered again since
	sharedFrom  time.Time // the minute the store was taken up again after its last failure
}

type failoverMode int

const (
	useShared failoverMode = iota
	useNone
	useEven
)

// Name implements admit.Strategy.
func (f *Failover) Name() string { return f.Shared.Name() + "|" + f.Even.Name() }

// TakeSlot implements admit.Strategy.
func (f *Failover) TakeSlot(ctx context.Context, req admit.SlotRequest) (string, bool, error) {
	mode, since := f.mode(req.Now, req.Snapshot.MinuteLength())
	if countedElsewhere(req, since) {
		return "", false, nil
	}
	switch mode {
	case useShared:
		scope, ok, err := f.Shared.TakeSlot(ctx, req)
		return f.settle(ctx, req.Now, scope, ok, err)
	case useNone:
		return "", false, ErrCountersDown
	default:
		scope, ok, err := f.Even.TakeSlot(ctx, req)
		if ok && err == nil {
			f.mirror(ctx, req, scope)
		}
		return scope, ok, err
	}
}

// mirror counts an even take on the shared counters while their store
// answers again (StateRecovering): a gate that never lost the store (a
// Sentinel failover lasts seconds, and a gate that took no slot in them
// never sees it) keeps spending the scope there, and would find none of
// this gate's takes, in this minute or, as the stale remainder, in the
// next. A take the store does not count now is left: the probe notices a
// store failing again.
func (f *Failover) mirror(ctx context.Context, req admit.SlotRequest, scope string) {
	f.mu.Lock()
	recovering := !f.failedAt.IsZero() && !f.recoveredAt.IsZero()
	f.mu.Unlock()
	if f.Mirror == nil || !recovering || admit.InOutage(req.Snapshot, req.Now) {
		return
	}
	mctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), probeTimeout)
	defer cancel()
	if err := admit.CountTake(mctx, f.Mirror, req, scope); err != nil && f.Logger != nil {
		f.Logger.Debug("cannot count the even split's take on the shared counters", "scope", scope, "err", err)
	}
}

// TakeFreed implements admit.FreedTaker: a place of a session that ended
// mid-minute (admit.SessionLedger), on the shared counters only (the even
// split keeps no ledger), failing over as TakeSlot does.
func (f *Failover) TakeFreed(ctx context.Context, req admit.SlotRequest) (string, bool, error) {
	ft, ok := f.Shared.(admit.FreedTaker)
	mode, since := f.mode(req.Now, req.Snapshot.MinuteLength())
	if !ok || mode != useShared || countedElsewhere(req, since) {
		return "", false, nil
	}
	scope, ok, err := ft.TakeFreed(ctx, req)
	return f.settle(ctx, req.Now, scope, ok, err)
}

// settle passes the shared counters' answer on; on an error it tells
// counters that answer (busy: this request is queued) from counters gone
// (down: the gate fails over).
func (f *Failover) settle(ctx context.Context, now time.Time, scope string, ok bool, err error) (string, bool, error) {
	if err == nil {
		return scope, ok, nil
	}
	if f.answers(ctx) {
		return "", false, errors.Join(ErrCountersBusy, err)
	}
	f.fail(now, err)
	return "", false, errors.Join(ErrCountersDown, err)
}

// The gate's strategies take freed places as the engine's do.
var (
	_ admit.FreedTaker = (*Failover)(nil)
	_ admit.FreedTaker = (*attemptGuard)(nil)
)

// CountsOnShared reports whether a decision at now counts on the shared
// store (as TakeSlot would), without a call to it.
func (f *Failover) CountsOnShared(now time.Time, length time.Duration) bool {
	mode, _ := f.mode(now, length)
	return mode == useShared
}

// The failover's states, for status pages and tests.
const (
	StateShared     = "shared"     // counting on the shared store
	StateDown       = "down"       // the store failed: the even split (nothing in the minute it failed)
	StateRecovering = "recovering" // the store answers again: back at the start of the minute after next
)

// State says which counters are in use.
func (f *Failover) State() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case f.failedAt.IsZero():
		return StateShared
	case f.recoveredAt.IsZero():
		return StateDown
	default:
		return StateRecovering
	}
}

// mode says which counters a decision at now uses, and since which minute
// they have counted this gate's takes (zero: from the start).
func (f *Failover) mode(now time.Time, length time.Duration) (failoverMode, time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	minute := admit.MinuteOf(now, length)
	switch {
	case f.failedAt.IsZero():
		return useShared, f.sharedFrom
	case !minute.After(admit.MinuteOf(f.failedAt, length)):
		return useNone, time.Time{}
	case !f.recoveredAt.IsZero() && !minute.Before(admit.MinuteOf(f.recoveredAt, length).Add(2*length)):
		f.sharedFrom = admit.MinuteOf(f.recoveredAt, length).Add(2 * length)
		f.failedAt, f.recoveredAt = time.Time{}, time.Time{}
		if f.Logger != nil {
			f.Logger.Info("shared counters back in use", "strategy", f.Shared.Name())
		}
		return useShared, f.sharedFrom
	default:
		return useEven, admit.MinuteOf(f.failedAt, length).Add(length)
	}
}

// countedElsewhere reports whether req spends a snapshot of the minute
// before on counters taken up only in this minute (since): the takes of
// the snapshot's minute are on the other counters (see Failover). An
// outage's decisions count on the outage counters (admit.InOutage) and are
// left alone.
func countedElsewhere(req admit.SlotRequest, since time.Time) bool {
	snap := req.Snapshot
	return snap.Minute.Before(since) && admit.MinuteOf(req.Now, snap.MinuteLength()).After(snap.Minute) && !admit.InOutage(snap, req.Now)
}

// answers reports whether the store answers a probe now: a take that
// failed on a store that answers was slow (a full connection pool, a loaded
// machine), not a store that is gone.
func (f *Failover) answers(ctx context.Context) bool {
	if f.Probe == nil {
		return false
	}
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), probeTimeout)
	defer cancel()
	return f.Probe(pctx) == nil
}

func (f *Failover) fail(now time.Time, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	first := f.failedAt.IsZero()
	if now.After(f.failedAt) {
		f.failedAt = now
	}
	f.recoveredAt = time.Time{}
	if first && f.Logger != nil {
		f.Logger.Warn("shared counters unreachable: no new visitor admitted for the rest of this minute, then the even split until they answer again",
			"err", err)
	}
}

func (f *Failover) now() time.Time {
	if f.Now != nil {
		return f.Now()
	}
	return time.Now()
}

// probeTimeout bounds one probe of a failed store.
const probeTimeout = time.Second

// Run probes a failed store every interval until ctx ends, noting when it
// answers again (a probe that fails after that starts the wait again).
func (f *Failover) Run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		f.probe(ctx)
	}
}

// probe probes a failed store once (Run's every tick).
func (f *Failover) probe(ctx context.Context) {
	f.mu.Lock()
	failed := !f.failedAt.IsZero()
	f.mu.Unlock()
	if !failed || f.Probe == nil {
		return
	}
	pctx, cancel := context.WithTimeout(ctx, probeTimeout)
	err := f.Probe(pctx)
	cancel()
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case f.failedAt.IsZero():
	case err != nil:
		f.recoveredAt = time.Time{}
	case f.recoveredAt.IsZero():
		f.recoveredAt = f.now()
		if f.Logger != nil {
			f.Logger.Info("shared counters answer again: switching back at the start of the minute after next")
		}
	}
}
