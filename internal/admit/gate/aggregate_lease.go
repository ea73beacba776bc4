package gate

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// The data center's aggregator lease: one key whose value names the
// holding gate process, with the expiry it set and a tag (Signer) over
// both, so that only a gate holding the cookie keys can hold it: a value
// no gate signed is taken over at once, and a signed one kept past its
// expiry (replayed, its Redis expiry removed) once the gates' clocks
// cannot explain it.

// lease takes the data center's lease if it is free, or renews it if it
// is ours (its value starts with our holder's name), or replaces it if it
// holds exactly ARGV[3] (a value no gate signed, or a lapsed one); it
// returns {1, ”} if we hold it, else {0, the value}.
var lease = redis.NewScript(`
local v = redis.call('GET', KEYS[1])
if v == false or v == ARGV[3] or string.sub(v, 1, string.len(ARGV[1])) == ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[4])
  return {1, ''}
end
return {0, v}
`)

var release = redis.NewScript(`
local v = redis.call('GET', KEYS[1])
if v and string.sub(v, 1, string.len(ARGV[1])) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`)

// leaseSkew is how far past its signed expiry a lease still stands: the
// gates' clocks may differ by that much. A lease Redis keeps longer (its
// expiry removed) is taken over.
const leaseSkew = 5 * time.Second

// leaseValue is this holder's signed lease until now+Lease: "holder|expiry
// (Unix ms)|tag".
func (a *Aggregator) leaseValue(now time.Time) string {
	exp := strconv.FormatInt(now.Add(a.Lease).UnixMilli(), 10)
	return a.Holder + "|" + exp + "|" + a.Signer.Sign(leaseKey(a.DataCenter), a.Holder, exp)
}

// leaseStands reports whether another holder's lease value is a gate's
// and still running at now; if not, why.
func (a *Aggregator) leaseStands(v string, now time.Time) (reason string, ok bool) {
	parts := strings.Split(v, "|")
	if len(parts) != 3 || !a.Signer.Verify(parts[2], leaseKey(a.DataCenter), parts[0], parts[1]) {
		return reasonUnsigned, false
	}
	exp, err := strconv.ParseInt(parts[1], 10, 64)
	if err != nil || now.After(time.UnixMilli(exp).Add(a.Lease+leaseSkew)) {
		return reasonExpired, false
	}
	return "", true
}

// takeLease takes, renews or takes over the lease; true if we hold it.
func (a *Aggregator) takeLease(ctx context.Context, now time.Time) (bool, error) {
	if a.Signer == nil {
		return false, errNoSigner
	}
	keys := []string{leaseKey(a.DataCenter)}
	replace := ""
	for range 2 {
		res, err := lease.Run(ctx, a.Client, keys, a.Holder+"|", a.leaseValue(now), replace, a.Lease.Milliseconds()).Slice()
		if err != nil {
			return false, err
		}
		if len(res) != 2 {
			return false, fmt.Errorf("redis lease: unexpected answer %v", res)
		}
		if n, _ := res[0].(int64); n == 1 {
			return true, nil
		}
		other, _ := res[1].(string)
		reason, stands := a.leaseStands(other, now)
		if stands {
			a.leaseWarn = false
			return false, nil
		}
		// No gate holds it: a value no gate signed, or a lease kept past
		// its expiry. Taken over, if it is still that value.
		a.Drops.add(dropLease, reason)
		if !a.leaseWarn {
			a.Logger.Warn("the data center's report lease in Redis is no gate's; taking it over (someone else writes to the gates' Redis)",
				"dataCenter", a.DataCenter, "reason", reason)
			a.leaseWarn = true
		}
		replace = other
	}
	return false, nil
}

func (a *Aggregator) renew(ctx context.Context, now time.Time) {
	held, err := a.takeLease(ctx, now)
	// The holder renews three times a lease; the others look once a lease
	// (a data center of many gates would otherwise keep Redis busy).
	a.nextLease = now.Add(a.Lease)
	if err == nil && held {
		a.nextLease = now.Add(a.Lease / 3)
	}
	switch {
	case err != nil || !held:
		if now.Before(a.holdsUntil) {
			a.Logger.Info("no longer aggregating the data center's reports", "dataCenter", a.DataCenter, "err", err)
		}
		a.holdsUntil = time.Time{}
	case !now.Before(a.holdsUntil):
		a.Logger.Info("aggregating the data center's reports", "dataCenter", a.DataCenter)
		clear(a.minutes) // a new holder reads every minute again (sentField says what was sent)
		clear(a.owed)    // and looks at every kept minute again (sendOwed)
		clear(a.scanned)
		a.holdsUntil = now.Add(a.Lease)
	default:
		a.holdsUntil = now.Add(a.Lease)
	}
}
