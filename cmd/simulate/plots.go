package main

import (
	"fmt"
	"html"
	"image/color"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/edgeflow/edgeflow/internal/admit/sim"
)

// The simulator's pictures are SVG drawn here, like the console's charts:
// a plotting library would pull fonts and image writers into every
// build's module graph for one command.

// Heatmap is the picture of Cloudflare's "Waiting Room: Random Queueing"
// post: admitted visitors counted by arrival minute (columns) and wait
// (rows), 30 × 30 buckets over the data's range, as
// numpy.histogram2d(x, y, bins=(30, 30)) counts them.
type Heatmap struct {
	Counts      [][]int `json:"-"` // [arrival bucket][wait bucket]
	ArrivalStep float64 `json:"arrival_bucket_minutes"`
	WaitStep    float64 `json:"wait_bucket_minutes"`
	MaxWait     float64 `json:"max_wait_minutes"`
	Visitors    int     `json:"visitors"`
}

const heatBuckets = 30

// NewHeatmap buckets the admitted visitors of a run.
func NewHeatmap(people []sim.VisitorRecord) Heatmap {
	h := Heatmap{Counts: make([][]int, heatBuckets)}
	for i := range h.Counts {
		h.Counts[i] = make([]int, heatBuckets)
	}
	maxArrival := 0.0
	for _, p := range people {
		if p.AdmittedAt < 0 {
			continue
		}
		maxArrival = math.Max(maxArrival, float64(p.Bucket))
		h.MaxWait = math.Max(h.MaxWait, p.Wait().Minutes())
	}
	// Arrival minutes are whole (the bucket ids); their range is
	// [0, last], split in 30 like histogram2d does.
	h.ArrivalStep = math.Max(maxArrival, 1) / heatBuckets
	h.WaitStep = math.Max(h.MaxWait, 1e-9) / heatBuckets
	bucket := func(x, step float64) int { return min(int(x/step), heatBuckets-1) }
	for _, p := range people {
		if p.AdmittedAt < 0 {
			continue
		}
		h.Counts[bucket(float64(p.Bucket), h.ArrivalStep)][bucket(p.Wait().Minutes(), h.WaitStep)]++
		h.Visitors++
	}
	return h
}

// inferno runs from black to yellow, brighter for more, and stops short of
// white so the fullest cell stands out on a white page.
var inferno = []color.NRGBA{
	{R: 0x00, G: 0x00, B: 0x04, A: 255},
	{R: 0x42, G: 0x0a, B: 0x68, A: 255},
	{R: 0x93, G: 0x26, B: 0x67, A: 255},
	{R: 0xdd, G: 0x51, B: 0x3a, A: 255},
	{R: 0xfc, G: 0xa5, B: 0x0a, A: 255},
	{R: 0xf6, G: 0xd7, B: 0x46, A: 255},
}

// shade maps v in [0, 1] onto inferno, linearly between its stops.
func shade(v float64) string {
	v = math.Max(0, math.Min(1, v)) * float64(len(inferno)-1)
	i := min(int(v), len(inferno)-2)
	f := v - float64(i)
	mix := func(a, b uint8) uint8 { return uint8(math.Round(float64(a) + f*(float64(b)-float64(a)))) }
	a, b := inferno[i], inferno[i+1]
	return fmt.Sprintf("#%02x%02x%02x", mix(a.R, b.R), mix(a.G, b.G), mix(a.B, b.B))
}

// frame is a plot's area on the canvas and the data range it shows.
type frame struct {
	left, top, width, height float64
	xMin, xMax, yMin, yMax   float64
}

func (f frame) x(v float64) float64 {
	return f.left + (v-f.xMin)/(f.xMax-f.xMin)*f.width
}

func (f frame) y(v float64) float64 {
	return f.top + f.height - (v-f.yMin)/(f.yMax-f.yMin)*f.height
}

// svg accumulates one picture's elements.
type svg struct {
	b strings.Builder
}

func newSVG(width, height int) *svg {
	s := &svg{}
	// A white background, not transparent: readable on dark pages too.
	fmt.Fprintf(&s.b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="11">`+"\n", width, height, width, height)
	fmt.Fprintf(&s.b, `<rect width="%d" height="%d" fill="#fff"/>`+"\n", width, height)
	return s
}

func (s *svg) text(x, y float64, anchor, body string, extra ...string) {
	fmt.Fprintf(&s.b, `<text x="%.1f" y="%.1f" text-anchor="%s"%s>%s</text>`+"\n", x, y, anchor, strings.Join(extra, ""), html.EscapeString(body))
}

func (s *svg) line(x1, y1, x2, y2 float64, stroke string) {
	fmt.Fprintf(&s.b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s"/>`+"\n", x1, y1, x2, y2, stroke)
}

// axes draws the frame's box, its ticks with labels and the axis titles.
func (s *svg) axes(f frame, xTitle, yTitle string) {
	fmt.Fprintf(&s.b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="none" stroke="#000"/>`+"\n", f.left, f.top, f.width, f.height)
	for _, v := range niceTicks(f.xMin, f.xMax) {
		x := f.x(v)
		s.line(x, f.top+f.height, x, f.top+f.height+4, "#000")
		s.text(x, f.top+f.height+16, "middle", label(v))
	}
	for _, v := range niceTicks(f.yMin, f.yMax) {
		y := f.y(v)
		s.line(f.left-4, y, f.left, y, "#000")
		s.text(f.left-6, y+4, "end", label(v))
	}
	s.text(f.left+f.width/2, f.top+f.height+34, "middle", xTitle)
	s.text(14, f.top+f.height/2, "middle", yTitle, fmt.Sprintf(` transform="rotate(-90 14 %.1f)"`, f.top+f.height/2))
}

func (s *svg) save(path string) error {
	s.b.WriteString("</svg>\n")
	if err := os.WriteFile(path, []byte(s.b.String()), 0o644); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// niceTicks picks about five round values (1, 2 or 5 × 10^k apart) in [lo, hi].
func niceTicks(lo, hi float64) []float64 {
	if !(hi > lo) {
		return []float64{lo}
	}
	raw := (hi - lo) / 5
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag
	for _, m := range []float64{2, 5, 10} {
		if step >= raw {
			break
		}
		step = m * mag
	}
	var ticks []float64
	for v := math.Ceil(lo/step) * step; v <= hi+step*1e-9; v += step {
		ticks = append(ticks, math.Round(v/step)*step)
	}
	return ticks
}

// label writes a tick's value without trailing zeros.
func label(v float64) string {
	return strconv.FormatFloat(math.Round(v*1e6)/1e6, 'f', -1, 64)
}

// SaveHeatmap draws a heatmap with its color bar as SVG. Cells are shaded
// by the square root of their count, so that the spread of a random queue
// shows next to its crowded first bucket (the bar is labelled in visitors).
func SaveHeatmap(h Heatmap, title, path string) error {
	maxCount := 1
	for _, col := range h.Counts {
		for _, n := range col {
			maxCount = max(maxCount, n)
		}
	}
	top := math.Sqrt(float64(maxCount))
	const width, height = 560, 400
	s := newSVG(width, height)
	s.text(width/2-45, 18, "middle", title, ` font-size="13"`)
	f := frame{left: 55, top: 30, width: 390, height: 320,
		xMax: h.ArrivalStep * heatBuckets, yMax: h.WaitStep * heatBuckets}
	cw, ch := f.width/heatBuckets, f.height/heatBuckets
	for c, col := range h.Counts {
		for r, n := range col {
			// Cells overlap by a hair so no seam shows between them.
			fmt.Fprintf(&s.b, `<rect x="%.2f" y="%.2f" width="%.2f" height="%.2f" fill="%s"/>`+"\n",
				f.left+float64(c)*cw, f.top+f.height-float64(r+1)*ch, cw+0.6, ch+0.6, shade(math.Sqrt(float64(n))/top))
		}
	}
	s.axes(f, "arrival minute", "wait (minutes)")

	// The color bar: 64 bands from 0 to the fullest cell, ticks at round counts.
	bar := frame{left: 475, top: 30, width: 18, height: 320, yMax: top}
	const bands = 64
	for i := range bands {
		fmt.Fprintf(&s.b, `<rect x="%.1f" y="%.2f" width="%.1f" height="%.2f" fill="%s"/>`+"\n",
			bar.left, bar.top+bar.height-float64(i+1)*bar.height/bands, bar.width, bar.height/bands+0.3, shade((float64(i)+0.5)/bands))
	}
	fmt.Fprintf(&s.b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="none" stroke="#000"/>`+"\n", bar.left, bar.top, bar.width, bar.height)
	s.text(bar.left+bar.width/2, 22, "middle", "visitors")
	for _, v := range []float64{0, 1, 10, 25, 50, 100, 200, 300, 500, 1000, 2000, 5000, 10000} {
		if v > float64(maxCount) {
			break
		}
		y := bar.y(math.Sqrt(v))
		s.line(bar.left+bar.width, y, bar.left+bar.width+4, y, "#000")
		s.text(bar.left+bar.width+6, y+4, "start", label(v))
	}
	return s.save(path)
}

// SaveEstimates draws the random queue's predicted (dashed) against
// observed (solid) percentile waits, minute by minute, as SVG.
func SaveEstimates(cohorts []sim.Cohort, path string) error {
	const width, height = 560, 360
	s := newSVG(width, height)
	s.text(width/2, 18, "middle", "random queue: predicted (dashed) and observed waits", ` font-size="13"`)
	f := frame{left: 55, top: 30, width: 480, height: 275}
	f.xMin, f.xMax = math.Inf(1), math.Inf(-1)
	for _, c := range cohorts {
		f.xMin, f.xMax = math.Min(f.xMin, float64(c.Minute)), math.Max(f.xMax, float64(c.Minute))
		for i := range 3 {
			f.yMax = math.Max(f.yMax, math.Max(c.Predicted[i], c.Observed[i]))
		}
	}
	if len(cohorts) == 0 || f.xMax == f.xMin {
		f.xMin, f.xMax = 0, math.Max(f.xMax, 1)
	}
	f.yMax = math.Max(f.yMax*1.05, 1)
	for _, v := range niceTicks(f.yMin, f.yMax) {
		s.line(f.left, f.y(v), f.left+f.width, f.y(v), "#ddd")
	}
	names := []string{"25th", "50th", "75th"}
	shades := []string{"#1f77b4", "#d62728", "#2ca02c"}
	for i := range 3 {
		var pred, obs []string
		for _, c := range cohorts {
			pred = append(pred, fmt.Sprintf("%.1f,%.1f", f.x(float64(c.Minute)), f.y(c.Predicted[i])))
			obs = append(obs, fmt.Sprintf("%.1f,%.1f", f.x(float64(c.Minute)), f.y(c.Observed[i])))
		}
		fmt.Fprintf(&s.b, `<polyline fill="none" stroke="%s" stroke-dasharray="4 3" points="%s"/>`+"\n", shades[i], strings.Join(pred, " "))
		fmt.Fprintf(&s.b, `<polyline fill="none" stroke="%s" stroke-width="1.5" points="%s"/>`+"\n", shades[i], strings.Join(obs, " "))
		y := f.top + 14 + float64(i)*15
		s.line(f.left+10, y-4, f.left+30, y-4, shades[i])
		s.text(f.left+35, y, "start", names[i]+" percentile")
	}
	s.axes(f, "minute", "wait (minutes)")
	return s.save(path)
}
