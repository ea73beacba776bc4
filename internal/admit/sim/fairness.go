package sim

import (
	"math"
	"slices"
	"time"
)

// Fairness says how a run ordered its queue.
type Fairness struct {
	// Queued visitors who were admitted, and how many of them were
	// admitted in an earlier minute than someone of an earlier minute
	// bucket (FIFO's promise is the order of minutes: within a minute the
	// reserved slots go to whoever checks in first). Overall, and counting
	// only pairs within one data center.
	Admitted             int     `json:"admitted_from_queue"`
	Overtakers           int     `json:"overtakers"`
	OvertakersPct        float64 `json:"overtakers_pct"`
	OvertakersInDCPct    float64 `json:"overtakers_within_data_center_pct"`
	OvertakersInDC       int     `json:"overtakers_within_data_center"`
	OvertakersAnyTimePct float64 `json:"overtakers_by_instant_pct"` // by admission instant instead of minute
	// KendallTau is Kendall's τ between arrival bucket and admission order
	// over the pairs of admitted visitors from different buckets that
	// waited at the same time: +1 when the earlier bucket always went
	// first (FIFO), 0 when the bucket says nothing about who goes first
	// (a fair random queue, where two visitors waiting together have the
	// same chance at every check-in). Pairs counts them.
	KendallTau float64 `json:"kendall_tau_cowaiting"`
	Pairs      int64   `json:"pairs"`
	// Mean wait (minutes) of admitted visitors by refresh behaviour.
	MeanWaitByRefresh map[string]float64 `json:"mean_wait_minutes_by_refresh"`
	// FirstSecondsPct is the share of the admitted who got in within the
	// first 5 s of a minute (1/12 of it), while gates still decide on the
	// previous minute's snapshot: 8.3% when slots come at moments that
	// favour no part of the minute, as a random queue's should.
	FirstSecondsPct float64 `json:"admitted_first_5s_of_minute_pct"`
}

// MeasureFairness computes the fairness of a run from its visitors.
func MeasureFairness(people []VisitorRecord) Fairness {
	var admitted []VisitorRecord
	for _, p := range people {
		if p.Queued && p.AdmittedAt >= 0 {
			admitted = append(admitted, p)
		}
	}
	f := Fairness{Admitted: len(admitted), MeanWaitByRefresh: map[string]float64{}}
	if len(admitted) == 0 {
		return f
	}
	byMinute := func(p VisitorRecord) time.Duration { return p.AdmittedAt / time.Minute }
	byInstant := func(p VisitorRecord) time.Duration { return p.AdmittedAt }
	f.Overtakers = overtakers(admitted, byMinute)
	f.OvertakersPct = pct(f.Overtakers, len(admitted))
	f.OvertakersAnyTimePct = pct(overtakers(admitted, byInstant), len(admitted))
	dcs := 0
	for _, p := range admitted {
		dcs = max(dcs, p.DataCenter+1)
	}
	for dc := range dcs {
		in := slices.DeleteFunc(slices.Clone(admitted), func(p VisitorRecord) bool { return p.DataCenter != dc })
		f.OvertakersInDC += overtakers(in, byMinute)
	}
	f.OvertakersInDCPct = pct(f.OvertakersInDC, len(admitted))
	f.KendallTau, f.Pairs = cowaitingTau(admitted)
	early := 0
	for _, p := range admitted {
		if p.AdmittedAt%time.Minute < 5*time.Second {
			early++
		}
	}
	f.FirstSecondsPct = pct(early, len(admitted))
	sum, n := [3]float64{}, [3]int{}
	for _, p := range admitted {
		sum[p.Refresh] += p.Wait().Minutes()
		n[p.Refresh]++
	}
	for r := range sum {
		if n[r] > 0 {
			f.MeanWaitByRefresh[Refresh(r).String()] = round2(sum[r] / float64(n[r]))
		}
	}
	return f
}

// overtakers counts the visitors admitted (by key) before some visitor of
// an earlier bucket: v overtakes when a visitor of a bucket before v's was
// admitted later than v.
func overtakers(people []VisitorRecord, key func(VisitorRecord) time.Duration) int {
	if len(people) == 0 {
		return 0
	}
	maxBucket := 0
	for _, p := range people {
		maxBucket = max(maxBucket, p.Bucket)
	}
	// latest[b] is the latest admission of bucket b; before[b] the latest
	// admission of any bucket before b.
	latest := make([]time.Duration, maxBucket+1)
	for i := range latest {
		latest[i] = -1
	}
	for _, p := range people {
		latest[p.Bucket] = max(latest[p.Bucket], key(p))
	}
	before := make([]time.Duration, maxBucket+1)
	running := time.Duration(-1)
	for b := range latest {
		before[b] = running
		running = max(running, latest[b])
	}
	n := 0
	for _, p := range people {
		if key(p) < before[p.Bucket] {
			n++
		}
	}
	return n
}

// cowaitingTau is Kendall's τ over pairs from different buckets that were
// in the queue together: concordant when the earlier bucket was admitted
// first.
func cowaitingTau(people []VisitorRecord) (float64, int64) {
	ps := slices.Clone(people)
	slices.SortFunc(ps, func(a, b VisitorRecord) int {
		if a.Bucket != b.Bucket {
			return a.Bucket - b.Bucket
		}
		return int(a.Arrival - b.Arrival)
	})
	var concordant, discordant int64
	for i, u := range ps {
		for _, v := range ps[i+1:] {
			if v.Bucket == u.Bucket {
				continue
			}
			// u's bucket is earlier. They waited together if v arrived
			// before u was admitted.
			if v.Arrival >= u.AdmittedAt {
				continue
			}
			if u.AdmittedAt < v.AdmittedAt {
				concordant++
			} else if v.AdmittedAt < u.AdmittedAt {
				discordant++
			}
		}
	}
	pairs := concordant + discordant
	if pairs == 0 {
		return 0, 0
	}
	return round4(float64(concordant-discordant) / float64(pairs)), pairs
}

func pct(n, of int) float64 {
	if of == 0 {
		return 0
	}
	return round2(100 * float64(n) / float64(of))
}

func round4(x float64) float64 { return math.Round(x*1e4) / 1e4 }
