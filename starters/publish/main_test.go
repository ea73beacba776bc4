package main

import (
	"strings"
	"testing"

	"go.temporal.io/api/enums/v1"

	"github.com/edgeflow/edgeflow/internal/cli"
	"github.com/edgeflow/edgeflow/internal/cli/clitest"
	"github.com/edgeflow/edgeflow/internal/publish/catalog"
	"github.com/edgeflow/edgeflow/workflows/publish/contract"
)

func TestRequest(t *testing.T) {
	pkg := &catalog.Package{Name: "lib"}
	opts, typ, input := request(options{name: "lib", version: "1.2.3"}, pkg)
	in, ok := input.(contract.PublishInput)
	if typ != contract.WorkflowTypePublishVersion || !ok || in.Name != "lib" || in.Version != "1.2.3" || in.Package != pkg {
		t.Errorf("a --version starts %s with %+v", typ, input)
	}
	if opts.ID != "publish/lib@1.2.3" || opts.TaskQueue != "publish" || opts.WorkflowIDConflictPolicy != enums.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING ||
		opts.WorkflowIDReusePolicy != contract.PublishIDReusePolicy {
		t.Errorf("a --version's options %+v", opts)
	}

	opts, typ, input = request(options{name: "lib"}, pkg)
	u, ok := input.(contract.UpdatesInput)
	if typ != contract.WorkflowTypePackageUpdates || !ok || !u.Wait || len(u.Only) != 1 || u.Only[0] != "lib" || len(u.Packages) != 1 {
		t.Errorf("a check starts %s with %+v", typ, input)
	}
	if opts.ID != "publish-package/lib" || opts.TaskQueue != "publish" || opts.WorkflowIDConflictPolicy != enums.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING {
		t.Errorf("a check's options %+v", opts)
	}
	if _, _, input = request(options{name: "lib"}, nil); input.(contract.UpdatesInput).Packages != nil {
		t.Errorf("without --catalog the workers' catalog is read, got %+v", input)
	}
}

func TestUpdatesExitCode(t *testing.T) {
	for _, c := range []struct {
		s    contract.UpdatesStats
		want int
	}{
		{contract.UpdatesStats{NewVersions: 2, Outcomes: contract.Outcomes{Published: 2}}, cli.ExitOK},
		{contract.UpdatesStats{}, cli.ExitOK}, // nothing new
		{contract.UpdatesStats{NewVersions: 2, Outcomes: contract.Outcomes{Published: 1, Failed: 1}}, cli.ExitFailed},
		{contract.UpdatesStats{Problems: []string{"lib: no fileMap"}}, cli.ExitFailed},
		{contract.UpdatesStats{NewVersions: 1, Problems: []string{"lib: 304 lost"}, Outcomes: contract.Outcomes{Published: 1}}, cli.ExitOK},
	} {
		if got := updatesExitCode(c.s); got != c.want {
			t.Errorf("%+v: exit %d, want %d", c.s, got, c.want)
		}
	}
}

// Help, own flags, unknown flags refused; --version stays the package's
// version, and the starter's own is `publish version`.
func TestCommandLine(t *testing.T) {
	clitest.Check(t, newRootCommand)
	if r := clitest.Run(newRootCommand, "--version", "3.7.1"); r.Code != cli.ExitUsage || !strings.Contains(r.Stderr, "--package is required") {
		t.Errorf("--version 3.7.1 without --package: %+v", r)
	}
	if r := clitest.Run(newRootCommand, "audit", "--sample", "0"); r.Code != cli.ExitUsage || !strings.Contains(r.Stderr, "--sample must be") {
		t.Errorf("audit --sample 0: %+v", r)
	}
}

// Every command of the starter is named in its product's page.
func TestCommandsAreDocumented(t *testing.T) {
	clitest.Documented(t, newRootCommand, "docs/publish.md")
}
