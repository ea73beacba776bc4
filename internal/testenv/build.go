package testenv

import (
	"fmt"
	"os/exec"
	"path"
	"path/filepath"

	"github.com/edgeflow/edgeflow/internal/devstack"
)

// BuildCommand compiles one of the repository's commands (pkg like
// "./cmd/gate") into dir, named after its last element, and returns the
// binary's path: tests run the processes operators run.
func BuildCommand(dir, pkg string) (string, error) {
	root, err := devstack.RepoRoot()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, path.Base(pkg))
	cmd := exec.Command("go", "build", "-o", bin, pkg)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build %s: %v\n%s", pkg, err, out)
	}
	return bin, nil
}
