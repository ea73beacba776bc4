package deploy

import (
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/edgeflow/edgeflow/internal/devstack"
)

var (
	metricName = regexp.MustCompile(`\b(?:edgeflow|temporal)_[a-z0-9_]+\b`)
	ourMetric  = regexp.MustCompile(`"(edgeflow_[a-z0-9_]+)"`)
	sdkMetric  = regexp.MustCompile(`TemporalMetricsPrefix \+ "([a-z0-9_]+)"|TemporalRequest \+ "([a-z0-9_]+)"|TemporalLongRequest \+ "([a-z0-9_]+)"`)
)

// The Grafana dashboard (deploy/grafana/edgeflow.json) plots every metric
// of ours the code exports, and only metrics that exist: ours by their
// registered names, the SDK's by its own metric names with the suffixes
// internal/metrics gives them (_total, _seconds).
func TestGrafanaDashboard(t *testing.T) {
	root, err := devstack.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(root, "deploy", "grafana", "edgeflow.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		UID    string `json:"uid"`
		Panels []struct {
			ID      int    `json:"id"`
			Type    string `json:"type"`
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(data, &dash); err != nil {
		t.Fatalf("the dashboard is not JSON: %v", err)
	}
	ours := exportedMetrics(t, root)
	sdk := sdkMetrics(t)
	plotted := map[string]bool{}
	ids := map[int]bool{}
	for _, p := range dash.Panels {
		if ids[p.ID] {
			t.Errorf("panel id %d twice", p.ID)
		}
		ids[p.ID] = true
		if p.Type != "row" && len(p.Targets) == 0 {
			t.Errorf("panel %q plots nothing", p.Title)
		}
		for _, target := range p.Targets {
			for _, name := range metricName.FindAllString(target.Expr, -1) {
				base := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(name, "_bucket"), "_sum"), "_count")
				if strings.HasPrefix(name, "edgeflow_") {
					if !ours[name] && !ours[base] {
						t.Errorf("panel %q: %s is no metric the code exports", p.Title, name)
					}
					plotted[name], plotted[base] = true, true
					continue
				}
				sdkName := strings.TrimSuffix(strings.TrimSuffix(base, "_total"), "_seconds")
				if !sdk[sdkName] {
					t.Errorf("panel %q: %s is no metric of the Temporal SDK", p.Title, name)
				}
			}
		}
	}
	for name := range ours {
		if !plotted[name] {
			t.Errorf("the dashboard does not plot %s", name)
		}
	}
	if len(ours) < 10 || len(sdk) < 20 {
		t.Errorf("found %d metrics of ours and %d of the SDK: the scan is broken", len(ours), len(sdk))
	}
}

// exportedMetrics are the edgeflow_* names the code registers (string
// literals outside tests).
func exportedMetrics(t *testing.T, root string) map[string]bool {
	t.Helper()
	names := map[string]bool{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "bin") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range ourMetric.FindAllStringSubmatch(string(src), -1) {
			names[m[1]] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// sdkMetrics are the metric names of the Temporal Go SDK this module uses,
// read from its source.
func sdkMetrics(t *testing.T) map[string]bool {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "go.temporal.io/sdk").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	src, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(out)), "internal", "common", "metrics", "constants.go"))
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, m := range sdkMetric.FindAllStringSubmatch(string(src), -1) {
		switch {
		case m[1] != "":
			names["temporal_"+m[1]] = true
		case m[2] != "":
			names["temporal_request"+m[2]] = true
		case m[3] != "":
			names["temporal_long_request"+m[3]] = true
		}
	}
	return names
}
