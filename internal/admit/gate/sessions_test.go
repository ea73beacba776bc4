package gate

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/edgeflow/edgeflow/internal/admit"
	"github.com/edgeflow/edgeflow/internal/testenv"
)

// The session ledger on a real Redis: admissions, a renewal and a
// revocation, counted as ended only once their second is over, and keys
// that expire after their minute.
func TestRedisSessionLedger(t *testing.T) {
	testenv.Require(t, env)
	rc := redisCounter(t, env.Redis.URL)
	ctx := context.Background()
	room := "ledger-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	m := time.Now().Truncate(time.Minute).Add(10 * time.Minute) // a minute of expiries
	a, b, r := m.Add(10*time.Second), m.Add(20*time.Second+300*time.Millisecond), m.Add(30*time.Second)
	before := m.Add(-500 * time.Millisecond) // ended in the minute before m
	for _, e := range []time.Time{a, b, r, before} {
		if err := rc.MoveSession(ctx, room, time.Time{}, e); err != nil {
			t.Fatal(err)
		}
	}
	if err := rc.MoveSession(ctx, room, b, b.Add(time.Minute)); err != nil { // renewed
		t.Fatal(err)
	}
	if err := rc.MoveSession(ctx, room, r, time.Time{}); err != nil { // revoked
		t.Fatal(err)
	}
	for _, x := range []struct {
		name     string
		from, to time.Time
		want     int64
	}{
		{"before any expiry of the minute", m, a.Add(-time.Millisecond), 0},
		{"at a's expiry", m, a, 1},
		{"neither the renewed session at its old expiry nor the revoked one", m, m.Add(59 * time.Second), 1},
		{"the renewed one, once its new expiry's second is over", m.Add(time.Minute), b.Add(time.Minute).Truncate(time.Second).Add(time.Second), 1},
		{"not before", m.Add(time.Minute), b.Add(time.Minute), 0},
	} {
		n, err := rc.SessionsEnded(ctx, room, x.from, x.to)
		if err != nil {
			t.Fatal(err)
		}
		if n != x.want {
			t.Errorf("%s: %d ended, want %d", x.name, n, x.want)
		}
	}
	// The same answers as the in-process ledger the simulator uses.
	mem := admit.NewMemoryCounter(func() time.Time { return m })
	for _, e := range []time.Time{a, b, r, before} {
		_ = mem.MoveSession(ctx, room, time.Time{}, e)
	}
	_ = mem.MoveSession(ctx, room, b, b.Add(time.Minute))
	_ = mem.MoveSession(ctx, room, r, time.Time{})
	for _, to := range []time.Time{a, m.Add(59 * time.Second)} {
		want, _ := mem.SessionsEnded(ctx, room, m, to)
		if got, _ := rc.SessionsEnded(ctx, room, m, to); got != want {
			t.Errorf("to %s: Redis counts %d ended, memory %d", to.Format("04:05"), got, want)
		}
	}
	ttl, err := rc.Client.TTL(ctx, expiryKey(room, a.Unix())).Result()
	if err != nil || ttl <= 0 || ttl > 13*time.Minute+ledgerKeep {
		t.Errorf("the minute's key expires in %v (%v), want after its minute plus %v", ttl, err, ledgerKeep)
	}
}
