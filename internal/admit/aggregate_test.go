package admit

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestAggregateSumsADataCenter(t *testing.T) {
	m := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	prev := []Report{{Gate: "a", Minute: m.Add(-time.Minute), Seq: 3}, {Gate: "b", Minute: m.Add(-time.Minute), Seq: 2}}
	cur := []Report{
		{Room: "shop", DataCenter: "ams", Gate: "a", Minute: m, Seq: 5, Admitted: 2, Seen: 4, NewVisitors: 3,
			Queued: []MinuteCount{{Minute: m, Count: 2}}, Renewed: []MinuteCount{{Minute: m.Add(-time.Minute), Count: 1}},
			Taken: []PoolCount{{Pool: PoolNew, Scope: "ams", Count: 2}}, StoreTaken: []PoolCount{{Pool: PoolNew, Scope: "ams", Count: 6}}},
		{Room: "shop", DataCenter: "ams", Gate: "b", Minute: m, Seq: 4, Admitted: 3, Seen: 1, Final: true,
			Queued: []MinuteCount{{Minute: m, Count: -1}}, Taken: []PoolCount{{Pool: PoolNew, Scope: "ams", Count: 3}},
			StoreTaken: []PoolCount{{Pool: PoolNew, Scope: "ams", Count: 5}}, Unsure: []PoolCount{{Pool: PoolNew, Scope: "ams", Count: 1}}},
		{Room: "shop", DataCenter: "ams", Gate: "b", Minute: m, Incarnation: 7, Seq: 1, Admitted: 1, Final: true}, // b restarted
	}
	got, ok := Aggregate("shop", "ams", m, prev, cur, false)
	if !ok {
		t.Fatal("no aggregate")
	}
	if got.Gate != AggregateGate || got.Admitted != 6 || got.Seen != 5 || got.NewVisitors != 3 || got.Gates != 2 {
		t.Errorf("sums: %+v", got)
	}
	if len(got.Queued) != 1 || got.Queued[0].Count != 1 || len(got.Renewed) != 1 || got.Taken[0].Count != 5 || got.Unsure[0].Count != 1 {
		t.Errorf("lists: queued %+v renewed %+v taken %+v unsure %+v", got.Queued, got.Renewed, got.Taken, got.Unsure)
	}
	if len(got.StoreTaken) != 1 || got.StoreTaken[0].Count != 6 {
		t.Errorf("storeTaken %+v, want the largest reading, 6", got.StoreTaken)
	}
	if got.Final || got.Leaving {
		t.Errorf("final %v leaving %v; gate a has not sent its final", got.Final, got.Leaving)
	}
	if err := got.Validate("shop", time.Minute); err != nil {
		t.Fatal(err)
	}

	// a's final, and the seq grows: the room keeps it over the last.
	cur[0].Final, cur[0].Seq = true, 6
	final, _ := Aggregate("shop", "ams", m, prev, cur, false)
	if !final.Final || final.Seq <= got.Seq {
		t.Fatalf("all final: final %v seq %d after %d", final.Final, final.Seq, got.Seq)
	}
	// A gate of the minute before that wrote nothing since is waited for
	// (it may be slow), until the grace is over.
	prev = append(prev, Report{Gate: "c", Minute: m.Add(-time.Minute), Seq: 9})
	if r, _ := Aggregate("shop", "ams", m, prev, cur, false); r.Final {
		t.Error("final while gate c, which reported the minute before, has not reported")
	}
	graced, _ := Aggregate("shop", "ams", m, prev, cur, true)
	if !graced.Final {
		t.Error("not final once the grace is over")
	}
	prev[2].Leaving = true
	if r, _ := Aggregate("shop", "ams", m, prev, cur, false); !r.Final {
		t.Error("waits for a gate that left")
	}
	if _, ok := Aggregate("shop", "ams", m, prev, nil, true); ok {
		t.Error("an aggregate of nothing")
	}
}

// An aggregated report counts as the gates it sums, and a room that
// publishes on finals publishes as soon as they are in.
func TestRoomTakesAggregatedReports(t *testing.T) {
	t0 := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	r, err := NewRoom(Settings{Name: "shop", TotalActiveUsers: 1000, NewUsersPerMinute: 100}, 60, t0)
	if err != nil {
		t.Fatal(err)
	}
	add := func(rep Report, at time.Time) {
		t.Helper()
		rep.Room = "shop"
		if err := r.AddReport(rep, at); err != nil {
			t.Fatal(err)
		}
	}
	m1 := t0.Add(time.Minute)
	add(Report{DataCenter: "ams", Gate: AggregateGate, Minute: t0, Seq: 1, Gates: 50, Admitted: 40, Seen: 40}, t0.Add(30*time.Second))
	add(Report{DataCenter: "fra", Gate: "fra-1", Minute: t0, Seq: 1, Admitted: 2, Seen: 2}, t0.Add(30*time.Second))
	if _, published := r.Advance(m1.Add(time.Second)); published {
		t.Fatal("published before the finals")
	}
	add(Report{DataCenter: "ams", Gate: AggregateGate, Minute: t0, Seq: 3, Gates: 50, Admitted: 41, Seen: 41, Final: true}, m1.Add(time.Second))
	add(Report{DataCenter: "fra", Gate: "fra-1", Minute: t0, Seq: 2, Admitted: 2, Seen: 2, Final: true}, m1.Add(time.Second))
	snap, published := r.Advance(m1.Add(1500 * time.Millisecond))
	if !published || !snap.Minute.Equal(m1) {
		t.Fatalf("not published once every final was in: %v %s", published, snap.Minute)
	}
	if snap.GatesActive != 51 {
		t.Errorf("globalWorkersActive %d, want 51 (50 behind ams's aggregate, fra-1)", snap.GatesActive)
	}
	for _, sh := range snap.TrafficHistory {
		if want := map[string]int{"ams": 50, "fra": 1}[sh.DataCenter]; sh.DataCenterWorkersActive != want {
			t.Errorf("%s: dataCenterWorkersActive %d, want %d", sh.DataCenter, sh.DataCenterWorkersActive, want)
		}
	}
	if b, _ := json.Marshal(snap.TrafficHistory[0]); !strings.Contains(string(b), `"dataCenterWorkersActive":50`) {
		t.Errorf("the snapshot's traffic history carries no dataCenterWorkersActive: %s", b)
	}
	if in, _ := snap.Gates(Gate{DataCenter: "ams", ID: "ams-7"}); in < 50 {
		t.Errorf("a gate of ams counts %d gates in its data center, want at least 50", in)
	}
	if snap.ActiveUsers != 43 {
		t.Errorf("active users %d, want 43", snap.ActiveUsers)
	}

	// Before RevPublishOnFinals (rooms started before), the grace holds.
	old, _ := NewRoom(Settings{Name: "shop", TotalActiveUsers: 1000, NewUsersPerMinute: 100}, 60, t0)
	old.Rev = RevPublishOnFinals - 1
	if err := old.AddReport(Report{Room: "shop", DataCenter: "ams", Gate: "a", Minute: t0, Seq: 1, Final: true}, m1); err != nil {
		t.Fatal(err)
	}
	if _, published := old.Advance(m1.Add(time.Second)); published {
		t.Error("a room before RevPublishOnFinals published before the grace")
	}
}
