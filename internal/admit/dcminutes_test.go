package admit

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
)

// A closed minute keeps its counts by data center: the busiest by name,
// the rest summed as "others"; a room's state without them still decodes.
func TestRecentMinutesKeepDataCenters(t *testing.T) {
	prev := t0.Add(-time.Minute)
	r, err := NewRoom(Settings{Name: "shop", TotalActiveUsers: 1000, NewUsersPerMinute: 500}, 60, prev)
	if err != nil {
		t.Fatal(err)
	}
	// Seven data centers, the busier the later; two gates in "dc6".
	for i := range 7 {
		rep := Report{Room: "shop", DataCenter: fmt.Sprintf("dc%d", i), Gate: fmt.Sprintf("g%d", i), Minute: prev, Seq: 1,
			Admitted: i + 1, Seen: 10 * (i + 1), Queued: []MinuteCount{{Minute: prev, Count: i}}, Final: true}
		if err := r.AddReport(rep, t0); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.AddReport(Report{Room: "shop", DataCenter: "dc6", Gate: "g6b", Minute: prev, Seq: 1, Admitted: 2, Seen: 5,
		Queued: []MinuteCount{{Minute: prev, Count: -1}}, Final: true}, t0); err != nil {
		t.Fatal(err)
	}
	if _, ok := r.Advance(t0.Add(5 * time.Second)); !ok {
		t.Fatal("no snapshot")
	}
	if len(r.Recent) == 0 || !r.Recent[len(r.Recent)-1].Minute.Equal(prev) {
		t.Fatalf("recent %+v", r.Recent)
	}
	want := []DataCenterMinute{
		{DataCenter: "dc6", Admitted: 9, Queued: 5, Active: 75},
		{DataCenter: "dc5", Admitted: 6, Queued: 5, Active: 60},
		{DataCenter: "dc4", Admitted: 5, Queued: 4, Active: 50},
		{DataCenter: "dc3", Admitted: 4, Queued: 3, Active: 40},
		{DataCenter: "dc2", Admitted: 3, Queued: 2, Active: 30},
		{DataCenter: OtherDataCenters, Admitted: 3, Queued: 1, Active: 30},
	}
	got := r.Recent[len(r.Recent)-1].DataCenters
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("by data center %+v\nwant %+v", got, want)
	}
	// Once the minute is closed its reports are room-wide totals only:
	// the recent minute is what keeps its data centers. (Its gates send
	// no final report of 11:45: the room waits for them as long as it may.)
	if _, ok := r.Advance(t0.Add(time.Minute + r.FinalWait())); !ok {
		t.Fatal("no snapshot")
	}
	if r.Ledger.DataCenterMinutes(prev) != nil {
		t.Error("a closed minute still has open reports")
	}

	// Carried across continue-as-new, and an older room's JSON decodes.
	data, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var back Room
	if err := json.Unmarshal(data, &back); err != nil || !reflect.DeepEqual(back.Recent[len(back.Recent)-2].DataCenters, want) {
		t.Fatalf("round trip: %v %+v", err, back.Recent)
	}
	var old MinuteSummary
	if err := json.Unmarshal([]byte(`{"minute":"2026-01-01T00:00:00Z","activeUsers":3,"admitted":1,"waiting":0,"status":"notQueueing"}`), &old); err != nil || old.DataCenters != nil || old.ActiveUsers != 3 {
		t.Fatalf("an old minute: %v %+v", err, old)
	}
}

// The hour of minutes by data center stays under the 50 KB docs/admit.md
// gives, at the longest names and large counts.
func TestRecentDataCentersBound(t *testing.T) {
	var recent []MinuteSummary
	for i := range RecentMinutes {
		m := MinuteSummary{Minute: t0.Add(time.Duration(i) * time.Minute)}
		for range RecentDataCenters + 1 {
			m.DataCenters = append(m.DataCenters, DataCenterMinute{DataCenter: strings.Repeat("d", maxNameLength), Admitted: 1e6, Queued: 1e6, Active: 1e6})
		}
		recent = append(recent, m)
	}
	withDCs, _ := json.Marshal(recent)
	for i := range recent {
		recent[i].DataCenters = nil
	}
	without, _ := json.Marshal(recent)
	if added := len(withDCs) - len(without); added >= 50_000 {
		t.Fatalf("the data centers add %d bytes to the hour", added)
	} else {
		t.Logf("the data centers add %d bytes to the hour", added)
	}
}
