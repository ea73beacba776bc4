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

func TestChartDrawsEachDataCenter(t *testing.T) {
	t0 := time.Date(2030, 5, 1, 9, 0, 0, 0, time.UTC)
	recent := []admit.MinuteSummary{
		{Minute: t0}, // kept no data centers: no point
		{Minute: t0.Add(time.Minute), DataCenters: []admit.DataCenterMinute{{DataCenter: "ams", Admitted: 3}, {DataCenter: "sjc", Admitted: 8}}},
		{Minute: t0.Add(2 * time.Minute), DataCenters: []admit.DataCenterMinute{{DataCenter: "sjc", Admitted: 5}}},
	}
	c := chartOf(recent, nil)
	if c.ByDataCenter == nil {
		t.Fatal("no chart by data center")
	}
	p := c.ByDataCenter
	if len(p.Series) != 2 || p.Series[0].Name != "sjc" || p.Series[1].Name != "ams" || p.Max != 8 {
		t.Fatalf("series %+v, max %d", p.Series, p.Max)
	}
	// ams has two points (3, then 0 in a minute it was not among), sjc ends at 5.
	if ams := strings.Fields(p.Series[1].Points); len(ams) != 2 || p.Series[1].Last != 0 || p.Series[0].Last != 5 {
		t.Errorf("ams %v last %d, sjc last %d", ams, p.Series[1].Last, p.Series[0].Last)
	}
	if none := chartOf(recent[:1], nil); none.ByDataCenter != nil {
		t.Errorf("a chart by data center with none kept: %+v", none.ByDataCenter)
	}
}

func TestChartTemplateDrawsBothPlots(t *testing.T) {
	t0 := time.Date(2030, 5, 1, 9, 0, 0, 0, time.UTC)
	c := chartOf([]admit.MinuteSummary{{Minute: t0, Admitted: 4,
		DataCenters: []admit.DataCenterMinute{{DataCenter: "sjc", Admitted: 4}}}}, nil)
	var b strings.Builder
	if err := parsePages()["chart"].ExecuteTemplate(&b, "chart", c); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{`aria-labelledby="chart-title chart-desc"`, `aria-labelledby="chart-dc-title chart-dc-desc"`,
		`<title id="chart-dc-title">Admitted a minute by data center</title>`, `class="line s-dc0"`, "sjc, newest minute: 4"} {
		if !strings.Contains(out, want) {
			t.Errorf("the chart lacks %s:\n%s", want, out)
		}
	}
}
