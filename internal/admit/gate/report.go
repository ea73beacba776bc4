package gate

import (
	"context"
	"log/slog"
	"slices"
	"time"

	"github.com/edgeflow/edgeflow/internal/admit"
)

// ReportSink delivers a gate's report to its room (the room workflow's
// report signal).
type ReportSink func(ctx context.Context, r admit.Report) error

// Reporter sends each room the gate's counts: every Every while the minute
// runs (more often for rooms with a short minute), a final report as soon
// as a minute has ended and its last decision is counted (the room waits
// for every gate's before its next snapshot), and at least once a minute
// even when idle, so the room counts this gate.
// Reports are cumulative per minute; one that fails is sent again until a
// newer one of its minute replaces it.
type Reporter struct {
	Registry *Registry
	Sink     ReportSink
	Every    time.Duration // default 2s
	Timeout  time.Duration // per report, default 3s
	Logger   *slog.Logger
	Now      func() time.Time
	// Store is the gate's shared counters (Counters.Shared), nil without
	// any: once a minute is over, the reporter reads what they handed out
	// in it into its final report (admit.Report.StoreTaken), so the room
	// also counts the admissions of a gate that died before reporting them.
	Store admit.Counter
	// Visits is the gate's Counters.Visits (nil without a shared store):
	// before each report, the reporter asks it which of the visitors this
	// gate saw it was the room's first to count in their minute, and counts
	// only those. Without it, or while it fails, the gate counts every
	// visitor it saw itself.
	Visits VisitStore
	// Aggregate, when set (the data center's gates share a Redis), takes
	// the gate's reports in place of Sink: they go to Redis, and the
	// data center's lease holder sends the room their sum (see
	// Aggregator). A report Redis does not take goes by Sink.
	Aggregate *Aggregator

	failing      bool
	writeFailing time.Time // since when Redis has not taken the reports (zero: it takes them)
}

// tick is how often the reporter looks at its rooms.
const reportTick = 50 * time.Millisecond

// Run reports until ctx ends, then sends what is pending once more.
func (p *Reporter) Run(ctx context.Context) {
	p.defaults()
	t := time.NewTicker(reportTick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			final, cancel := context.WithTimeout(context.Background(), p.Timeout)
			p.Leave(final)
			cancel()
			return
		case <-t.C:
			p.Tick(ctx)
		}
	}
}

func (p *Reporter) defaults() {
	if p.Every <= 0 {
		p.Every = 2 * time.Second
	}
	if p.Timeout <= 0 {
		p.Timeout = 3 * time.Second
	}
	if p.Logger == nil {
		p.Logger = slog.Default()
	}
	if p.Now == nil {
		p.Now = time.Now
	}
}

// Tick sends the reports of every room that is due.
func (p *Reporter) Tick(ctx context.Context) {
	p.defaults()
	now := p.Now()
	for _, r := range p.Registry.Rooms() {
		snap := r.Snapshot()
		if snap == nil || snap.Status == admit.StatusDeleted {
			continue
		}
		length := snap.MinuteLength()
		minute := admit.MinuteOf(now, length)
		newMinute := minute.After(r.lastMinute)
		// A minute that ended, once its last decision is counted, is
		// reported at once as final: the room waits for it.
		finished := r.tally.Finish(minute)
		for _, m := range finished {
			p.readStore(ctx, r, m)
		}
		if !newMinute && len(finished) == 0 && now.Before(r.nextReport) {
			continue
		}
		if newMinute || p.Aggregate != nil {
			// Idle gates still report once a minute, so the room counts
			// them. Through Redis, the current minute is written at every
			// report: a Redis that died is noticed within writeDirectAfter,
			// and what the gate wrote into it before reaches the room by
			// its direct report (the aggregate that would carry it may never
			// be read).
			r.tally.Heartbeat(minute)
		}
		r.lastMinute = minute
		r.nextReport = now.Add(min(p.Every, length/24))
		p.settleVisits(ctx, r)
		p.send(ctx, r)
		r.tally.Forget(minute.Add(-3 * length))
		r.forgetDirect(minute.Add(-3 * length))
	}
	if p.Aggregate != nil {
		p.Aggregate.Tick(ctx, now, p.aggregateRooms(), p.boundedSink)
	}
}

// boundedSink is Sink for the data center's aggregate, with the reporter's
// timeout but at most a third of the lease: a Temporal that hangs
// (connections open, no answers) must not hold the reporter, which renews
// the aggregate's lease and writes the gate's counts in the same tick, nor
// let the lease lapse between two renewals (the gates took it from each
// other every 3 s while Temporal was frozen, in the admit-outage chaos
// suite). Called within Aggregator.Tick, after its defaults.
func (p *Reporter) boundedSink(ctx context.Context, r admit.Report) error {
	timeout := p.Timeout
	if p.Aggregate != nil && p.Aggregate.Lease > 0 {
		timeout = min(timeout, p.Aggregate.Lease/3)
	}
	sctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return p.Sink(sctx, r)
}

// aggregateRooms lists the rooms the data center's lease holder reports.
func (p *Reporter) aggregateRooms() []AggregateRoom {
	var out []AggregateRoom
	for _, r := range p.Registry.Rooms() {
		if snap := r.Snapshot(); snap != nil && snap.Status != admit.StatusDeleted {
			out = append(out, AggregateRoom{Name: r.name, Length: snap.MinuteLength(), Bound: admissionBound(snap), Keep: keptFor(snap)})
		}
	}
	return out
}

// maxStoreReads bounds the counters read for one minute of a room (a
// queue serving many buckets in a minute has a pool for each).
const maxStoreReads = 256

// readStore puts what the shared counters handed out in minute m into the
// room's tally. Counters that cannot be read are left out: the room then
// counts what the reports say of them, as it would without shared counters.
func (p *Reporter) readStore(ctx context.Context, r *Room, m time.Time) {
	if p.Store == nil {
		return
	}
	counters := r.counters.of(m)
	if len(counters) > maxStoreReads {
		counters = counters[:maxStoreReads]
	}
	rctx, cancel := context.WithTimeout(ctx, p.Timeout)
	defer cancel()
	var taken []admit.PoolCount
	// Counters no gates could have taken that far (set by hand in Redis)
	// are read as the most the room could have handed out, all together:
	// the data center's aggregate drops a report claiming more.
	left := int64(1 << 30)
	if snap := r.Snapshot(); snap != nil {
		left = int64(admissionBound(snap))
	}
	for _, c := range counters {
		n, err := p.Store.Load(rctx, admit.CounterKey(r.name, m, c.Pool, c.Scope))
		if err != nil {
			// The store is down or slow: the final report goes with what
			// was read (each reading is a lower bound) rather than late.
			p.Logger.Debug("cannot read the shared counters for the final report", "room", r.name, "err", err)
			break
		}
		if n = min(n, left); n > 0 {
			left -= n
			taken = append(taken, admit.PoolCount{Pool: c.Pool, Scope: c.Scope, Count: int(n)})
		}
	}
	if len(taken) > 0 {
		r.tally.StoreTaken(m, taken)
	}
}

// Leave tells every room the gate is going: each minute it counted is
// final, and the room waits for none of its later reports.
func (p *Reporter) Leave(ctx context.Context) {
	p.defaults()
	for _, r := range p.Registry.Rooms() {
		p.settleVisits(ctx, r)
		r.tally.Leave()
		p.send(ctx, r)
		if len(r.unwritten) > 0 { // no later tick tries again: to the room
			for _, rep := range r.unwritten {
				r.unsent = replaceReport(r.unsent, rep)
			}
			r.unwritten = nil
			p.send(ctx, r)
		}
	}
	if p.Aggregate != nil {
		p.Aggregate.Leave(ctx, p.Now(), p.aggregateRooms(), p.boundedSink)
	}
}

// settleVisits counts the visitors this gate saw since its last report
// that the shared store says it was first to see in their minute. It runs
// after Tally.Finish in a tick: a decision is sighted before it is counted,
// so a minute's last sightings are settled before its final report.
func (p *Reporter) settleVisits(ctx context.Context, r *Room) {
	seen := r.visits.Drain()
	if len(seen) == 0 {
		return
	}
	first := seen
	if snap := r.Snapshot(); p.Visits != nil && snap != nil {
		vctx, cancel := context.WithTimeout(ctx, p.Timeout)
		settled, unsettled, err := p.Visits.FirstVisits(vctx, r.name, seen, visitKeep(snap))
		cancel()
		// The unsettled are counted here rather than lost: a visitor seen
		// at another gate too in the minute counts there as well.
		first = append(settled, unsettled...)
		r.visits.Alone(len(unsettled))
		if err != nil {
			p.Logger.Debug("cannot settle visitors on the shared store; counting them at this gate", "room", r.name, "err", err)
		}
	} else {
		r.visits.Alone(len(seen))
	}
	for _, s := range first {
		r.tally.Add(s.Effect())
	}
}

func (p *Reporter) send(ctx context.Context, r *Room) {
	for _, rep := range r.tally.Pending() {
		if p.Aggregate != nil {
			r.unwritten = replaceReport(r.unwritten, rep)
		} else {
			r.unsent = replaceReport(r.unsent, rep)
		}
	}
	p.writeAll(ctx, r)
	// Oldest first: a room back from an outage waits for the minute
	// before its snapshot's, and takes the earlier ones with it.
	slices.SortStableFunc(r.unsent, func(a, b admit.Report) int { return a.Minute.Compare(b.Minute) })
	var failed []admit.Report
	for i, rep := range r.unsent {
		sctx, cancel := context.WithTimeout(ctx, p.Timeout)
		err := p.Sink(sctx, rep)
		cancel()
		if err != nil {
			// The room does not answer: the rest waits for the next
			// report (a hung Temporal costs one timeout, not one a minute).
			failed = append(failed, r.unsent[i:]...)
			if !p.failing && ctx.Err() == nil {
				p.Logger.Warn("cannot report to the room; keeping the counts to send again", "room", r.name, "err", err)
				p.failing = true
			}
			break
		}
		if p.failing {
			p.Logger.Info("reporting again", "room", r.name)
			p.failing = false
		}
	}
	// Keep the minutes a room back from an outage still takes (keptFor).
	r.unsent = failed[:0:0]
	for _, rep := range failed {
		if snap := r.Snapshot(); snap == nil || !rep.Minute.Add(snap.MinuteLength()).Before(p.Now().Add(-keptFor(snap))) {
			r.unsent = append(r.unsent, rep)
		}
	}
}

// keptFor is how long after its end a gate, or a data center's lease
// holder, keeps a minute's counts the room has not taken, to send them
// again: as long as the room's ledger keeps a minute (admit.LedgerMinutes,
// 37 minutes). A room back from an outage of Temporal takes them late
// (admit.RevOutageReports): its record then holds every minute of an
// outage that long, and its active users every session they began that may
// still run. Before, a gate kept them for the room's sessions and three
// minutes (eight by default), and a 30-minute outage's first 19 minutes
// never reached the room. The bound is the room's, not the outage's: a
// minute older than that the room would drop, and a gate holds at most
// that many reports a room (each a minute's counts, as in Redis).
func keptFor(snap *admit.Snapshot) time.Duration {
	return admit.LedgerMinutes * snap.MinuteLength()
}

// writeDirectAfter is how long the data center's Redis may fail to take
// a gate's reports before the gate sends them to the room itself: a slow
// Redis should not turn every gate of a data center into a reporter of
// its own (the room would get thousands of reports), a dead one should not
// keep the room from counting the gate (the lease has lapsed by then too).
// In a room with a short minute it is an eighth of the minute: the room
// waits a quarter of a minute for final reports, and what the gate wrote
// into a Redis that died near the minute's end must reach it before.
const writeDirectAfter = 3 * time.Second

func directAfter(length time.Duration) time.Duration { return min(writeDirectAfter, length/8) }

// writeAll hands the room's reports to the data center's aggregator, if
// there is one. Those Redis has not taken for writeDirectAfter go to the
// room directly (direct).
func (p *Reporter) writeAll(ctx context.Context, r *Room) {
	snap := r.Snapshot()
	if p.Aggregate == nil || snap == nil {
		for _, rep := range r.unwritten {
			r.unsent = replaceReport(r.unsent, rep)
		}
		r.unwritten = nil
		return
	}
	p.markDirect(ctx, r, snap.MinuteLength())
	var keep []admit.Report
	for _, rep := range r.unwritten {
		if r.directMinutes[rep.Minute.UnixMilli()] {
			p.direct(ctx, r, rep, snap.MinuteLength())
			continue
		}
		wctx, cancel := context.WithTimeout(ctx, p.Timeout)
		err := p.Aggregate.Write(wctx, rep, snap.MinuteLength())
		cancel()
		if err == nil {
			if !p.writeFailing.IsZero() {
				p.Logger.Info("writing the counts for the data center's report again", "room", r.name)
				p.writeFailing = time.Time{}
			}
			continue
		}
		if p.writeFailing.IsZero() {
			p.writeFailing = p.Now()
			if ctx.Err() == nil {
				p.Logger.Warn("cannot write the counts for the data center's report; trying again, then reporting to the room directly", "room", r.name, "err", err)
			}
		}
		if p.Now().Sub(p.writeFailing) >= directAfter(snap.MinuteLength()) || ctx.Err() != nil {
			p.direct(ctx, r, rep, snap.MinuteLength())
			continue
		}
		keep = append(keep, rep)
	}
	r.unwritten = keep
}

// direct sends a report of a minute to the room by the gate's own signal,
// and every later report of that minute too, and marks the minute direct
// in Redis (Aggregator.MarkDirect) so that the data center's aggregate
// leaves out what the gate wrote of it before: each admission reaches the
// room by one path. The report goes whole: what Redis took of the minute
// may be gone (a Redis restarted empty) or never read (a Redis down).
func (p *Reporter) direct(ctx context.Context, r *Room, rep admit.Report, length time.Duration) {
	if r.directMinutes == nil {
		r.directMinutes, r.unmarked = map[int64]bool{}, map[int64]admit.Report{}
	}
	r.directMinutes[rep.Minute.UnixMilli()] = true
	r.unmarked[rep.Minute.UnixMilli()] = rep
	r.unsent = replaceReport(r.unsent, rep)
	if ctx.Err() == nil {
		p.markDirect(ctx, r, length)
	}
}

// markDirect writes the marks of direct minutes Redis has not taken yet
// (it is tried again at every report until it does).
func (p *Reporter) markDirect(ctx context.Context, r *Room, length time.Duration) {
	for m, rep := range r.unmarked {
		mctx, cancel := context.WithTimeout(ctx, p.Timeout)
		err := p.Aggregate.MarkDirect(mctx, rep, length)
		cancel()
		if err != nil {
			return // Redis is still down: the next report tries again
		}
		delete(r.unmarked, m)
	}
}

// forgetDirect drops the direct minutes before a time (the room has
// closed them).
func (r *Room) forgetDirect(before time.Time) {
	for m := range r.directMinutes {
		if m < before.UnixMilli() {
			delete(r.directMinutes, m)
			delete(r.unmarked, m)
		}
	}
}

// replaceReport adds rep to the unsent reports, replacing an older one of
// its minute (reports are cumulative).
func replaceReport(unsent []admit.Report, rep admit.Report) []admit.Report {
	for i, u := range unsent {
		if u.Minute.Equal(rep.Minute) {
			unsent[i] = rep
			return unsent
		}
	}
	return append(unsent, rep)
}
