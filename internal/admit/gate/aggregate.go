package gate

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/edgeflow/edgeflow/internal/admit"
	"github.com/edgeflow/edgeflow/internal/keyring"
)

// Aggregator makes the gates of one data center report to a room as one:
// each gate writes its cumulative counts of a minute into a Redis hash of
// the room, data center and minute (Write), and the one gate holding the
// data center's lease (a Redis key with an expiry, renewed while it runs;
// another gate takes it over once it lapses) sums them (admit.Aggregate)
// and sends the room one report per data center and minute: once every
// gate that counts in the minute has written its final counts, or once
// Grace has passed after the minute; with Every, also while the minute
// runs. A room's history then grows with its data centers, not its gates.
//
// Nothing is lost when the holder dies: the counts are in Redis, and the
// next holder sends them. A gate that dies is covered as before: the other
// gates' final counts read the shared counters (Report.StoreTaken).
//
// Every value it writes is signed (Signer, see redisfields.go) and every
// value it reads is checked: a report or mark no gate wrote, or one naming
// another gate than its field, or counts no gate can make, is dropped and
// counted in Drops; a lease no gate signed, or one its signer stopped
// renewing long ago, is taken over.
type Aggregator struct {
	Client     redis.UniversalClient
	DataCenter string
	// Holder names this gate process in the lease (gate ID and start).
	Holder string
	// Signer signs what this gate writes and checks what it reads
	// (NewRedisSigner); without one nothing is written or sent.
	Signer *keyring.Signer
	// Drops counts the values read and dropped (nil: not counted).
	Drops *RedisDrops
	Lease time.Duration // how long a lease lasts unrenewed, default 3s
	Poll  time.Duration // how often the holder looks for new counts, default 250ms
	// Every is how often the holder sends a minute's counts while it runs
	// (0: only once it is over; each report is a history event of the room).
	Every time.Duration
	// Grace is how long after a minute the holder waits for the final
	// counts of every gate before sending the minute as final anyway;
	// default an eighth of the room's minute (the room itself waits a
	// quarter).
	Grace  time.Duration
	Logger *slog.Logger
	// Live is the Redis the holder writes the data center's live counts
	// to (the Anywhere Redis, which the readers reach; see live.go), every
	// LiveEvery (default 1s); nil: none.
	Live      redis.UniversalClient
	LiveEvery time.Duration

	mu         sync.Mutex
	holdsUntil time.Time // the lease is ours until then (our clock)
	nextLease  time.Time
	nextPoll   time.Time
	minutes    map[aggKey]*aggMinute
	nextMid    map[string]time.Time
	bounds     map[string]roomBound
	owed       map[aggKey]bool // ended minutes not sent (see owe)
	scanned    map[string]bool // rooms whose kept minutes this holding looked at
	failing    bool
	leaseWarn  bool // a lease no gate holds was logged
	live       liveWriter
}

// roomBound is the largest admissionBound of a room's recent snapshots, so
// that lowered limits do not make a minute counted on the old ones look
// impossible.
type roomBound struct {
	bound int
	until time.Time
}

type aggKey struct {
	room   string
	minute int64
}

// aggMinute is what the holder last read and sent of a room's minute.
type aggMinute struct {
	version int64
	readAt  time.Time // the last whole read
	reports []admit.Report
	newest  map[string]admit.Report // by field: an older copy written back is not believed
	sent    uint64                  // Seq of the last report sent
	dropped map[string]string       // by field, the value last dropped (each is counted once)
}

// AggregateRoom is what the aggregator needs to know of a room.
type AggregateRoom struct {
	Name   string
	Length time.Duration // the room's minute
	// Bound is the most admissions a data center can make in a minute
	// (admissionBound of the room's snapshot).
	Bound int
	// Keep is how long after its end a minute the room has not taken is
	// kept and sent again (keptFor); 0: only the last one.
	Keep time.Duration
}

// fullReadEvery (in polls) is how often the holder reads a minute's whole
// hash even if its version did not change: the version is a plain
// counter anyone with access to Redis could set back.
const fullReadEvery = 4

// aggKeep is how many minutes a minute's counts stay in Redis after its
// last write.
const aggKeep = 5

// versionField counts the writes to a minute's hash, so the holder reads
// the whole hash only when it changed.
const versionField = "_v"

// sentField holds the Seq of the last aggregate a holder sent of the
// minute.
const sentField = "_sent"

func countsKey(room, dc string, minute time.Time) string {
	return "admit/" + room + "/dc/" + dc + "/minute/" + strconv.FormatInt(minute.UnixMilli(), 10) + "/reports"
}

func leaseKey(dc string) string { return "admit/dc/" + dc + "/aggregator" }

func reportField(gate string, incarnation uint64) string {
	return gate + "/" + strconv.FormatUint(incarnation, 10)
}

// errNoSigner is what an aggregator without a signer fails with.
var errNoSigner = errors.New("no key to sign the data center's counts with (the gate's cookie keys)")

// Write stores a gate's cumulative report of a minute for the holder
// (replacing the gate process's older one), signed, in one round trip.
func (a *Aggregator) Write(ctx context.Context, rep admit.Report, length time.Duration) error {
	if a.Signer == nil {
		return errNoSigner
	}
	b, err := json.Marshal(rep)
	if err != nil {
		return err
	}
	key := countsKey(rep.Room, a.DataCenter, rep.Minute)
	field := reportField(rep.Gate, rep.Incarnation)
	_, err = a.Client.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.HSet(ctx, key, field, signValue(a.Signer, key, field, string(b)))
		p.HIncrBy(ctx, key, versionField, 1)
		keepMinute(ctx, p, key, length) // from now: gates' clocks may differ from Redis's
		return nil
	})
	if err != nil {
		return fmt.Errorf("redis write of the data center's counts: %w", err)
	}
	return nil
}

// directPrefix starts the field of a gate process that reports a minute
// to the room directly (MarkDirect).
const directPrefix = "direct/"

// MarkDirect records that a gate process sends its counts of a minute to
// the room by itself (its Redis failed it): the aggregate leaves out what
// the gate wrote of that minute, and counts it as final (it waits for no
// more of it). rep is the gate's direct report, whose Seq makes the
// aggregate's grow.
func (a *Aggregator) MarkDirect(ctx context.Context, rep admit.Report, length time.Duration) error {
	if a.Signer == nil {
		return errNoSigner
	}
	mark := admit.Report{Room: rep.Room, DataCenter: rep.DataCenter, Gate: rep.Gate, Minute: rep.Minute, Incarnation: rep.Incarnation,
		Seq: rep.Seq, Final: true, Leaving: rep.Leaving}
	b, err := json.Marshal(mark)
	if err != nil {
		return err
	}
	key := countsKey(rep.Room, a.DataCenter, rep.Minute)
	field := directPrefix + reportField(rep.Gate, rep.Incarnation)
	_, err = a.Client.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.HSet(ctx, key, field, signValue(a.Signer, key, field, string(b)))
		p.HIncrBy(ctx, key, versionField, 1)
		keepMinute(ctx, p, key, length)
		return nil
	})
	if err != nil {
		return fmt.Errorf("redis write of the data center's counts: %w", err)
	}
	return nil
}

func (a *Aggregator) defaults() {
	if a.Lease <= 0 {
		a.Lease = 3 * time.Second
	}
	if a.Poll <= 0 {
		a.Poll = 250 * time.Millisecond
	}
	if a.Logger == nil {
		a.Logger = slog.Default()
	}
	if a.minutes == nil {
		a.minutes = map[aggKey]*aggMinute{}
		a.nextMid = map[string]time.Time{}
		a.bounds = map[string]roomBound{}
		a.owed = map[aggKey]bool{}
		a.scanned = map[string]bool{}
	}
}

// Holds reports whether this gate held the lease at its last look.
func (a *Aggregator) Holds(now time.Time) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return now.Before(a.holdsUntil)
}

// Tick takes or renews the lease when due and, while this gate holds it,
// sends the rooms' aggregated reports that are due.
func (a *Aggregator) Tick(ctx context.Context, now time.Time, rooms []AggregateRoom, sink ReportSink) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.defaults()
	for _, r := range rooms {
		a.noteBound(r, now)
	}
	if !now.Before(a.nextLease) {
		a.renew(ctx, now)
	}
	if !now.Before(a.holdsUntil) || now.Before(a.nextPoll) {
		return
	}
	a.nextPoll = now.Add(a.Poll)
	for _, r := range rooms {
		a.poll(ctx, now, r, sink, false)
		a.publishLive(ctx, now, r)
	}
}

// noteBound keeps the largest bound of a room's recent snapshots.
func (a *Aggregator) noteBound(r AggregateRoom, now time.Time) {
	if b, ok := a.bounds[r.Name]; !ok || r.Bound >= b.bound || now.After(b.until) {
		a.bounds[r.Name] = roomBound{bound: r.Bound, until: now.Add(aggKeep * r.Length)}
	}
}

// Leave sends what the data center's gates wrote, if this gate holds the
// lease or can take it, and lets the lease go for another gate to take.
func (a *Aggregator) Leave(ctx context.Context, now time.Time, rooms []AggregateRoom, sink ReportSink) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.defaults()
	for _, r := range rooms {
		a.noteBound(r, now)
	}
	a.renew(ctx, now)
	if !now.Before(a.holdsUntil) {
		return
	}
	for _, r := range rooms {
		a.poll(ctx, now, r, sink, true)
	}
	if err := release.Run(ctx, a.Client, []string{leaseKey(a.DataCenter)}, a.Holder+"|").Err(); err != nil {
		a.Logger.Debug("cannot release the data center's report lease; it lapses", "err", err)
	}
	a.holdsUntil = time.Time{}
}

// poll sends the room's minute that ended (until the room closes it) and,
// with Every or when all is to be sent, the current one.
func (a *Aggregator) poll(ctx context.Context, now time.Time, r AggregateRoom, sink ReportSink, all bool) {
	current := admit.MinuteOf(now, r.Length)
	last := current.Add(-r.Length)
	grace := a.Grace
	if grace <= 0 {
		grace = r.Length / 8
	}
	// The last minute goes after those owed before it, oldest first; one
	// that waits behind them, or fails, is owed in turn.
	oldest := a.sendOwed(ctx, now, r, last, sink)
	if !oldest.Equal(last) || a.send(ctx, now, r, last, !all, !now.Before(current.Add(grace)), sink) != nil {
		a.owe(ctx, r, last)
	}
	if all || (a.Every > 0 && !now.Before(a.nextMid[r.Name])) {
		a.nextMid[r.Name] = now.Add(a.Every)
		_ = a.send(ctx, now, r, current, false, false, sink)
	}
	for k := range a.minutes {
		if k.room == r.Name && k.minute < oldest.Add(-r.Length).UnixMilli() {
			delete(a.minutes, k)
		}
	}
}

// send reads minute m (and the minute before, whose gates it waits for)
// where changed, and sends its aggregate if it is newer than the last
// sent. It fails only if the minute could not be read or sent.
func (a *Aggregator) send(ctx context.Context, now time.Time, r AggregateRoom, m time.Time, ended, graceOver bool, sink ReportSink) error {
	prev, err := a.read(ctx, now, r, m.Add(-r.Length))
	if err == nil {
		var cur *aggMinute
		if cur, err = a.read(ctx, now, r, m); err == nil {
			rep, ok := admit.Aggregate(r.Name, a.DataCenter, m, prev.reports, cur.reports, graceOver)
			if !ok || rep.Seq == cur.sent || (ended && !rep.Final && !rep.Leaving) {
				return nil // an ended minute goes once final: the room waits for nothing else
			}
			if err = sink(ctx, rep); err == nil {
				cur.sent = rep.Seq
				// The next holder sends it again only if it changed: each
				// report is a history event of the room. (Without the mark
				// it sends the minute once more, which the room drops.)
				key := countsKey(r.Name, a.DataCenter, m)
				_, _ = a.Client.TxPipelined(ctx, func(p redis.Pipeliner) error {
					p.HSet(ctx, key, sentField, signValue(a.Signer, key, sentField, strconv.FormatUint(rep.Seq, 10)))
					p.PExpire(ctx, key, aggKeep*r.Length)
					return nil
				})
				a.failing = false
				return nil
			}
		}
	}
	if !a.failing && ctx.Err() == nil {
		a.Logger.Warn("cannot send the data center's counts; trying again", "room", r.Name, "err", err)
		a.failing = true
	}
	return err
}

// read returns what the data center's gates wrote for a minute, reading
// the hash when its version changed since the last read (and every few
// polls anyway), and keeping only what a gate signed and could count.
func (a *Aggregator) read(ctx context.Context, now time.Time, r AggregateRoom, m time.Time) (*aggMinute, error) {
	room := r.Name
	key := aggKey{room, m.UnixMilli()}
	st := a.minutes[key]
	if st == nil {
		st = &aggMinute{version: -1, newest: map[string]admit.Report{}, dropped: map[string]string{}}
		a.minutes[key] = st
	}
	hkey := countsKey(room, a.DataCenter, m)
	v, err := a.Client.HGet(ctx, hkey, versionField).Int64()
	if errors.Is(err, redis.Nil) {
		v, err = 0, nil
	}
	if err != nil {
		return nil, fmt.Errorf("redis read of the data center's counts: %w", err)
	}
	if v == st.version && now.Before(st.readAt.Add(fullReadEvery*a.Poll)) {
		return st, nil
	}
	all, err := a.Client.HGetAll(ctx, hkey).Result()
	if err != nil {
		return nil, fmt.Errorf("redis read of the data center's counts: %w", err)
	}
	bound := a.bounds[room].bound
	reports := make([]admit.Report, 0, len(all))
	direct := map[string]bool{} // fields of gates reporting directly; looked up only
	drop := func(field, raw, what, reason string) {
		if st.dropped[field] != raw {
			st.dropped[field] = raw
			a.Drops.add(what, reason)
		}
	}
	for field, raw := range all {
		rest, ok := strings.CutPrefix(field, directPrefix)
		if !ok {
			continue
		}
		payload, signed := openValue(a.Signer, hkey, field, raw)
		if !signed {
			drop(field, raw, dropMark, reasonUnsigned)
			continue
		}
		var mark admit.Report
		if json.Unmarshal([]byte(payload), &mark) != nil || reportField(mark.Gate, mark.Incarnation) != rest ||
			mark.Room != room || mark.DataCenter != a.DataCenter || !mark.Minute.Equal(m) {
			drop(field, raw, dropMark, reasonName)
			continue
		}
		direct[rest] = true
	}
	for field, raw := range all {
		switch {
		case field == versionField:
			if n, err := strconv.ParseInt(raw, 10, 64); err == nil {
				v = n
			}
			continue
		case field == sentField:
			payload, signed := openValue(a.Signer, hkey, field, raw)
			n, err := strconv.ParseUint(payload, 10, 64)
			if !signed || err != nil {
				drop(field, raw, dropSent, reasonUnsigned)
			} else if n > st.sent {
				st.sent = n
			}
			continue
		case strings.HasPrefix(field, directPrefix) || direct[field]:
			continue // a mark, or counted by the gate's own report: its mark stands for it
		}
		payload, signed := openValue(a.Signer, hkey, field, raw)
		if !signed {
			drop(field, raw, dropReport, reasonUnsigned)
			continue
		}
		var rep admit.Report
		if json.Unmarshal([]byte(payload), &rep) != nil || !rep.Minute.Equal(m) {
			drop(field, raw, dropReport, reasonName)
			continue
		}
		if reason, ok := reportFieldOK(field, rep, room, a.DataCenter, r.Length, bound); !ok {
			drop(field, raw, dropReport, reason)
			continue
		}
		// A gate's reports of a minute only grow: an older one written
		// back over a newer one is not believed.
		if older, ok := st.newest[field]; ok && older.Seq > rep.Seq {
			rep = older
		}
		st.newest[field] = rep
		reports = append(reports, rep)
	}
	// Reports are summed in field order, so that a repeated read sums alike.
	slices.SortFunc(reports, func(a, b admit.Report) int {
		return cmp.Or(strings.Compare(a.Gate, b.Gate), cmp.Compare(a.Incarnation, b.Incarnation))
	})
	st.version, st.reports, st.readAt = v, reports, now
	return st, nil
}
