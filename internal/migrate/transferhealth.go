package migrate

import (
	"context"
	"errors"
	"fmt"

	"github.com/edgeflow/edgeflow/internal/objectstore"
)

// observe hands a failed attempt to the page's StoreHealth. A suspect side
// (403 on many keys) is probed once per page: failing, the store is down
// (revoked credentials); passing, the 403s are the objects'.
func (t *transfer) observe(ctx context.Context, key string, err error) Verdict {
	side := t.sideOf(err)
	v := t.opts.Health.Observe(side, key, err)
	if v != VerdictSuspect {
		return v
	}
	if t.confirmDown(ctx, side, err) {
		return VerdictDown
	}
	return VerdictObject
}

// storeFailsProbe asks the store before an object out of attempts on a
// store-class error becomes a dead letter. Too few keys failed with it to
// blame the store, but the health is the page's: the last object of a page,
// alone in failing when its store stops, sees no other key fail. A failing
// probe calls the side down (the object waits for it); a passing one leaves
// the error to the object. Nil Probe: the object's.
func (t *transfer) storeFailsProbe(ctx context.Context, side string, last error) bool {
	if t.opts.Probe == nil {
		return false
	}
	t.probeMu.Lock()
	defer t.probeMu.Unlock()
	if t.opts.Health.Down() != nil {
		return true // another object's probe (or keys) settled it meanwhile
	}
	perr := t.opts.Probe(ctx, side)
	if ctx.Err() != nil {
		return true // stopping anyway: undone, not failed
	}
	if perr == nil {
		return false
	}
	t.opts.Health.Trip(side, fmt.Sprintf("%v, on every attempt of one key, and the probe failed: %v", last, perr))
	return true
}

// confirmDown probes a suspect side once; the other transfers denied
// meanwhile wait for the same verdict.
func (t *transfer) confirmDown(ctx context.Context, side string, denied error) bool {
	t.probeMu.Lock()
	defer t.probeMu.Unlock()
	if down, ok := t.probes[side]; ok {
		return down
	}
	var perr error = errors.New("no probe")
	if t.opts.Probe != nil {
		perr = t.opts.Probe(ctx, side)
	}
	if ctx.Err() != nil {
		return true // stopping anyway: undone, not failed
	}
	down := perr != nil
	if down {
		t.opts.Health.Trip(side, fmt.Sprintf("access denied on %d keys within %s and the probe failed: %v", StoreThreshold, StoreWindow, perr))
	} else {
		t.opts.Health.Trust(side)
	}
	if t.probes == nil {
		t.probes = map[string]bool{}
	}
	t.probes[side] = down
	return down
}

// sideOf says which store answered err: by the bucket it names, and when
// both sides use one bucket (one store, other prefixes) by the request.
func (t *transfer) sideOf(err error) string {
	var se *objectstore.Error
	if !errors.As(err, &se) {
		return SideDest
	}
	src, dst := t.sides.SourceBucket, t.sides.DestBucket
	switch {
	case se.Bucket == src && se.Bucket != dst:
		return SideSource
	case se.Bucket == dst && se.Bucket != src:
		return SideDest
	case se.Op == "get" || se.Op == "list":
		return SideSource
	}
	return SideDest
}
