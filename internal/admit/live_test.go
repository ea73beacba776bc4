package admit

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestLiveDataCenterCountsTheQueueThroughTheMinute(t *testing.T) {
	m := time.Date(2026, 12, 1, 10, 5, 0, 0, time.UTC)
	prev := []Report{
		{Gate: "a", Minute: m.Add(-time.Minute), Queued: []MinuteCount{{Minute: m.Add(-2 * time.Minute), Count: 30}, {Minute: m.Add(-time.Minute), Count: 10}}},
	}
	// Early in the minute: few of the waiting have checked in yet, 5 were
	// let in from the queue (not counted this minute first), and a spike of
	// 40 new visitors of this minute's bucket counted at two gates.
	cur := []Report{
		{Gate: "a", Minute: m, Admitted: 7, AdmittedFromQueue: 5, Seen: 20, NewVisitors: 30,
			Queued: []MinuteCount{{Minute: m.Add(-2 * time.Minute), Count: 4}, {Minute: m, Count: 25}}},
		{Gate: "b", Minute: m, Admitted: 1, Seen: 3, NewVisitors: 16, Queued: []MinuteCount{{Minute: m, Count: 15}}},
	}
	got := LiveDataCenter("ams", m, prev, cur)
	want := LiveCounts{DataCenter: "ams", Minute: m, Gates: 2, Admitted: 8, Active: 23, NewVisitors: 46,
		Queued: 30 + 10 + 40 - 5}
	if got != want {
		t.Fatalf("early in the minute: got %+v, want %+v", got, want)
	}
	// Late in the minute every waiting visitor has checked in: the
	// minute's own count, which already left out those let in after it.
	cur[0].Queued = []MinuteCount{{Minute: m.Add(-2 * time.Minute), Count: 31}, {Minute: m.Add(-time.Minute), Count: 12}, {Minute: m, Count: 25}}
	if got := LiveDataCenter("ams", m, prev, cur); got.Queued != 31+12+25+15 {
		t.Fatalf("late in the minute: queued %d, want %d", got.Queued, 31+12+25+15)
	}
	// No gate reported the minute yet: the minute before's queue stands.
	if got := LiveDataCenter("ams", m, prev, nil); got.Queued != 40 || got.Gates != 0 {
		t.Fatalf("no report yet: %+v", got)
	}
}

func TestLiveViewMarksWhatIsOld(t *testing.T) {
	m := time.Date(2026, 12, 1, 10, 5, 0, 0, time.UTC)
	now := m.Add(20 * time.Second)
	snap := &Snapshot{Minute: m, ActiveUsers: 50, LetInPerMinute: 10, Status: StatusQueueing,
		Settings: Settings{QueueingMethod: FIFO, TotalActiveUsers: 60, NewUsersPerMinute: 10}}
	ams := LiveCounts{DataCenter: "ams", Minute: m, Gates: 2, Admitted: 4, Active: 30, Queued: 25, AsOf: now.Add(-1500 * time.Millisecond)}
	sjc := LiveCounts{DataCenter: "sjc", Minute: m, Gates: 1, Admitted: 2, Active: 10, Queued: 10, AsOf: now.Add(-3 * time.Second)}

	live := LiveView(snap, []LiveCounts{sjc, ams}, now)
	if live.Stale || live.Error != "" || live.AsOf == nil || !live.AsOf.Equal(sjc.AsOf) || live.AgeSeconds != 3 {
		t.Fatalf("fresh counts: %+v", live)
	}
	if live.QueuedUsers != 35 || live.AdmittedThisMinute != 6 || live.ActiveUsers != 56 || live.EstimatedWaitMinutes != 4 {
		t.Fatalf("totals: %+v", live)
	}
	if len(live.DataCenters) != 2 || live.DataCenters[0].DataCenter != "ams" || live.DataCenters[0].Stale {
		t.Fatalf("data centers: %+v", live.DataCenters)
	}

	// sjc's aggregator stopped writing (its Redis or its gates are down):
	// listed as stale, left out of the totals, and the view says stale.
	sjc.AsOf = now.Add(-LiveMaxAge - time.Second)
	live = LiveView(snap, []LiveCounts{sjc, ams}, now)
	if !live.Stale || live.QueuedUsers != 25 || !live.DataCenters[1].Stale || live.DataCenters[0].Stale || live.DataCenters[1].AgeSeconds != 6 {
		t.Fatalf("one data center stale: %+v", live)
	}
	// A data center still counting the minute before is stale too.
	sjc.AsOf, sjc.Minute = now.Add(-time.Second), m.Add(-time.Minute)
	if live = LiveView(snap, []LiveCounts{sjc, ams}, now); !live.Stale || live.QueuedUsers != 25 {
		t.Fatalf("a data center on the minute before: %+v", live)
	}
	// Heard from too long ago: left out.
	sjc.AsOf = now.Add(-LiveForget - time.Second)
	if live = LiveView(snap, []LiveCounts{sjc, ams}, now); live.Stale || len(live.DataCenters) != 1 {
		t.Fatalf("a data center gone: %+v", live)
	}
	// Nothing fresh at all: stale, no as_of, and why.
	ams.AsOf = now.Add(-time.Minute)
	live = LiveView(snap, []LiveCounts{ams}, now)
	if !live.Stale || live.AsOf != nil || live.QueuedUsers != 0 || !strings.Contains(live.Error, "no data center") {
		t.Fatalf("nothing fresh: %+v", live)
	}
	b, err := json.Marshal(LiveView(snap, nil, now))
	if err != nil || !strings.Contains(string(b), `"stale":true`) || strings.Contains(string(b), "as_of") {
		t.Fatalf("nothing at all: %s %v", b, err)
	}
}

func TestParseLiveCountsRefusesWhatNoAggregatorWrites(t *testing.T) {
	m := time.Date(2026, 12, 1, 10, 5, 0, 0, time.UTC)
	good, _ := json.Marshal(LiveCounts{DataCenter: "ams", Minute: m, Gates: 1, Queued: 3})
	c, err := ParseLiveCounts("ams", fmt.Sprintf("%d|%s", m.Add(2*time.Second).UnixMilli(), good))
	if err != nil || c.Queued != 3 || !c.AsOf.Equal(m.Add(2*time.Second)) {
		t.Fatalf("good value: %+v %v", c, err)
	}
	negative, _ := json.Marshal(LiveCounts{DataCenter: "ams", Minute: m, Queued: -1})
	for what, v := range map[string][2]string{
		"no stamp":        {"ams", string(good)},
		"another dc":      {"sjc", "1|" + string(good)},
		"negative count":  {"ams", "1|" + string(negative)},
		"not JSON":        {"ams", "1|{"},
		"bad field label": {"a b", "1|" + strings.Replace(string(good), `"ams"`, `"a b"`, 1)},
	} {
		if _, err := ParseLiveCounts(v[0], v[1]); err == nil {
			t.Errorf("%s: accepted", what)
		}
	}
}
