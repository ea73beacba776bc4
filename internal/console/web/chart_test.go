package web

import (
	"strings"
	"testing"
	"time"

	"github.com/edgeflow/edgeflow/internal/admit"
)

func TestChartScalesTheLastHour(t *testing.T) {
	t0 := time.Date(2030, 5, 1, 9, 0, 0, 0, time.UTC)
	var recent []admit.MinuteSummary
	for i := range 70 {
		recent = append(recent, admit.MinuteSummary{Minute: t0.Add(time.Duration(i) * time.Minute), ActiveUsers: i, Waiting: 2 * i, Admitted: 1})
	}
	c := chartOf(recent, nil)
	if c.Minutes != admit.RecentMinutes || c.Max != 138 || c.From != "09:10" || c.To != "10:09" {
		t.Fatalf("chart %d minutes, max %d, %s-%s", c.Minutes, c.Max, c.From, c.To)
	}
	queued := c.Series[1]
	pts := strings.Fields(queued.Points)
	if len(pts) != admit.RecentMinutes || queued.Last != 138 {
		t.Fatalf("queued: %d points, last %d", len(pts), queued.Last)
	}
	// The newest minute's peak is at the top right corner.
	if want := "708.0,12.0"; pts[len(pts)-1] != want || queued.LastX+","+queued.LastY != want {
		t.Errorf("the last point %s (marked at %s,%s), want %s", pts[len(pts)-1], queued.LastX, queued.LastY, want)
	}
	// A room with three minutes draws them at the right end of the hour.
	short := chartOf(recent[:3], nil)
	if first := strings.Fields(short.Series[0].Points)[0]; !strings.HasPrefix(first, "685.6,") {
		t.Errorf("a short history starts at %s", first)
	}
	// The newest minute that kept its data centers is tabled by them.
	recent[60].DataCenters = []admit.DataCenterMinute{{DataCenter: "sjc", Admitted: 4, Queued: 2, Active: 9}}
	if c := chartOf(recent, nil); c.ClosedMinute != "10:00" || len(c.Closed) != 1 || c.Closed[0].Active != 9 {
		t.Errorf("by data center: %s %+v", c.ClosedMinute, c.Closed)
	}
	if empty := chartOf(nil, nil); empty.Max != 1 || empty.Series[0].Points != "" {
		t.Errorf("no minutes: %+v", empty)
	}
}
