package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/edgeflow/edgeflow/internal/devstack"
)

// DocCommands are the commands of the documentation's block tagged name:
// the lines between "<!-- cli:NAME -->" and "<!-- /cli -->" that start with
// "temporal ", in README.md or a page of docs/, so the examples people read
// are the ones a test runs wherever the documentation keeps them.
func DocCommands(t testing.TB, name string) []string {
	t.Helper()
	root, err := devstack.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	pages, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	docs := map[string]string{}
	for _, path := range append([]string{filepath.Join(root, "README.md")}, pages...) {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, path)
		docs[rel] = string(data)
	}
	out, err := cliBlock(docs, name)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// cliBlock finds the block tagged name in exactly one of docs (path to
// text): a block in two pages could drift apart while a test runs only one.
func cliBlock(docs map[string]string, name string) ([]string, error) {
	var found []string
	var out []string
	for path, text := range docs {
		_, block, ok := strings.Cut(text, "<!-- cli:"+name+" -->")
		if !ok {
			continue
		}
		found = append(found, path)
		block, _, ok = strings.Cut(block, "<!-- /cli -->")
		if !ok {
			return nil, fmt.Errorf("%s: block cli:%s has no <!-- /cli --> end", path, name)
		}
		out = nil
		for _, line := range strings.Split(block, "\n") {
			if line = strings.TrimSpace(line); strings.HasPrefix(line, "temporal ") {
				out = append(out, line)
			}
		}
		if len(out) == 0 {
			return nil, fmt.Errorf("%s: block cli:%s has no temporal command", path, name)
		}
	}
	sort.Strings(found)
	switch len(found) {
	case 0:
		return nil, fmt.Errorf("no block <!-- cli:%s --> … <!-- /cli --> in README.md or docs/*.md", name)
	case 1:
		return out, nil
	default:
		return nil, fmt.Errorf("block cli:%s is in %s: keep it in one place", name, strings.Join(found, " and "))
	}
}

// TemporalCLI runs a command line of the plain temporal CLI (the pinned
// one) through bash against the test server, as a person would paste it:
// TEMPORAL_ADDRESS points it at e's server. It returns the combined output
// and fails the test when the command fails.
func (e *Env) TemporalCLI(t testing.TB, line string) string {
	t.Helper()
	bin, err := devstack.FindTool("temporal")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", "-c", line)
	cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(bin)+":"+os.Getenv("PATH"),
		"TEMPORAL_ADDRESS="+e.Temporal.HostPort, "TEMPORAL_NAMESPACE="+e.Temporal.Namespace)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", line, err, out)
	}
	return string(out)
}
