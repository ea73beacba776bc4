package admit

import (
	"slices"
	"time"
)

// AggregateGate is the gate name a data center's aggregated reports go
// under: the room keeps one report per data center, gate and minute, so
// every aggregator of a data center (whichever gate holds the lease)
// replaces the same report.
const AggregateGate = "_aggregate"

// Aggregate sums the reports the gates of one data center wrote for one
// minute (cur, the newest of each gate process) into the one report their
// aggregator sends the room in their place. prev are the same gates'
// reports of the minute before, which say who must still report cur:
// the aggregate is Final once every report of cur is final and every gate
// that reported prev without leaving has a final report of cur (the rule
// the room applies to its reporters, see Ledger.Final), or once graceOver
// (the aggregator waited long enough for a gate that died). It is Leaving
// when every gate of cur is.
//
// Its Seq grows with every newer report of a gate (twice their sum, plus
// one once final), so whichever aggregator sends it, the room keeps the
// newest and drops repeats. Gates counts the distinct gates summed (the
// room's even split counts them); StoreTaken is the largest reading of
// each counter, as the room takes it from separate reports. It returns
// false when cur is empty.
func Aggregate(room, dataCenter string, minute time.Time, prev, cur []Report, graceOver bool) (Report, bool) {
	if len(cur) == 0 {
		return Report{}, false
	}
	out := Report{Room: room, DataCenter: dataCenter, Gate: AggregateGate, Minute: minute, Leaving: true}
	var (
		queued, renewed, revoked map[int64]int
		taken, unsure            map[[2]string]int
		gates                    []string
		seq                      uint64
		allFinal                 = true
		finals                   = map[gateProcess]bool{} // looked up only
		store                    []PoolCount
	)
	queued, renewed, revoked = map[int64]int{}, map[int64]int{}, map[int64]int{}
	taken, unsure = map[[2]string]int{}, map[[2]string]int{}
	for _, r := range cur {
		seq += r.Seq
		out.NewVisitors += r.NewVisitors
		out.Admitted += r.Admitted
		out.AdmittedFromQueue += r.AdmittedFromQueue
		out.Seen += r.Seen
		out.EarlyRefreshes += r.EarlyRefreshes
		out.Closed += r.Closed
		addMinuteCounts(queued, r.Queued)
		addMinuteCounts(renewed, r.Renewed)
		addMinuteCounts(revoked, r.Revoked)
		addPoolCounts(taken, r.Taken)
		addPoolCounts(unsure, r.Unsure)
		store = largestReadings(store, r.StoreTaken)
		if !r.Final {
			allFinal = false
		} else {
			finals[gateProcess{r.Gate, r.Incarnation}] = true
		}
		out.Leaving = out.Leaving && r.Leaving
		if i, found := slices.BinarySearch(gates, r.Gate); !found {
			gates = slices.Insert(gates, i, r.Gate)
		}
	}
	final := allFinal
	for _, r := range prev {
		if !r.Leaving && !finals[gateProcess{r.Gate, r.Incarnation}] {
			final = false
		}
	}
	out.Final = final || graceOver
	out.Queued, out.Renewed, out.Revoked = minuteCounts(queued), minuteCounts(renewed), minuteCounts(revoked)
	out.Taken, out.Unsure, out.StoreTaken = poolCounts(taken), poolCounts(unsure), store
	out.Gates = len(gates)
	out.Seq = 2 * seq
	if out.Final {
		out.Seq++
	}
	return out, true
}

// gateProcess is one process of a gate: its reports replace each other.
type gateProcess struct {
	gate        string
	incarnation uint64
}

func addMinuteCounts(to map[int64]int, l []MinuteCount) {
	for _, c := range l {
		to[c.Minute.UnixMilli()] += c.Count
	}
}

func addPoolCounts(to map[[2]string]int, l []PoolCount) {
	for _, c := range l {
		to[[2]string{c.Pool, c.Scope}] += c.Count
	}
}
