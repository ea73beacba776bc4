package admit

import "time"

// Ticket is what a visitor carries between requests: the content of the
// room cookie. The gate seals it (AEAD) and opens it; the engine only reads
// and writes the plain struct. Times are Unix milliseconds, 0 for unset.
type Ticket struct {
	Room string `json:"room"`
	// BucketID is the start of the minute of the visitor's first request:
	// the FIFO order, kept when the room switches to random and back.
	BucketID int64 `json:"bucketId"`
	// AcceptedAt is when the visitor was admitted; 0 while queued.
	AcceptedAt int64 `json:"acceptedAt,omitempty"`
	// LastCheckInTime is the visitor's last counted request. A session runs
	// from it (or from AcceptedAt when renewal is disabled); a queued visitor
	// may check in again RefreshIntervalSeconds after it, not before.
	LastCheckInTime int64 `json:"lastCheckInTime"`
	// RefreshIntervalSeconds is this visitor's jittered interval while queued.
	RefreshIntervalSeconds int `json:"refreshIntervalSeconds,omitempty"`
	// Fresh marks the ticket a queued visitor got at its first request: it
	// has not come back with it yet, so it is not counted as waiting (a
	// ticket handed out is not a visitor waiting; one that comes back is).
	Fresh bool `json:"fresh,omitempty"`
}

// Admitted reports whether the ticket records an admission (which may have
// expired since).
func (t *Ticket) Admitted() bool { return t != nil && t.AcceptedAt != 0 }

// Bucket is the ticket's minute bucket.
func (t *Ticket) Bucket() time.Time { return fromMillis(t.BucketID) }

// LastCheckIn is the ticket's last counted request.
func (t *Ticket) LastCheckIn() time.Time { return fromMillis(t.LastCheckInTime) }

// SessionStart is when the ticket's session started counting: the last
// check-in, or the admission when renewal is disabled.
func (t *Ticket) SessionStart(renewalDisabled bool) time.Time {
	if renewalDisabled {
		return fromMillis(t.AcceptedAt)
	}
	return fromMillis(t.LastCheckInTime)
}

// SessionValid reports whether an admitted ticket's session still runs at
// now: it lasts session minutes of the room's minute length from its start.
func (t *Ticket) SessionValid(now time.Time, sessionMinutes int, minute time.Duration, renewalDisabled bool) bool {
	if !t.Admitted() {
		return false
	}
	return now.Before(t.SessionStart(renewalDisabled).Add(time.Duration(sessionMinutes) * minute))
}

// MinuteOf is the start of the minute holding t, for a minute of length
// (60 s in production; tests may shorten it). Everything that counts by
// minute — buckets, counters, reports, snapshots — uses it.
func MinuteOf(t time.Time, length time.Duration) time.Time {
	return t.UTC().Truncate(length)
}

func millis(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

func fromMillis(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms).UTC()
}

// RefreshBase is the check-in interval of queued visitors before jitter:
// the room's setting (1-30 s), used as given in a room of 60-s minutes.
// Jittered by at most 20% it stays under 36 s, so every waiting visitor
// checks in at least once in every minute and is counted. In a room with a
// shorter minute (tests, the simulator) the default scales with the minute
// (a third of it, as 20 s is of 60) and an explicit value stays as given up
// to half the minute, the most its validation accepts; older rooms that
// hold more are held to that half.
func RefreshBase(setting int, minute time.Duration) int {
	setting = min(max(setting, 1), MaxRefreshIntervalSeconds)
	if minute <= 0 || minute >= time.Minute {
		return setting
	}
	if setting == DefaultRefreshIntervalSeconds {
		return max(1, int(minute/(3*time.Second)))
	}
	return max(1, min(setting, int(minute/(2*time.Second))))
}

// JitterRefresh varies a visitor's refresh interval by up to ±20% with each
// check-in, from the caller's random bits, so that visitors who arrived
// together drift apart and no check-in phase is favoured when slots free
// up. It averages to base over many check-ins.
func JitterRefresh(base int, entropy uint64) int {
	spread := base / 5
	if spread == 0 {
		return max(base, 1)
	}
	offset := int(entropy%uint64(2*spread+1)) - spread
	return max(base+offset, 1)
}

// earlyRefreshTolerance forgives clock differences between gates: a check-in
// this close to its permitted time counts as on time.
const earlyRefreshTolerance = 250 * time.Millisecond

// checkInDue reports whether a queued ticket may check in at now, and
// otherwise how long it still has to wait.
func (t *Ticket) checkInDue(now time.Time) (bool, time.Duration) {
	due := t.LastCheckIn().Add(time.Duration(t.RefreshIntervalSeconds) * time.Second)
	if wait := due.Sub(now); wait > earlyRefreshTolerance {
		return false, wait
	}
	return true, 0
}
