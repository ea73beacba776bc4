package gate

import (
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/edgeflow/edgeflow/internal/admit"
	"github.com/edgeflow/edgeflow/internal/keyring"
)

// What the gates write to Redis and read back as another gate's word (a
// report of a minute, a direct mark, the lease, a revocation) is signed:
// whoever can write to Redis without the gates' cookie keys cannot change
// a room's counts, take the data center's lease or revoke a session. A
// value is "tag payload", the tag an HMAC-SHA256 (keyring.Signer) of the
// Redis key, the field and the payload, under a key derived from the
// cookie keys for this purpose alone: a value copied to another field,
// minute, room or data center does not verify. Counters the gates change
// with atomic increments (the slot counters, the session ledger, the
// visitor marks) cannot carry a tag: what is read of them is bounded
// instead (see admissionBound), and Redis's ACL user keeps others out.

// RedisFieldPurpose derives the signing key from each cookie key.
const RedisFieldPurpose = "edgeflow redis field v1"

// NewRedisSigner is the signer of the gates' Redis values, from their
// cookie keys: sign with the primary, accept any key of the ring.
func NewRedisSigner(keys *keyring.Keyring) *keyring.Signer { return keys.Signer(RedisFieldPurpose) }

// signValue is the signed form of a value of field in key.
func signValue(s *keyring.Signer, key, field, payload string) string {
	return s.Sign(key, field, payload) + " " + payload
}

// openValue returns the payload of a signed value, false if it is not
// signed by a key of the ring for this key and field.
func openValue(s *keyring.Signer, key, field, value string) (string, bool) {
	tag, payload, ok := strings.Cut(value, " ")
	if !ok || !s.Verify(tag, key, field, payload) {
		return "", false
	}
	return payload, true
}

// What was dropped, and why, for edgeflow_gate_redis_dropped_total.
const (
	dropReport     = "report"     // a gate's counts of a minute
	dropMark       = "direct"     // a gate's mark that it reports a minute directly
	dropSent       = "sent"       // the lease holder's note of what it sent
	dropLease      = "lease"      // the data center's aggregator lease
	dropRevocation = "revocation" // a revoked session

	reasonUnsigned = "unsigned" // no valid tag: no gate wrote it
	reasonName     = "name"     // signed, but names another gate, room, minute or data center
	reasonCounts   = "counts"   // signed, but a count is negative or past what the room offered
	reasonExpired  = "expired"  // a signed lease its holder stopped renewing long ago
)

// redisDropKinds are the label pairs exported, each from the start.
var redisDropKinds = [][2]string{
	{dropReport, reasonUnsigned}, {dropReport, reasonName}, {dropReport, reasonCounts},
	{dropMark, reasonUnsigned}, {dropMark, reasonName},
	{dropSent, reasonUnsigned},
	{dropLease, reasonUnsigned}, {dropLease, reasonExpired},
	{dropRevocation, reasonUnsigned},
}

// RedisDrops counts the values read from Redis and dropped; its zero value
// is ready and a nil one counts nothing.
type RedisDrops struct{ n [9]atomic.Uint64 }

func (d *RedisDrops) add(what, reason string) {
	if d == nil {
		return
	}
	for i, k := range redisDropKinds {
		if k == [2]string{what, reason} {
			d.n[i].Add(1)
		}
	}
}

// Count is how many values of a kind were dropped, for tests and status.
func (d *RedisDrops) Count(what, reason string) uint64 {
	if d == nil {
		return 0
	}
	for i, k := range redisDropKinds {
		if k == [2]string{what, reason} {
			return d.n[i].Load()
		}
	}
	return 0
}

var redisDroppedDesc = prometheus.NewDesc("edgeflow_gate_redis_dropped_total",
	"Values this gate read from Redis and dropped, by what they were (report, direct, sent, lease, revocation) and why: unsigned, no gate holding the cookie keys wrote it; name, it names another gate, room, minute or data center than where it is; counts, a count is negative or past what the room offered; expired, a lease its holder stopped renewing. Anything but 0 means someone other than the gates writes to their Redis.",
	[]string{"what", "reason"}, nil)

func (d *RedisDrops) collect(ch chan<- prometheus.Metric) {
	for i, k := range redisDropKinds {
		ch <- prometheus.MustNewConstMetric(redisDroppedDesc, prometheus.CounterValue, float64(d.n[i].Load()), k[0], k[1])
	}
}

// admissionBound is the most admissions one data center's gates can make
// in a minute on snap's settings, whichever snapshot they decided on:
// new_users_per_minute (a minute's slots, freed places and an outage's
// admissions are each held to it) plus total_active_users (the headroom
// stale gates may spend). A count past it was not counted by a gate.
func admissionBound(snap *admit.Snapshot) int {
	return max(0, snap.Settings.NewUsersPerMinute) + max(0, snap.Settings.TotalActiveUsers)
}

// reportFieldOK checks a gate's report read from field of the counts of
// room's minute in data center dc: its gate and process are those the field
// names, it is of this room, minute and data center, a gate's own report
// (not an aggregate), and its counts are ones a gate can make: none
// negative, no admission count past bound.
func reportFieldOK(field string, rep admit.Report, room, dc string, length time.Duration, bound int) (reason string, ok bool) {
	gateName, inc, _ := strings.Cut(field, "/")
	if rep.Gate != gateName || strconv.FormatUint(rep.Incarnation, 10) != inc || rep.Gate == admit.AggregateGate ||
		rep.Room != room || rep.DataCenter != dc || rep.Gates != 0 {
		return reasonName, false
	}
	if rep.Validate(room, length) != nil {
		return reasonCounts, false
	}
	over := rep.Admitted > bound || rep.AdmittedFromQueue > rep.Admitted
	// Slots taken or read off the counters: of every pool and scope
	// together, what the room handed out in the minute. (Not Unsure: the
	// takes whose answer was lost count requests, not slots, and only
	// offset store readings, which are bounded.)
	for _, l := range [][]admit.PoolCount{rep.Taken, rep.StoreTaken} {
		sum := 0
		for _, p := range l {
			sum += p.Count
		}
		over = over || sum > bound
	}
	if over {
		return reasonCounts, false
	}
	return "", true
}
