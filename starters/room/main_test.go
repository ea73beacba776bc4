package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgeflow/edgeflow/internal/cli"
	"github.com/edgeflow/edgeflow/internal/cli/clitest"
)

// Every command's help exits 0 with its own flags only: list's has no
// settings flags, create's no --follow.
func TestCommandLine(t *testing.T) { clitest.Check(t, newRootCommand) }

// Settings are checked before Temporal is dialled (exit 2, naming the
// field), and create's and update's flags are told apart: a flag given to
// one is not seen by the other, though both bind the same settings.
func TestSettingsCheckedBeforeDialling(t *testing.T) {
	nowhere := []string{"--address", "127.0.0.1:1"}
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"create", "shop", "--total-active-users", "10"}, cli.ExitUsage, "room create: invalid new_users_per_minute"},
		{[]string{"create", "shop", "-total-active-users", "10", "-new-users-per-minute", "5", "--queueing-method", "lottery"}, cli.ExitUsage, "invalid queueing_method"},
		{[]string{"create", "bad/name"}, cli.ExitUsage, "name: must be 1-64"},
		{[]string{"create", "shop", "--file", filepath.Join(t.TempDir(), "none.json")}, cli.ExitUsage, "no such file"},
		{[]string{"event", "add", "shop", "launch", "--event-end-time", "+1h"}, cli.ExitUsage, "invalid event_start_time: is required (--event-start-time)"},
		{[]string{"create", "shop", "--total-active-users", "10", "--new-users-per-minute", "5"}, cli.ExitUnavailable, "room: connect to Temporal at 127.0.0.1:1"},
		{[]string{"get", "shop", "extra"}, cli.ExitUsage, `want a room name, got ["shop" "extra"]`},
		{[]string{"list", "--follow"}, cli.ExitUsage, "unknown flag: --follow"},
	} {
		r := clitest.Run(newRootCommand, append(c.args, nowhere...)...)
		if r.Code != c.code || !strings.Contains(r.Stderr, c.want) {
			t.Errorf("room %q: exit %d, %q; want %d and %q", c.args, r.Code, r.Stderr, c.code, c.want)
		}
	}
}

// Every command of the starter is named in its product's page.
func TestCommandsAreDocumented(t *testing.T) { clitest.Documented(t, newRootCommand, "docs/admit.md") }
