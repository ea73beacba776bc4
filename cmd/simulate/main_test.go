package main

import (
	"encoding/json"
	"image/png"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// A small run writes every file the issue names: the PNGs (real images of
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
	for _, f := range []string{"heatmap-fifo.png", "heatmap-random.png", "estimates-random.png"} {
		file, err := os.Open(filepath.Join(out, f))
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := png.DecodeConfig(file)
		file.Close()
		if err != nil || cfg.Width < 300 || cfg.Height < 200 {
			t.Errorf("%s: %dx%d, %v", f, cfg.Width, cfg.Height, err)
		}
		if !slices.Contains(rep.Files, f) {
			t.Errorf("%s not listed in %v", f, rep.Files)
		}
	}
	md, err := os.ReadFile(filepath.Join(out, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"![FIFO heatmap](heatmap-fifo.png)", "| `spike-after-quiet` | `even` |", "|  | `counters` |", "Kendall's τ", "`regional-shift`"} {
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
