package integration

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/edgeflow/edgeflow/internal/devstack"
	"github.com/edgeflow/edgeflow/internal/publish/catalog"
	"github.com/edgeflow/edgeflow/workflows/publish/contract"
	"go.temporal.io/sdk/client"
)

var (
	buildOnce sync.Once
	binDir    string
	buildErr  error
)

// starter builds the starters once per test binary and returns the path of one.
func starter(t *testing.T, name string) string {
	t.Helper()
	buildOnce.Do(func() {
		root, err := devstack.RepoRoot()
		if err != nil {
			buildErr = err
			return
		}
		binDir, buildErr = os.MkdirTemp("", "edgeflow-starters-")
		if buildErr != nil {
			return
		}
		cmd := exec.Command("go", "build", "-o", binDir+"/", "./starters/publish", "./starters/catalog", "./starters/schedule")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = errors.New(string(out))
		}
	})
	if buildErr != nil {
		t.Fatalf("build starters: %v", buildErr)
	}
	return filepath.Join(binDir, name)
}

func runStarter(t *testing.T, name string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(starter(t, name), args...)
	cmd.Env = append(os.Environ(), "TEMPORAL_ADDRESS="+env.Temporal.HostPort)
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit):
		code = exit.ExitCode()
	default:
		t.Fatal(err)
	}
	return out.String(), errOut.String(), code
}

func writeCatalog(t *testing.T, pkgs ...catalog.Package) string {
	t.Helper()
	dir := t.TempDir()
	for _, p := range pkgs {
		data, _ := json.MarshalIndent(p, "", "  ")
		path := catalog.FilePath(dir, p.Name)
		os.MkdirAll(filepath.Dir(path), 0o755)
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestStarters(t *testing.T) {
	// The workers' catalog is empty, so that the schedule's triggered check
	// below finds nothing to do and ends.
	setUpStack(t)
	pub := *acts
	pub.CatalogDir = t.TempDir()
	startPools(t, &pub, nil)
	pkg := demoPackage("clidemo")
	npm.Add("clidemo", "2.0.0", demoTarball("2.0.0", demoCSS))
	dir := writeCatalog(t, pkg)

	// A package the workers' catalog does not have, sent from the starter's side.
	out, stderr, code := runStarter(t, "publish", "--package", "clidemo", "--catalog", dir, "--json")
	if code != 0 {
		t.Fatalf("publish exited %d: %s", code, stderr)
	}
	var stats contract.UpdatesStats
	if err := json.Unmarshal([]byte(out), &stats); err != nil || stats.Published != 1 {
		t.Fatalf("publish --json printed %q (%v); want one version published", out, err)
	}
	// One exact version, already published: success, nothing redone, human output.
	out, stderr, code = runStarter(t, "publish", "--package", "clidemo", "--version", "2.0.0", "--catalog", dir)
	if code != 0 || !strings.Contains(out+stderr, "clidemo") {
		t.Errorf("publish --version on a published version: exit %d, %s %s", code, out, stderr)
	}
	// A version the registry does not have fails with exit 1 and says why.
	_, stderr, code = runStarter(t, "publish", "--package", "clidemo", "--version", "9.9.9", "--catalog", dir)
	if code != 1 || !strings.Contains(stderr, "no version 9.9.9") {
		t.Errorf("publish of a missing version: exit %d, stderr %q; want 1 and the reason", code, stderr)
	}
	// Usage errors exit 2.
	if _, _, code = runStarter(t, "publish"); code != 2 {
		t.Errorf("publish without --package exited %d, want 2", code)
	}
	broken := pkg
	broken.Autoupdate.FileMap = []catalog.FileMapEntry{{Files: []string{"dist/{a"}}}
	if _, stderr, code = runStarter(t, "publish", "--package", "clidemo", "--catalog", writeCatalog(t, broken)); code != 2 || !strings.Contains(stderr, "unclosed") {
		t.Errorf("publish of an invalid package: exit %d, %q; want 2 and the glob problem", code, stderr)
	}

	// The catalog validator: the repo's sample is clean, a broken one is reported.
	root, _ := devstack.RepoRoot()
	if out, _, code := runStarter(t, "catalog", "validate", filepath.Join(root, "catalog")); code != 0 || !strings.Contains(out, "no problems") {
		t.Errorf("catalog validate of the sample: exit %d, %q", code, out)
	}
	if out, _, code := runStarter(t, "catalog", "validate", writeCatalog(t, broken)); code != 1 || !strings.Contains(out, "fileMap[0].files[0]") {
		t.Errorf("catalog validate of a broken catalog: exit %d, %q", code, out)
	}

	// The schedule: create, describe, pause, trigger, delete.
	for _, args := range [][]string{{"create", "--id", "it-schedule", "--every", "1h"}, {"pause", "--id", "it-schedule"}, {"trigger", "--id", "it-schedule"}} {
		if _, stderr, code := runStarter(t, "schedule", args...); code != 0 {
			t.Fatalf("schedule %v: exit %d %s", args, code, stderr)
		}
	}
	// A schedule's description catches up with a pause a moment later: wait
	// for it instead of reading it once.
	eventually(t, 30*time.Second, "schedule describe shows the pause", func() (bool, string) {
		out, _, code := runStarter(t, "schedule", "describe", "--id", "it-schedule", "--json")
		var desc struct {
			Paused bool     `json:"paused"`
			Every  []string `json:"every"`
		}
		ok := code == 0 && json.Unmarshal([]byte(out), &desc) == nil && desc.Paused && len(desc.Every) == 1 && desc.Every[0] == "1h0m0s"
		return ok, fmt.Sprintf("exit %d, %q", code, out)
	})
	// The triggered check runs, and ends here: left running, it would be
	// finished by the next test's workers, with that test's catalog (it once
	// published TestOneTraceSpansAWholePublish's version in its own trace).
	sched := env.Client.ScheduleClient().GetHandle(testContext(t), "it-schedule")
	var triggered client.ScheduleWorkflowExecution
	eventually(t, 30*time.Second, "the triggered check starts", func() (bool, string) {
		d, err := sched.Describe(testContext(t))
		if err != nil || len(d.Info.RecentActions) == 0 {
			return false, fmt.Sprintf("%v", err)
		}
		triggered = *d.Info.RecentActions[0].StartWorkflowResult
		return true, ""
	})
	if err := env.Client.GetWorkflow(testContext(t), triggered.WorkflowID, triggered.FirstExecutionRunID).Get(testContext(t), nil); err != nil {
		t.Errorf("the triggered check %s: %v", triggered.WorkflowID, err)
	}
	if _, _, code := runStarter(t, "schedule", "delete", "--id", "it-schedule"); code != 0 {
		t.Errorf("schedule delete exited %d", code)
	}
	eventually(t, 30*time.Second, "describe of a deleted schedule exits 1", func() (bool, string) {
		_, stderr, code := runStarter(t, "schedule", "describe", "--id", "it-schedule")
		return code == 1, fmt.Sprintf("exit %d, %s", code, stderr)
	})
}
