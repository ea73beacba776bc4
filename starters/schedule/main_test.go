package main

import (
	"strings"
	"testing"

	"github.com/edgeflow/edgeflow/internal/cli"
	"github.com/edgeflow/edgeflow/internal/cli/clitest"
)

func TestMain(m *testing.M) { clitest.Main(m, "schedule", main) }

// From the process, as a script sees it: --help exits 0 (it exited 2),
// create's help lists --every and not pause's --note (it listed every
// subcommand's flags), and an unknown flag exits 2.
func TestHelpFromTheProcess(t *testing.T) {
	if r := clitest.Exec(t, nil, "--help"); r.Code != 0 || !strings.Contains(r.Stdout, "create") {
		t.Errorf("schedule --help: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	if r := clitest.Exec(t, nil, "create", "--help"); r.Code != 0 || !strings.Contains(r.Stdout, "--every") || strings.Contains(r.Stdout+r.Stderr, "-note") {
		t.Errorf("schedule create --help: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	if r := clitest.Exec(t, nil, "create", "--nope"); r.Code != 2 {
		t.Errorf("schedule create --nope: exit %d", r.Code)
	}
}

// Every subcommand's help exits 0 and lists only its own flags: create's
// no longer shows pause's --note or describe's --json.
func TestCommandLine(t *testing.T) {
	clitest.Check(t, newRootCommand)
	r := clitest.Run(newRootCommand, "create", "--help")
	if !strings.Contains(r.Stdout, "--every") || strings.Contains(r.Stdout, "--note") || strings.Contains(r.Stdout, "--json") {
		t.Errorf("schedule create --help:\n%s", r.Stdout)
	}
}

// Bad input exits 2 before Temporal is dialled; an unreachable Temporal
// exits 3 (the old spelling of the address flag still works).
func TestExitCodes(t *testing.T) {
	if r := clitest.Run(newRootCommand, "create", "--every", "1s", "--address", "127.0.0.1:1"); r.Code != cli.ExitUsage || !strings.Contains(r.Stderr, "--every must be at least") {
		t.Errorf("create --every 1s: %+v", r)
	}
	if r := clitest.Run(newRootCommand, "trigger", "-temporal-address", "127.0.0.1:1"); r.Code != cli.ExitUnavailable || !strings.HasPrefix(r.Stderr, "schedule: ") {
		t.Errorf("trigger against nothing: %+v", r)
	}
	if r := clitest.Run(newRootCommand); r.Code != cli.ExitUsage || !strings.Contains(r.Stderr, "Available Commands") {
		t.Errorf("no command: %+v", r)
	}
}

// Every command of the starter is named in its product's page.
func TestCommandsAreDocumented(t *testing.T) {
	clitest.Documented(t, newRootCommand, "docs/publish.md")
}
