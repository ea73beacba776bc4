package admit

import (
	"slices"
	"strings"
	"time"
)

// SlotsAvailable is how many visitors the room may admit this minute:
// min(total_active_users - activeUsers, new_users_per_minute), never
// negative.
func SlotsAvailable(totalActiveUsers, activeUsers, newUsersPerMinute int) int {
	return max(0, min(totalActiveUsers-activeUsers, newUsersPerMinute))
}

// Reserve hands slots to the waiting buckets, oldest first (FIFO): each
// bucket gets min(waiting, slots left). It returns the buckets with their
// ReservedSlots set, and the slots the reservations leave for new visitors.
// The buckets must be sorted oldest first.
func Reserve(buckets []Bucket, slots int) ([]Bucket, int) {
	out := slices.Clone(buckets)
	for i := range out {
		out[i].ReservedSlots = min(out[i].Waiting, slots)
		slots -= out[i].ReservedSlots
	}
	return out, slots
}

// DataCenterUsers is what the room saw at one data center in a minute.
type DataCenterUsers struct {
	DataCenter string
	Users      int      // distinct sessions seen
	Gates      []string // gates that reported
	// Aggregated are the gates counted by aggregated reports beyond the
	// one name each of those has in Gates (Report.Gates).
	Aggregated int
}

// Shares turns the previous minute's users per data center into traffic
// shares of the room's limit ("How Waiting Room makes queueing decisions"): a
// data center's share is its users over total_active_users (or over all
// users, when they exceed the limit), and the Anywhere share is what the data
// centers leave. The result is sorted by data center.
func Shares(users []DataCenterUsers, totalActiveUsers int) ([]TrafficShare, float64) {
	denom := shareDenominator(users, totalActiveUsers)
	out := make([]TrafficShare, 0, len(users))
	sum := 0
	for _, u := range users {
		if u.Users <= 0 && len(u.Gates) == 0 && u.Aggregated == 0 {
			continue
		}
		gates := slices.Clone(u.Gates)
		slices.Sort(gates)
		gates = slices.Compact(gates)
		out = append(out, TrafficShare{DataCenter: u.DataCenter, Users: max(u.Users, 0), Share: float64(max(u.Users, 0)) / float64(denom), Gates: gates,
			DataCenterWorkersActive: len(gates) + u.Aggregated})
		sum += max(u.Users, 0)
	}
	slices.SortFunc(out, func(a, b TrafficShare) int { return strings.Compare(a.DataCenter, b.DataCenter) })
	return out, float64(denom-sum) / float64(denom)
}

func shareDenominator(users []DataCenterUsers, total int) int {
	sum := 0
	for _, u := range users {
		sum += max(u.Users, 0)
	}
	return max(total, sum, 1)
}

// Split divides n slots between the data centers by their traffic shares,
// each rounded down, and gives the rest to Anywhere, so the scopes never sum
// past n. With no traffic history every slot is in Anywhere. Data centers
// whose share rounds to nothing get no scope. Users and totalActiveUsers are
// those the shares were computed from (integer arithmetic, so 22.5 is 22).
func Split(n int, shares []TrafficShare, totalActiveUsers int) []Scope {
	if n <= 0 {
		return nil
	}
	denom := totalActiveUsers
	sum := 0
	for _, s := range shares {
		sum += s.Users
	}
	denom = max(denom, sum, 1)
	scopes := make([]Scope, 0, len(shares)+1)
	given := 0
	for _, s := range shares {
		limit := int(int64(n) * int64(s.Users) / int64(denom))
		if limit > 0 {
			scopes = append(scopes, Scope{Name: s.DataCenter, Limit: limit})
			given += limit
		}
	}
	if rest := n - given; rest > 0 {
		scopes = append(scopes, Scope{Name: Anywhere, Limit: rest})
	}
	return scopes
}

// Remainder is a floor under a scope of this minute's allocation: what a
// gate still deciding on an earlier minute's snapshot may spend from it
// (StaleRemainder), or what the gates already took from it this minute
// (when the room republishes mid-minute).
type Remainder struct {
	Bucket time.Time // zero: new visitors
	Scope  string
	Slots  int
}

// AllocationInput is what Allocate needs.
type AllocationInput struct {
	Method           QueueingMethod
	Slots            int      // SlotsAvailable this minute
	Buckets          []Bucket // waiting, oldest first, with ReservedSlots (Reserve)
	NewUserSlots     int      // what the reservations leave
	Shares           []TrafficShare
	TotalActiveUsers int
	Carry            []Remainder
}

// Allocate builds this minute's pools. FIFO: one pool per bucket holding
// reserved slots — a bucket reserved in full may be admitted anywhere (one
// Anywhere scope), a partly reserved one is split between the data centers
// by traffic share — and one pool of new visitors with what the
// reservations leave, split the same way. Random: one pool for everyone,
// split by traffic share. Passthrough and reject use no pools.
//
// The floors (Carry) are honoured: a scope never gets less than stale gates
// may still spend from it or than was already taken from it this minute,
// and what that costs is taken from the new visitors' pool first (Anywhere,
// then the data centers), then from the newest buckets, so the pools never
// sum past Slots (unless the floors alone do, after the limits were
// lowered).
func Allocate(in AllocationInput) []Pool {
	var pools []Pool
	switch in.Method {
	case FIFO:
		if in.NewUserSlots > 0 {
			pools = append(pools, Pool{Slots: in.NewUserSlots, Scopes: Split(in.NewUserSlots, in.Shares, in.TotalActiveUsers)})
		}
		for _, b := range in.Buckets {
			switch {
			case b.ReservedSlots <= 0:
			case b.ReservedSlots >= b.Waiting:
				pools = append(pools, Pool{Bucket: b.Key, Slots: b.ReservedSlots, Scopes: []Scope{{Name: Anywhere, Limit: b.ReservedSlots}}})
			default:
				pools = append(pools, Pool{Bucket: b.Key, Slots: b.ReservedSlots, Scopes: Split(b.ReservedSlots, in.Shares, in.TotalActiveUsers)})
			}
		}
	case Random:
		if in.Slots > 0 {
			pools = append(pools, Pool{Slots: in.Slots, Scopes: Split(in.Slots, in.Shares, in.TotalActiveUsers)})
		}
	}
	return withCarry(pools, in.Carry, in.Slots)
}

type scopeRef struct{ pool, scope int }

func withCarry(pools []Pool, carry []Remainder, slots int) []Pool {
	floors := map[scopeRef]int{} // only looked up, never ranged over
	ideal := map[scopeRef]int{}  // the limits before the floors
	for pi, p := range pools {
		for si, s := range p.Scopes {
			ideal[scopeRef{pi, si}] = s.Limit
		}
	}
	for _, c := range carry {
		if c.Slots <= 0 {
			continue
		}
		pi := slices.IndexFunc(pools, func(p Pool) bool { return p.Bucket.Equal(c.Bucket) })
		if pi < 0 {
			pools = append(pools, Pool{Bucket: c.Bucket})
			pi = len(pools) - 1
		}
		si := slices.IndexFunc(pools[pi].Scopes, func(s Scope) bool { return s.Name == c.Scope })
		if si < 0 {
			pools[pi].Scopes = append(pools[pi].Scopes, Scope{Name: c.Scope})
			si = len(pools[pi].Scopes) - 1
		}
		s := &pools[pi].Scopes[si]
		s.Limit = max(s.Limit, c.Slots)
		floors[scopeRef{pi, si}] = max(floors[scopeRef{pi, si}], c.Slots)
	}
	// Trim back to the slots available: new visitors' pool first (Anywhere,
	// then data centers), then buckets from the newest, never below a floor.
	excess := -slots
	for _, p := range pools {
		for _, s := range p.Scopes {
			excess += s.Limit
		}
	}
	order := make([]int, len(pools))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		pa, pb := pools[a].Bucket, pools[b].Bucket
		switch {
		case pa.IsZero() != pb.IsZero():
			if pa.IsZero() {
				return -1
			}
			return 1
		default:
			return pb.Compare(pa)
		}
	})
	for _, pi := range order {
		scopes := pools[pi].Scopes
		trim := make([]int, len(scopes)) // Anywhere first, then data centers from the last by name
		for i := range trim {
			trim[i] = i
		}
		slices.SortFunc(trim, func(a, b int) int { return -compareScopes(scopes[a], scopes[b]) })
		for _, si := range trim {
			if excess <= 0 {
				break
			}
			if cut := min(excess, scopes[si].Limit-floors[scopeRef{pi, si}]); cut > 0 {
				scopes[si].Limit -= cut
				excess -= cut
			}
		}
	}
	// What the floors added beyond the ideal limit is Carried: gates still
	// deciding on this snapshot in a later minute do not spend it again, so
	// a floor lasts one minute instead of carrying itself forward forever.
	for pi := range pools {
		for si := range pools[pi].Scopes {
			sc := &pools[pi].Scopes[si]
			sc.Carried = max(0, sc.Limit-ideal[scopeRef{pi, si}])
		}
	}
	// Tidy: recount, drop empty scopes and pools, keep data centers sorted
	// with Anywhere last, pools sorted by bucket (new visitors first).
	out := pools[:0]
	for _, p := range pools {
		p.Scopes = slices.DeleteFunc(p.Scopes, func(s Scope) bool { return s.Limit <= 0 })
		slices.SortFunc(p.Scopes, compareScopes)
		p.Slots = 0
		for _, s := range p.Scopes {
			p.Slots += s.Limit
		}
		if p.Slots > 0 {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(a, b Pool) int { return a.Bucket.Compare(b.Bucket) })
	return out
}

func compareScopes(a, b Scope) int {
	switch {
	case a.Name == b.Name:
		return 0
	case a.Name == Anywhere:
		return 1
	case b.Name == Anywhere:
		return -1
	default:
		return strings.Compare(a.Name, b.Name)
	}
}
