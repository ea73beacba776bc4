package gate

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/edgeflow/edgeflow/internal/admit"
)

// failingStrategy fails every take, as a store that does not answer in
// time does.
type failingStrategy struct{ err error }

func (failingStrategy) Name() string { return "failing" }
func (s failingStrategy) TakeSlot(context.Context, admit.SlotRequest) (string, bool, error) {
	return "", false, s.err
}

// A take that fails while the store still answers a probe (a connection
// pool that was full for a moment, under a burst of visitors) queues the
// visitor and keeps the shared counters: falling back to the even split
// there let the other gates, still on the shared counters, overshoot
// (seen in make chaos: 18 admitted in a minute of 12). A store that does
// not answer the probe is down.
func TestFailoverOnlyWhenTheStoreDoesNotAnswer(t *testing.T) {
	snap, err := admit.NewRoom(admit.Settings{Name: "busy", TotalActiveUsers: 100, NewUsersPerMinute: 10}, 60, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	req := admit.SlotRequest{Snapshot: snap.Snapshot, Now: time.Now(), Gate: admit.Gate{DataCenter: "ams", ID: "ams-1"}, Pool: &snap.Snapshot.Pools[0]}
	probeErr := error(nil)
	f := &Failover{Shared: failingStrategy{errors.New("redis: connection pool timeout")}, Even: admit.EvenSplit{Store: admit.NewMemoryCounter(nil)},
		Probe: func(context.Context) error { return probeErr }}

	if _, ok, err := f.TakeSlot(context.Background(), req); ok || !errors.Is(err, ErrCountersBusy) || f.State() != StateShared {
		t.Fatalf("store answers: took %t, err %v, state %s; want queued, busy, still shared", ok, err, f.State())
	}
	probeErr = errors.New("dial tcp: connection refused")
	if _, ok, err := f.TakeSlot(context.Background(), req); ok || !errors.Is(err, ErrCountersDown) || f.State() != StateDown {
		t.Fatalf("store gone: took %t, err %v, state %s; want queued, down", ok, err, f.State())
	}
}
