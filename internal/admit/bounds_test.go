package admit

import (
	"strings"
	"testing"
	"time"
)

// A bounded ledger keeps at most maxReporters reporters in a minute and
// MaxMinuteReportBytes of their reports; what it drops is counted, never
// stored, and a reporter already in the minute goes on reporting.
func TestLedgerBoundsAMinute(t *testing.T) {
	m := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	var l Ledger
	rep := func(gate string, seq uint64, admitted int) Report {
		return Report{Room: "shop", DataCenter: "ams", Gate: gate, Minute: m, Seq: seq, Admitted: admitted}
	}
	for _, g := range []string{"a", "b"} {
		if ok, err := l.AddBounded(rep(g, 1, 1), 2); !ok || err != nil {
			t.Fatalf("%s: %v %v", g, ok, err)
		}
	}
	if ok, err := l.AddBounded(rep("c", 1, 1), 2); ok || err == nil || !strings.Contains(err.Error(), "max_reporters_per_minute") {
		t.Errorf("a third reporter: %v %v", ok, err)
	}
	if ok, err := l.AddBounded(rep("a", 2, 5), 2); !ok || err != nil {
		t.Errorf("a known reporter's newer report: %v %v", ok, err)
	}
	if ok, _ := l.AddBounded(rep("b", 1, 9), 2); ok {
		t.Error("an older report replaced a newer one")
	}
	// Another minute has its own reporters.
	next := rep("c", 1, 1)
	next.Minute = m.Add(time.Minute)
	if ok, err := l.AddBounded(next, 2); !ok || err != nil {
		t.Errorf("the next minute: %v %v", ok, err)
	}
	if l.OverReporters != 1 || len(l.Open) != 3 || l.Totals(m).Admitted != 6 {
		t.Errorf("over %d, open %d, admitted %d", l.OverReporters, len(l.Open), l.Totals(m).Admitted)
	}
	// Bytes: a report that takes the minute past the bound is dropped,
	// the older one of its gate stays.
	big := rep("a", 3, 7)
	for i := 0; len(big.Taken) < maxReportEntries; i++ {
		big.Taken = append(big.Taken, PoolCount{Pool: strings.Repeat("p", 60), Scope: strings.Repeat("s", 60), Count: i})
	}
	if ok, err := l.AddBounded(big, 1000); ok || err == nil {
		t.Errorf("a report past the minute's bytes: %v %v", ok, err)
	}
	if l.OverBytes != 1 || l.Totals(m).Admitted != 6 {
		t.Errorf("over bytes %d, admitted %d", l.OverBytes, l.Totals(m).Admitted)
	}
}

// The pages a room keeps, its own and its events', hold MaxPageBytes
// together.
func TestRoomChecksPages(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	page := strings.Repeat("x", MaxCustomPageSize)
	r, err := NewRoom(Settings{Name: "shop", TotalActiveUsers: 10, NewUsersPerMinute: 10, CustomPageHTML: page}, 0, now)
	if err != nil {
		t.Fatal(err)
	}
	for i := range MaxPageBytes/MaxCustomPageSize - 1 {
		from := now.Add(time.Duration(i+1) * time.Hour)
		e := Event{Name: "e" + string(rune('a'+i)), EventStartTime: from, EventEndTime: from.Add(time.Minute), CustomPageHTML: &page}
		if err := r.CheckPages(nil, &e); err != nil {
			t.Fatal(err)
		}
		if _, err := r.AddEvent(e, now); err != nil {
			t.Fatal(err)
		}
	}
	one := "y"
	err = r.CheckPages(nil, &Event{CustomPageHTML: &one})
	if inv, ok := err.(*InvalidError); !ok || inv.First().Field != "custom_page_html" {
		t.Errorf("one byte more: %v", err)
	}
	s := r.Settings
	s.CustomPageHTML = ""
	if err := r.CheckPages(&s, &Event{CustomPageHTML: &one}); err != nil {
		t.Errorf("settings that free room: %v", err)
	}
}

// Trim sheds, step by step, what the room can do without, and says when
// nothing more can go.
func TestRoomTrim(t *testing.T) {
	start := time.Date(2026, 12, 1, 12, 0, 30, 0, time.UTC)
	r, err := NewRoom(Settings{Name: "shop", TotalActiveUsers: 10, NewUsersPerMinute: 10}, 0, start)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		m := MinuteOf(start, time.Minute).Add(time.Duration(i) * time.Minute)
		if err := r.AddReport(Report{Room: "shop", DataCenter: "ams", Gate: "ams-1", Minute: m, Seq: 1, Admitted: 1,
			Taken: []PoolCount{{Pool: PoolNew, Scope: Anywhere, Count: 1}}}, m.Add(10*time.Second)); err != nil {
			t.Fatal(err)
		}
		r.Advance(m.Add(time.Minute + r.FinalWait())) // no final report: it waits that long
		// A report of the minute the snapshot was just published from.
		if err := r.AddReport(Report{Room: "shop", DataCenter: "ams", Gate: "ams-1", Minute: m.Add(time.Minute), Seq: 1, Admitted: 1},
			m.Add(time.Minute+20*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	if len(r.Recent) <= 10 || len(r.Ledger.Open) == 0 {
		t.Fatalf("recent %d, open %d", len(r.Recent), len(r.Ledger.Open))
	}
	r.Trim(0)
	for _, c := range r.Ledger.Closed {
		if c.Minute.Before(r.PrevMinute) && c.Taken != nil {
			t.Errorf("minute %s keeps its slots taken", c.Minute)
		}
	}
	if len(r.Recent) != 10 {
		t.Errorf("recent %d", len(r.Recent))
	}
	r.Trim(1)
	for _, o := range r.Ledger.Open {
		if o.Minute.Before(r.Snapshot.Minute) {
			t.Errorf("minute %s still open", o.Minute)
		}
	}
	if !r.Trim(2) || len(r.Recent) != 0 || r.Trim(3) {
		t.Error("the last steps")
	}
}
