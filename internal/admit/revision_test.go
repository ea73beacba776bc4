package admit

import (
	"encoding/json"
	"testing"
	"time"
)

// A room carried across continue-as-new before revisions said which of the
// first changes it took in separate fields: it reads as the revision they
// amount to, and a room written now reads back as it was.
func TestRoomReadsTheFieldsRevisionsReplaced(t *testing.T) {
	for _, tc := range []struct {
		json string
		want Revision
	}{
		{`{"minuteSeconds":60}`, RevInitial},
		{`{"awaitFinals":true}`, RevAwaitFinals},
		{`{"awaitFinals":true,"countsStore":true}`, RevCountsStore},
		{`{"awaitFinals":true,"countsStore":true,"bounded":true}`, RevBounded},
		{`{"awaitFinals":true,"countsStore":true,"bounded":true,"publishOnFinals":true}`, RevPublishOnFinals},
		{`{"rev":9,"awaitFinals":true}`, 9},
	} {
		var r Room
		if err := json.Unmarshal([]byte(tc.json), &r); err != nil || r.Rev != tc.want {
			t.Errorf("%s: revision %d (%v), want %d", tc.json, r.Rev, err, tc.want)
		}
	}
	r, err := NewRoomAt(Settings{Name: "shop", TotalActiveUsers: 5, NewUsersPerMinute: 5}, 60, t0, RevOutageMinute)
	if err != nil {
		t.Fatal(err)
	}
	data, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var back Room
	if err := json.Unmarshal(data, &back); err != nil || back.Rev != RevOutageMinute || back.Settings.Name != "shop" || back.Snapshot == nil {
		t.Errorf("round trip: %v, revision %d, %+v", err, back.Rev, back.Settings)
	}
}

// A room created again keeps its revision (it used to lose the rules its
// fields held: no final reports awaited, no bound).
func TestRecreateKeepsTheRevision(t *testing.T) {
	s := Settings{Name: "shop", TotalActiveUsers: 5, NewUsersPerMinute: 5, MaxReportersPerMinute: 1}
	r, err := NewRoom(s, 60, t0)
	if err != nil {
		t.Fatal(err)
	}
	if r.Rev != RevCurrent {
		t.Fatalf("a new room at revision %d, want %d", r.Rev, RevCurrent)
	}
	if err := r.Recreate(s, t0.Add(time.Second)); err != nil || r.Rev != RevCurrent {
		t.Fatalf("recreated: %v, revision %d", err, r.Rev)
	}
	add := func(gate string) error {
		return r.AddReport(Report{Room: "shop", DataCenter: "ams", Gate: gate, Minute: t0, Seq: 1, Admitted: 1}, t0.Add(2*time.Second))
	}
	if err := add("ams-1"); err != nil {
		t.Fatal(err)
	}
	if err := add("ams-2"); err == nil {
		t.Error("a recreated room took a report past max_reporters_per_minute")
	}
}
