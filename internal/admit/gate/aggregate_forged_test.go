package gate

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/edgeflow/edgeflow/internal/admit"
)

// forge writes a field into the data center's counts of minute t0, as
// someone with access to Redis would: signed with the gates' signer (a
// key holder, or a gate with a bug) or not, and bumps the hash's version
// so the holder reads it.
func (d *dcGates) forge(field string, v any, signed bool) {
	d.t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		d.t.Fatal(err)
	}
	key := countsKey("shop", d.dc, t0)
	value := string(b)
	if signed {
		value = signValue(d.signer, key, field, value)
	}
	client := d.reporters[0].Aggregate.Client
	if err := client.HSet(context.Background(), key, field, value).Err(); err != nil {
		d.t.Fatal(err)
	}
	if err := client.HIncrBy(context.Background(), key, versionField, 1).Err(); err != nil {
		d.t.Fatal(err)
	}
}

// fieldOf is the field gate i writes its reports of minute t0 under.
func (d *dcGates) fieldOf(i int) string {
	d.t.Helper()
	all, err := d.reporters[0].Aggregate.Client.HGetAll(context.Background(), countsKey("shop", d.dc, t0)).Result()
	if err != nil {
		d.t.Fatal(err)
	}
	for field := range all {
		if strings.HasPrefix(field, d.dc+"-"+strconv.Itoa(i)+"/") {
			return field
		}
	}
	d.t.Fatalf("gate %d wrote no report: %v", i, all)
	return ""
}

// finalOf is the final aggregate the room got of minute t0 (nil: none).
func (d *dcGates) finalOf() *admit.Report {
	var final *admit.Report
	for i, r := range d.got {
		if r.Minute.Equal(t0) && r.Final {
			final = &d.got[i]
		}
	}
	return final
}

// Fields in the data center's counts that no gate wrote, or that no gate
// could have written, do not change the room's counts: each is dropped and
// counted by what and why. Before, the aggregate summed every field as is:
// an unsigned one, negative counts, a report under another gate's name, a
// million admissions, and a direct mark that dropped a real gate's counts.
func TestForgedFieldsAreDroppedAndCounted(t *testing.T) {
	d := newDCGates(t, 2)
	d.step(0)
	admitAt := func(i, n int) {
		for range n {
			d.rooms[i].tally.Add(admit.Effect{Minute: t0, NewVisitor: true, Admitted: true, Seen: true, Pool: admit.PoolNew, Scope: d.dc})
		}
	}
	admitAt(0, 1)
	admitAt(1, 2)
	d.step(2 * time.Second) // both gates write
	forged := func(gate string, admitted int) admit.Report {
		return admit.Report{Room: "shop", DataCenter: d.dc, Gate: gate, Minute: t0, Incarnation: 1, Seq: 9,
			NewVisitors: admitted, Admitted: admitted, Final: true, Leaving: true,
			Taken: []admit.PoolCount{{Pool: admit.PoolNew, Scope: d.dc, Count: max(admitted, 0)}}}
	}
	d.forge("evil/1", forged("evil", 50), false)
	d.forge("neg/1", forged("neg", -40), true)
	d.forge("liar/1", forged(d.dc+"-0", 7), true)
	d.forge("big/1", forged("big", 1_000_000), true)
	real0 := d.fieldOf(0)
	inc, _ := strconv.ParseUint(real0[strings.LastIndex(real0, "/")+1:], 10, 64)
	d.forge(directPrefix+real0, admit.Report{Room: "shop", DataCenter: d.dc, Gate: d.dc + "-0", Minute: t0, Incarnation: inc, Final: true}, false)
	for d.now.Before(t0.Add(time.Minute + 2*time.Second)) {
		d.step(100 * time.Millisecond)
	}
	final := d.finalOf()
	if final == nil {
		t.Fatalf("no final aggregate of the minute: %+v", d.got)
	}
	if final.Admitted != 3 || final.Gates != 2 {
		t.Errorf("final aggregate: %d admissions of %d gates, want the real gates' 3 of 2", final.Admitted, final.Gates)
	}
	if got := d.room.Ledger.Totals(t0).Admitted; got != 3 {
		t.Errorf("the room counts %d admissions, want 3", got)
	}
	for _, c := range []struct {
		what, reason string
		want         uint64
	}{
		{dropReport, reasonUnsigned, 1}, {dropReport, reasonCounts, 2}, {dropReport, reasonName, 1}, {dropMark, reasonUnsigned, 1},
	} {
		if got := d.drops.Count(c.what, c.reason); got != c.want {
			t.Errorf("dropped %s (%s): %d, want %d", c.what, c.reason, got, c.want)
		}
	}
}

// A gate's report copied into another data center's counts, or another
// minute's, is not believed there: the tag binds it to its place.
func TestSignedFieldCopiedElsewhereIsDropped(t *testing.T) {
	d := newDCGates(t, 1)
	d.step(0)
	d.rooms[0].tally.Add(admit.Effect{Minute: t0, NewVisitor: true, Admitted: true, Seen: true, Pool: admit.PoolNew, Scope: d.dc})
	d.step(2 * time.Second)
	ctx := context.Background()
	client := d.reporters[0].Aggregate.Client
	raw, err := client.HGet(ctx, countsKey("shop", d.dc, t0), d.fieldOf(0)).Result()
	if err != nil {
		t.Fatal(err)
	}
	// The gate's own value, under another field of its minute.
	if err := client.HSet(ctx, countsKey("shop", d.dc, t0), "copy/1", raw).Err(); err != nil {
		t.Fatal(err)
	}
	client.HIncrBy(ctx, countsKey("shop", d.dc, t0), versionField, 1)
	for d.now.Before(t0.Add(time.Minute + 2*time.Second)) {
		d.step(100 * time.Millisecond)
	}
	if final := d.finalOf(); final == nil || final.Admitted != 1 || final.Gates != 1 {
		t.Fatalf("final aggregate %+v, want the gate's 1 admission alone", final)
	}
	if got := d.drops.Count(dropReport, reasonUnsigned); got != 1 {
		t.Errorf("dropped %d copied values, want 1", got)
	}
}

// A lease no gate signed (someone set the key, with no expiry) does not
// stop the data center's aggregation: a gate takes it over and the room
// gets the minute. Before, the gates waited for it to lapse, forever.
func TestUnsignedLeaseDoesNotStopAggregation(t *testing.T) {
	d := newDCGates(t, 2)
	ctx := context.Background()
	if err := d.reporters[0].Aggregate.Client.Set(ctx, leaseKey(d.dc), "attacker", 0).Err(); err != nil {
		t.Fatal(err)
	}
	d.step(0)
	for _, r := range d.rooms {
		r.tally.Add(admit.Effect{Minute: t0, NewVisitor: true, Admitted: true, Seen: true})
	}
	for d.now.Before(t0.Add(time.Minute + 2*time.Second)) {
		d.step(100 * time.Millisecond)
	}
	if final := d.finalOf(); final == nil || final.Admitted != 2 {
		t.Fatalf("final aggregate %+v, want the 2 gates' admissions", final)
	}
	if !d.holds() {
		t.Error("no gate holds the lease")
	}
	if d.drops.Count(dropLease, reasonUnsigned) == 0 {
		t.Error("the unsigned lease was not counted")
	}
}

// A gate's signed lease written back with no expiry (replayed once its
// holder is gone) stops the aggregation only until its signed expiry is
// past beyond any clock skew.
func TestReplayedLeaseLapses(t *testing.T) {
	d := newDCGates(t, 2)
	gone := &Aggregator{DataCenter: d.dc, Holder: "gone/1", Lease: 300 * time.Millisecond, Signer: d.signer}
	if err := d.reporters[0].Aggregate.Client.Set(context.Background(), leaseKey(d.dc), gone.leaseValue(d.now), 0).Err(); err != nil {
		t.Fatal(err)
	}
	d.step(0)
	if d.holds() {
		t.Fatal("a gate took over a lease its holder may still renew")
	}
	for _, r := range d.rooms {
		r.tally.Add(admit.Effect{Minute: t0, NewVisitor: true, Admitted: true, Seen: true})
	}
	for d.now.Before(t0.Add(time.Minute + 2*time.Second)) {
		d.step(100 * time.Millisecond)
	}
	if final := d.finalOf(); final == nil || final.Admitted != 2 {
		t.Fatalf("final aggregate %+v, want the 2 gates' admissions", final)
	}
	if d.drops.Count(dropLease, reasonExpired) == 0 {
		t.Error("the replayed lease was not counted")
	}
}
