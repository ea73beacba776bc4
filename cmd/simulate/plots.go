package main

import (
	"fmt"
	"image/color"
	"math"
	"os"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/palette/moreland"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/edgeflow/edgeflow/internal/admit/sim"
)

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

// grid adapts a Heatmap to gonum's GridXYZ: cell centers in minutes, and
// the square root of the count, so that the spread of a random queue shows
// next to its crowded first bucket (the color bar is labelled in visitors).
type grid struct{ h Heatmap }

func (g grid) Dims() (c, r int)   { return heatBuckets, heatBuckets }
func (g grid) Z(c, r int) float64 { return math.Sqrt(float64(g.h.Counts[c][r])) }
func (g grid) X(c int) float64    { return (float64(c) + 0.5) * g.h.ArrivalStep }
func (g grid) Y(r int) float64    { return (float64(r) + 0.5) * g.h.WaitStep }

// inferno runs from black to yellow, brighter for more, and stops short of
// white so the fullest cell stands out on a white page.
var inferno = []color.Color{
	color.NRGBA{R: 0x00, G: 0x00, B: 0x04, A: 255},
	color.NRGBA{R: 0x42, G: 0x0a, B: 0x68, A: 255},
	color.NRGBA{R: 0x93, G: 0x26, B: 0x67, A: 255},
	color.NRGBA{R: 0xdd, G: 0x51, B: 0x3a, A: 255},
	color.NRGBA{R: 0xfc, G: 0xa5, B: 0x0a, A: 255},
	color.NRGBA{R: 0xf6, G: 0xd7, B: 0x46, A: 255},
}

// SaveHeatmap draws a heatmap with its color bar into a PNG.
func SaveHeatmap(h Heatmap, title, path string) error {
	colors, err := moreland.NewLuminance(inferno)
	if err != nil {
		return err
	}
	maxCount := 0
	for _, col := range h.Counts {
		for _, n := range col {
			maxCount = max(maxCount, n)
		}
	}
	top := math.Sqrt(float64(max(maxCount, 1)))
	colors.SetMin(0)
	colors.SetMax(top)

	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "arrival minute"
	p.Y.Label.Text = "wait (minutes)"
	p.X.Tick.Marker, p.Y.Tick.Marker = plainTicks{}, plainTicks{}
	hm := plotter.NewHeatMap(grid{h}, colors.Palette(256))
	hm.Min, hm.Max = 0, top
	p.Add(hm)
	p.X.Min, p.X.Max = 0, h.ArrivalStep*heatBuckets
	p.Y.Min, p.Y.Max = 0, h.WaitStep*heatBuckets

	bar := plot.New()
	bar.Title.Text = "visitors"
	bar.HideX()
	bar.Y.Padding = 0
	bar.Y.Tick.Marker = sqrtTicks{}
	bar.Add(&plotter.ColorBar{ColorMap: colors, Vertical: true})

	const width, height = 5.6 * vg.Inch, 4 * vg.Inch
	img := vgimg.New(width, height) // white, not transparent: readable on dark pages too
	dc := draw.New(img)
	barWidth := 0.9 * vg.Inch
	main := draw.Crop(dc, 0, -barWidth, 0, 0)
	side := draw.Crop(dc, width-barWidth, 0, 0, 0)
	p.Draw(main)
	bar.Draw(side)
	return savePNG(img, path)
}

// SaveEstimates draws the random queue's predicted against observed
// percentile waits, minute by minute.
func SaveEstimates(cohorts []sim.Cohort, path string) error {
	p := plot.New()
	p.Title.Text = "random queue: predicted (dashed) and observed waits"
	p.X.Label.Text = "minute"
	p.Y.Label.Text = "wait (minutes)"
	p.Legend.Top = true
	p.Y.Tick.Marker = plainTicks{}
	names := []string{"25th", "50th", "75th"}
	shades := []color.Color{color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 255}, color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 255}, color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 255}}
	for i := range 3 {
		pred, obs := make(plotter.XYs, 0, len(cohorts)), make(plotter.XYs, 0, len(cohorts))
		for _, c := range cohorts {
			pred = append(pred, plotter.XY{X: float64(c.Minute), Y: c.Predicted[i]})
			obs = append(obs, plotter.XY{X: float64(c.Minute), Y: c.Observed[i]})
		}
		pl, err := plotter.NewLine(pred)
		if err != nil {
			return err
		}
		pl.Color, pl.Dashes = shades[i], []vg.Length{vg.Points(4), vg.Points(3)}
		ol, err := plotter.NewLine(obs)
		if err != nil {
			return err
		}
		ol.Color, ol.Width = shades[i], vg.Points(1.5)
		p.Add(pl, ol)
		p.Legend.Add(names[i]+" percentile", ol)
	}
	p.Add(plotter.NewGrid())
	img := vgimg.New(5.6*vg.Inch, 3.6*vg.Inch)
	p.Draw(draw.New(img))
	return savePNG(img, path)
}

// plainTicks are gonum's default ticks labelled without trailing zeros.
type plainTicks struct{}

func (plainTicks) Ticks(lo, hi float64) []plot.Tick {
	ticks := plot.DefaultTicks{}.Ticks(lo, hi)
	for i := range ticks {
		if ticks[i].Label != "" {
			ticks[i].Label = strconv.FormatFloat(ticks[i].Value, 'f', -1, 64)
		}
	}
	return ticks
}

// sqrtTicks label an axis of square roots with the counts they stand for.
type sqrtTicks struct{}

func (sqrtTicks) Ticks(lo, hi float64) []plot.Tick {
	var ticks []plot.Tick
	for _, v := range []float64{0, 1, 10, 25, 50, 100, 200, 300, 500, 1000, 2000, 5000, 10000} {
		if r := math.Sqrt(v); r >= lo && r <= hi {
			ticks = append(ticks, plot.Tick{Value: r, Label: strconv.FormatFloat(v, 'f', -1, 64)})
		}
	}
	return ticks
}

func savePNG(img *vgimg.Canvas, path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return fmt.Errorf("%s: %w", path, err)
	}
	return f.Close()
}
