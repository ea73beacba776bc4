package main

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/edgeflow/edgeflow/internal/cli/clitest"
)

// A small run writes every file the issue names: the SVG pictures (well-formed, of
// a sensible size), report.md with the tables, and report.json whose
// allocation rows carry the field names.
func TestSimulateWritesTheReport(t *testing.T) {
	out := filepath.Join(t.TempDir(), "sim")
	o, err := parseFlags([]string{"--out", out, "--seed", "3", "--visitors", "1500", "--window", "6m",
		"--profiles", "spike-after-quiet", "--strategies", "even,counters", "--scale=false"})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := simulate(t.Context(), o, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"heatmap-fifo.svg", "heatmap-random.svg", "estimates-random.svg"} {
		pic, err := readSVG(filepath.Join(out, f))
		if err != nil {
			t.Fatal(err)
		}
		if pic.Width < 300 || pic.Height < 200 {
			t.Errorf("%s: %dx%d", f, pic.Width, pic.Height)
		}
		if strings.HasPrefix(f, "heatmap-") && pic.Rects < heatBuckets*heatBuckets {
			t.Errorf("%s: %d rectangles, want a %d×%d grid of cells", f, pic.Rects, heatBuckets, heatBuckets)
		}
		if strings.HasPrefix(f, "estimates-") && pic.Lines != 6 {
			t.Errorf("%s: %d lines, want predicted and observed for three percentiles", f, pic.Lines)
		}
		if !slices.Contains(rep.Files, f) {
			t.Errorf("%s not listed in %v", f, rep.Files)
		}
	}
	md, err := os.ReadFile(filepath.Join(out, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"![FIFO heatmap](heatmap-fifo.svg)", "| `spike-after-quiet` | `even` |", "|  | `counters` |", "Kendall's τ", "`regional-shift`"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	data, err := os.ReadFile(filepath.Join(out, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Allocation []map[string]any `json:"allocation"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Allocation) != 2 {
		t.Fatalf("allocation has %d rows, want 2", len(doc.Allocation))
	}
	for _, row := range doc.Allocation {
		for _, k := range []string{"strategy", "profile", "queueing_start_pct", "overshoot_total_pct", "overshoot_new_pct", "queueing_below_limits_minutes_pct"} {
			if _, ok := row[k]; !ok {
				t.Errorf("allocation row %v lacks %q", row, k)
			}
		}
	}
	if doc.Allocation[0]["strategy"] != "even" || doc.Allocation[1]["strategy"] != "counters" || doc.Allocation[1]["profile"] != "spike-after-quiet" {
		t.Errorf("rows %v", doc.Allocation)
	}
}

func TestCommandLine(t *testing.T) { clitest.Check(t, newRootCommand) }

func TestFlagsSayWhatIsWrong(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--seed", "1"}, "--out: required"},
		{[]string{"--out", "x", "--profiles", "uniform,zigzag"}, `--profiles: unknown "zigzag"`},
		{[]string{"--out", "x", "--strategies", ""}, "--strategies: none given"},
		{[]string{"--out", "x", "--gates", "0"}, "--gates: must be 1-500"},
		{[]string{"--out", "x", "--propagation-delay", "1.5s"}, "--propagation-delay: must be whole seconds"},
		{[]string{"--out", "x", "--window", "90s"}, "--window: must be whole minutes"},
		{[]string{"--out", "x", "extra"}, `unexpected argument "extra"`},
	} {
		_, err := parseFlags(c.args)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: want %q, got %v", c.args, c.want, err)
		}
	}
}

// picture is what the test reads back of an SVG the simulator wrote.
type picture struct {
	Width, Height, Rects, Lines int
}

// readSVG parses a picture as XML (so a malformed one fails) and counts
// its rectangles and polylines.
func readSVG(path string) (picture, error) {
	f, err := os.Open(path)
	if err != nil {
		return picture{}, err
	}
	defer f.Close()
	var p picture
	dec := xml.NewDecoder(f)
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return p, nil
		}
		if err != nil {
			return p, fmt.Errorf("%s: %w", path, err)
		}
		el, ok := tok.(xml.StartElement)
		if !ok {
			continue
		}
		switch el.Name.Local {
		case "svg":
			for _, a := range el.Attr {
				n, _ := strconv.Atoi(a.Value)
				switch a.Name.Local {
				case "width":
					p.Width = n
				case "height":
					p.Height = n
				}
			}
		case "rect":
			p.Rects++
		case "polyline":
			p.Lines++
		}
	}
}
