package web

import (
	"fmt"
	"strings"
	"time"

	"github.com/edgeflow/edgeflow/internal/admit"
)

// Chart geometry, in the SVG's own units (it scales to the page's width).
const (
	chartW, chartH = 720, 240
	padL, padR     = 48, 12
	padT, padB     = 12, 28
)

// series is one line of the chart.
type series struct {
	Name   string
	Class  string // its colour, from the stylesheet (light and dark)
	Points string // the polyline's points
	Last   int
	// The newest point, marked, so a room's first minute shows as a dot.
	LastX, LastY string
}

// chartView is a room's last hour, drawn on the server: one line per
// measure, a minute per step, and the previous minute's traffic by data
// center (what the room keeps per data center).
type chartView struct {
	Minutes     int
	Max         int
	Series      []series
	From, To    string
	DataCenters []admit.TrafficShare
	// Closed is the newest recent minute's counts by data center (at
	// ClosedMinute, UTC), as the room keeps them.
	Closed       []admit.DataCenterMinute
	ClosedMinute string
	W, H         int
	Left, Right  int
	Top, Bottom  int
}

// chartOf draws recent (oldest first, at most admit.RecentMinutes).
func chartOf(recent []admit.MinuteSummary, dcs []admit.TrafficShare) chartView {
	if len(recent) > admit.RecentMinutes {
		recent = recent[len(recent)-admit.RecentMinutes:]
	}
	c := chartView{Minutes: len(recent), DataCenters: dcs, W: chartW, H: chartH,
		Left: padL, Right: chartW - padR, Top: padT, Bottom: chartH - padB}
	measures := []struct {
		name, class string
		of          func(admit.MinuteSummary) int
	}{
		{"Active users", "s-active", func(m admit.MinuteSummary) int { return m.ActiveUsers }},
		{"Queued", "s-queued", func(m admit.MinuteSummary) int { return m.Waiting }},
		{"Admitted in the minute", "s-admitted", func(m admit.MinuteSummary) int { return m.Admitted }},
	}
	c.Max = 1
	for _, m := range recent {
		for _, ms := range measures {
			c.Max = max(c.Max, ms.of(m))
		}
	}
	for i := len(recent) - 1; i >= 0; i-- {
		if len(recent[i].DataCenters) > 0 {
			c.Closed, c.ClosedMinute = recent[i].DataCenters, recent[i].Minute.UTC().Format(time.TimeOnly[:5])
			break
		}
	}
	if len(recent) > 0 {
		c.From = recent[0].Minute.UTC().Format(time.TimeOnly[:5])
		c.To = recent[len(recent)-1].Minute.UTC().Format(time.TimeOnly[:5])
	}
	// Sixty minutes span the width whatever is kept, so the last hour's
	// scale does not jump while a new room fills it.
	step := float64(c.Right-c.Left) / float64(admit.RecentMinutes-1)
	offset := admit.RecentMinutes - len(recent)
	for _, ms := range measures {
		var pts strings.Builder
		sr := series{Name: ms.name, Class: ms.class}
		for i, m := range recent {
			v := ms.of(m)
			x := float64(c.Left) + float64(offset+i)*step
			y := float64(c.Bottom) - float64(v)/float64(c.Max)*float64(c.Bottom-c.Top)
			fmt.Fprintf(&pts, "%.1f,%.1f ", x, y)
			sr.Last, sr.LastX, sr.LastY = v, fmt.Sprintf("%.1f", x), fmt.Sprintf("%.1f", y)
		}
		sr.Points = strings.TrimSpace(pts.String())
		c.Series = append(c.Series, sr)
	}
	return c
}
