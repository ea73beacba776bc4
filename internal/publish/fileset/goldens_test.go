package fileset

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// goldens are node-glob 7 / minimatch 3 results (testdata/minimatch3,
// generate.js): for real catalog fileMap patterns and hand-written cases,
// which files of a tree glob.sync selects.
type goldens struct {
	Generator string     `json:"generator"`
	Trees     [][]string `json:"trees"`
	Cases     []struct {
		Source  string   `json:"source"`
		Pattern string   `json:"pattern"`
		Tree    int      `json:"tree"`
		Match   []string `json:"match"`
	} `json:"cases"`
}

// TestMinimatchGoldens: the engine selects exactly what cdnjs's reference
// selects, file for file, for every golden pattern it compiles. A pattern
// it refuses must be one minimatch reads as something surprising, and is
// listed.
func TestMinimatchGoldens(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "minimatch3", "goldens.json"))
	if err != nil {
		t.Fatal(err)
	}
	var g goldens
	if err := json.Unmarshal(data, &g); err != nil {
		t.Fatal(err)
	}
	if len(g.Cases) < 1000 {
		t.Fatalf("only %d golden cases", len(g.Cases))
	}
	refused := map[string]bool{}
	checked := 0
	for _, c := range g.Cases {
		p, err := Compile(c.Pattern)
		if err != nil {
			if !refused[c.Pattern] {
				refused[c.Pattern] = true
				t.Logf("refused %q (%s): %v", c.Pattern, c.Source, err)
			}
			continue
		}
		var got []string
		for _, path := range g.Trees[c.Tree] {
			if p.Match(path) {
				got = append(got, path)
			}
		}
		checked++
		if !slices.Equal(got, c.Match) && !(len(got) == 0 && len(c.Match) == 0) {
			t.Errorf("%s: %q selects\n   %q\nminimatch 3 selects\n   %q", c.Source, c.Pattern, got, c.Match)
		}
	}
	if len(refused) > 10 {
		t.Errorf("%d golden patterns refused", len(refused))
	}
	t.Logf("%d cases checked against %s", checked, g.Generator)
}
