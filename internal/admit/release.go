package admit

import "time"

// Unclaimed FIFO reservations. Each minute the room reserves a slot for
// every visitor it counted in a queued bucket; a visitor who gave up, or
// refreshes too late to come back within the minute, leaves that slot
// unused, and FIFO forbids the next bucket to take it — so the room queued
// people below its limits minute after minute. Late in the minute the slots
// a bucket has not claimed are released to the next bucket: the oldest one
// with visitors the reservations did not cover (or, when every counted
// visitor is covered, the queued visitors of earlier minutes the room has
// not counted yet: not new visitors, who would overtake those). A released slot is taken on the reserving bucket's own
// counter, below its limit, so the pools still never hand out more than the
// minute's slots. The price: a visitor who refreshes so late that it misses
// three quarters of the minute its bucket was reserved in loses the slot,
// as it loses its place already.

// ReleaseAfter is how far into its minute a snapshot's bucket reservations
// are released to the next bucket: the minute's last refresh interval (the
// longest a jittered one can be), so that every visitor of the next bucket
// who refreshes on time checks in once after the release, but never before
// half the minute, so that the reserved visitors have checked in since the
// snapshot reached their gate.
func ReleaseAfter(snap *Snapshot) time.Duration {
	length := snap.MinuteLength()
	base := RefreshBase(snap.Settings.RefreshIntervalSeconds, length)
	longest := time.Duration(base+base/5) * time.Second
	return max(length-longest, length/2)
}

// releasedPools lists the older buckets' pools a FIFO visitor of bucket may
// take unclaimed slots from at now ("" when none): only on the snapshot of
// the current minute, after ReleaseAfter, and only for the next bucket.
func releasedPools(snap *Snapshot, bucket, now time.Time) []*Pool {
	length := snap.MinuteLength()
	if !MinuteOf(now, length).Equal(snap.Minute) || now.Sub(snap.Minute) < ReleaseAfter(snap) {
		return nil
	}
	if next, ok := nextBucket(snap); ok && bucket.After(next) {
		return nil
	}
	var out []*Pool
	for i := range snap.Pools {
		if p := &snap.Pools[i]; !p.Bucket.IsZero() && p.Bucket.Before(bucket) {
			out = append(out, p)
		}
	}
	return out
}

// nextBucket is the oldest bucket with visitors its reservation does not
// cover; ok is false when every counted visitor is covered. Only it may take
// released slots: a later bucket could overtake its visitors by a minute.
func nextBucket(snap *Snapshot) (time.Time, bool) {
	for _, b := range snap.Buckets {
		if b.Waiting > b.ReservedSlots {
			return b.Key, true
		}
	}
	return time.Time{}, false
}
