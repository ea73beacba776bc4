package gate

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/edgeflow/edgeflow/internal/admit"
	"github.com/edgeflow/edgeflow/internal/testenv"
)

func mustCounters(t testing.TB, dataCenter, anywhere *RedisCounter, strategy string) Counters {
	t.Helper()
	c, err := NewCounters(dataCenter, anywhere, strategy, quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Borrowing needs every data center's counters where every gate counts:
// the gate refuses the settings that cannot give it that, naming why.
func TestStrategySettings(t *testing.T) {
	dc, other := &RedisCounter{}, &RedisCounter{}
	for _, c := range []struct {
		name         string
		dc, anywhere *RedisCounter
		strategy     string
		want         string // "" for no error
	}{
		{"default in process", nil, nil, "", ""},
		{"counters on Redis", dc, dc, StrategyCounters, ""},
		{"borrow on one Redis", dc, dc, StrategyBorrow, ""},
		{"borrow in process", nil, nil, StrategyBorrow, "needs one Redis"},
		{"borrow with a separate Anywhere Redis", dc, other, StrategyBorrow, "needs one Redis"},
		{"borrow with only an Anywhere Redis", nil, other, StrategyBorrow, "needs one Redis"},
		{"unknown", dc, dc, "adaptive", `strategy "adaptive": must be one of counters, counters+borrow`},
	} {
		got, err := NewCounters(c.dc, c.anywhere, c.strategy, quietLogger())
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: error %v, want one saying %q", c.name, err, c.want)
		case c.want == "" && c.strategy == StrategyBorrow && !strings.HasPrefix(got.Strategy.Name(), StrategyBorrow+"|"):
			t.Errorf("%s: strategy %s", c.name, got.Strategy.Name())
		}
	}
}

// On one Redis shared by two data centers, a Frankfurt gate whose own
// scope and Anywhere are spent borrows Amsterdam's unused slots at the
// pace of the minute with counters+borrow, and not with counters;
// Amsterdam's gate then still gets what is left of its scope, and the pool
// never gives out more than its slots.
func TestBorrowingOnRedis(t *testing.T) {
	testenv.Require(t, env)
	rc := redisCounter(t, env.Redis.URL)
	for _, c := range []struct {
		strategy       string
		fra, ams, more int
	}{
		{StrategyCounters, 12 + 6, 12, 0},
		{StrategyBorrow, 12 + 6 + 3, 9, 0},
	} {
		name := "borrow-" + strconv.FormatInt(time.Now().UnixNano(), 36)
		minute := admit.MinuteOf(time.Now(), time.Minute)
		snap := &admit.Snapshot{Room: name, Minute: minute, MinuteSeconds: 60, PublishedAt: minute,
			Settings:       admit.Settings{Name: name, TotalActiveUsers: 1000, NewUsersPerMinute: 30}.WithDefaults(),
			SlotsAvailable: 30, NewUserSlots: 30,
			Pools: []admit.Pool{{Slots: 30, Scopes: []admit.Scope{{Name: "ams", Limit: 12}, {Name: "fra", Limit: 12}, {Name: admit.Anywhere, Limit: 6}}}}}
		fraGate, amsGate := mustCounters(t, &rc, &rc, c.strategy), mustCounters(t, &rc, &rc, c.strategy)
		fra, _ := newVisitorsAt(t, fraGate.Strategy, snap, minute.Add(15*time.Second), admit.Gate{DataCenter: "fra", ID: "fra-1"}, 40)
		ams, _ := newVisitorsAt(t, amsGate.Strategy, snap, minute.Add(20*time.Second), admit.Gate{DataCenter: "ams", ID: "ams-1"}, 40)
		more, _ := newVisitorsAt(t, fraGate.Strategy, snap, minute.Add(59*time.Second), admit.Gate{DataCenter: "fra", ID: "fra-1"}, 40)
		if fra != c.fra || ams != c.ams || more != c.more {
			t.Errorf("%s: Frankfurt at 15 s got %d, Amsterdam at 20 s %d, Frankfurt at 59 s %d; want %d, %d, %d",
				c.strategy, fra, ams, more, c.fra, c.ams, c.more)
		}
	}
}
