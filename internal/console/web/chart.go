package web

import (
	"cmp"
	"fmt"
	"slices"
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

// dataCenterLines is how many data centers the by-data-center chart draws:
// the room keeps its 5 busiest and "others" a minute (admit.RecentDataCenters).
const dataCenterLines = 6

// series is one line of a plot.
type series struct {
	Name   string
	Class  string // its colour, from the stylesheet (light and dark)
	Points string // the polyline's points
	Last   int
	// The newest point, marked, so a room's first minute shows as a dot.
	LastX, LastY string
}

// plot is one SVG line chart of the last hour, a minute per step.
type plot struct {
	ID, Title   string // the SVG's title (ID names its title and desc)
	Minutes     int
	Max         int
	Series      []series
	From, To    string
	W, H        int
	Left, Right int
	Top, Bottom int
}

// chartView is a room's last hour, drawn on the server: one line per
// measure, the admissions of each data center, and the previous minute's
// traffic by data center (what the room keeps per data center).
type chartView struct {
	plot
	// ByDataCenter draws each data center's admissions a minute, over the
	// minutes that kept their data centers; nil when none did.
	ByDataCenter *plot
	DataCenters  []admit.TrafficShare
	// Closed is the newest recent minute's counts by data center (at
	// ClosedMinute, UTC), as the room keeps them.
	Closed       []admit.DataCenterMinute
	ClosedMinute string
}

type measure struct {
	name, class string
	of          func(admit.MinuteSummary) (int, bool) // false: no point this minute
}

// chartOf draws recent (oldest first, at most admit.RecentMinutes).
func chartOf(recent []admit.MinuteSummary, dcs []admit.TrafficShare) chartView {
	if len(recent) > admit.RecentMinutes {
		recent = recent[len(recent)-admit.RecentMinutes:]
	}
	c := chartView{DataCenters: dcs}
	c.plot = plotOf("chart", fmt.Sprintf("The room's last %d minutes", len(recent)), recent, []measure{
		{"Active users", "s-active", func(m admit.MinuteSummary) (int, bool) { return m.ActiveUsers, true }},
		{"Queued", "s-queued", func(m admit.MinuteSummary) (int, bool) { return m.Waiting, true }},
		{"Admitted in the minute", "s-admitted", func(m admit.MinuteSummary) (int, bool) { return m.Admitted, true }},
	})
	for i := len(recent) - 1; i >= 0; i-- {
		if len(recent[i].DataCenters) > 0 {
			c.Closed, c.ClosedMinute = recent[i].DataCenters, recent[i].Minute.UTC().Format(time.TimeOnly[:5])
			break
		}
	}
	if names := busiestDataCenters(recent); len(names) > 0 {
		var ms []measure
		for i, name := range names {
			ms = append(ms, measure{name, fmt.Sprintf("s-dc%d", i), func(m admit.MinuteSummary) (int, bool) {
				if len(m.DataCenters) == 0 {
					return 0, false // a minute that did not keep its data centers
				}
				for _, d := range m.DataCenters {
					if d.DataCenter == name {
						return d.Admitted, true
					}
				}
				return 0, true
			}})
		}
		p := plotOf("chart-dc", "Admitted a minute by data center", recent, ms)
		c.ByDataCenter = &p
	}
	return c
}

// busiestDataCenters names the data centers that admitted the most over
// recent, at most dataCenterLines, busiest first.
func busiestDataCenters(recent []admit.MinuteSummary) []string {
	total := map[string]int{}
	for _, m := range recent {
		for _, d := range m.DataCenters {
			total[d.DataCenter] += d.Admitted + 1 // +1: a data center seen counts before one never seen
		}
	}
	names := make([]string, 0, len(total))
	for n := range total {
		names = append(names, n)
	}
	slices.SortFunc(names, func(a, b string) int { return cmp.Or(cmp.Compare(total[b], total[a]), cmp.Compare(a, b)) })
	return names[:min(len(names), dataCenterLines)]
}

func plotOf(id, title string, recent []admit.MinuteSummary, measures []measure) plot {
	p := plot{ID: id, Title: title, Minutes: len(recent), W: chartW, H: chartH,
		Left: padL, Right: chartW - padR, Top: padT, Bottom: chartH - padB, Max: 1}
	for _, m := range recent {
		for _, ms := range measures {
			if v, ok := ms.of(m); ok {
				p.Max = max(p.Max, v)
			}
		}
	}
	if len(recent) > 0 {
		p.From = recent[0].Minute.UTC().Format(time.TimeOnly[:5])
		p.To = recent[len(recent)-1].Minute.UTC().Format(time.TimeOnly[:5])
	}
	// Sixty minutes span the width whatever is kept, so the last hour's
	// scale does not jump while a new room fills it.
	step := float64(p.Right-p.Left) / float64(admit.RecentMinutes-1)
	offset := admit.RecentMinutes - len(recent)
	for _, ms := range measures {
		var pts strings.Builder
		sr := series{Name: ms.name, Class: ms.class}
		for i, m := range recent {
			v, ok := ms.of(m)
			if !ok {
				continue
			}
			x := float64(p.Left) + float64(offset+i)*step
			y := float64(p.Bottom) - float64(v)/float64(p.Max)*float64(p.Bottom-p.Top)
			fmt.Fprintf(&pts, "%.1f,%.1f ", x, y)
			sr.Last, sr.LastX, sr.LastY = v, fmt.Sprintf("%.1f", x), fmt.Sprintf("%.1f", y)
		}
		sr.Points = strings.TrimSpace(pts.String())
		p.Series = append(p.Series, sr)
	}
	return p
}
