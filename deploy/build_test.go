package deploy

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgeflow/edgeflow/internal/devstack"
)

// `make build` puts every binary in bin/: worker pools and commands under
// their folder's name, starters as edgeflow-<job>. No two may share a
// name (a starter named like its worker pool would overwrite it).
func TestBuildNamesDoNotCollide(t *testing.T) {
	root, err := devstack.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	makefile, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"-o bin/ ./workers/... ./cmd/...", "-o bin/edgeflow-$$s ./starters/$$s"} {
		if !strings.Contains(string(makefile), want) {
			t.Fatalf("the Makefile's build no longer says %q: update this test with the new naming", want)
		}
	}
	owner := map[string]string{}
	for _, dir := range []string{"workers", "cmd", "starters"} {
		entries, err := os.ReadDir(filepath.Join(root, dir))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if !e.IsDir() {
				continue
			}
			name := e.Name()
			if dir == "starters" {
				name = "edgeflow-" + name
			}
			if prev, dup := owner[name]; dup {
				t.Errorf("bin/%s would be built from both %s and %s/%s", name, prev, dir, e.Name())
			}
			owner[name] = dir + "/" + e.Name()
		}
	}
	for _, q := range devstack.TaskQueues() {
		if owner[q] != "workers/"+q {
			t.Errorf("make run starts bin/%s for the %s pool, but it is built from %q", q, q, owner[q])
		}
	}
}
