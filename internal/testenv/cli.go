package testenv

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgeflow/edgeflow/internal/devstack"
)

// READMECommands are the commands of the README's block tagged name: the
// lines between "<!-- cli:NAME -->" and "<!-- /cli -->" that start with
// "temporal ", so the examples people read are the ones a test runs.
func READMECommands(t testing.TB, name string) []string {
	t.Helper()
	root, err := devstack.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(data), "<!-- cli:"+name+" -->")
	if ok {
		block, _, ok = strings.Cut(block, "<!-- /cli -->")
	}
	if !ok {
		t.Fatalf("README.md has no block <!-- cli:%s --> … <!-- /cli -->", name)
	}
	var out []string
	for _, line := range strings.Split(block, "\n") {
		if line = strings.TrimSpace(line); strings.HasPrefix(line, "temporal ") {
			out = append(out, line)
		}
	}
	if len(out) == 0 {
		t.Fatalf("README.md's block cli:%s has no temporal command", name)
	}
	return out
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
