package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// demo is a small tree: a group with commands that succeed, fail, fail
// with a code, and take flags, and a nested group.
func demo(got *[]string) *cobra.Command {
	root := Group(&cobra.Command{Use: "demo", Short: "A demo", Example: "  demo ok"})
	root.PersistentFlags().Bool("json", false, "print JSON")
	ok := &cobra.Command{Use: "ok", Short: "Succeeds", Example: "  demo ok", Args: NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			j, _ := c.Flags().GetBool("json")
			e, _ := c.Flags().GetString("s3-endpoint")
			*got = append(*got, fmt.Sprintf("json=%v endpoint=%s", j, e))
			return nil
		}}
	ok.Flags().String("s3-endpoint", "", "endpoint")
	ok.Flags().Int("count", 0, "a count")
	fail := &cobra.Command{Use: "fail", Short: "Fails", Example: "  demo fail", Args: NoArgs,
		RunE: func(*cobra.Command, []string) error { return errors.New("the store refused the credentials") }}
	unavailable := &cobra.Command{Use: "unavailable", Short: "Cannot reach Temporal", Example: "  demo unavailable",
		RunE: func(*cobra.Command, []string) error { return Fail(ExitUnavailable, "demo: Temporal unreachable") }}
	quiet := &cobra.Command{Use: "quiet", Short: "Fails having said why", Example: "  demo quiet",
		RunE: func(*cobra.Command, []string) error { return Code(ExitFailed) }}
	one := &cobra.Command{Use: "one NAME", Short: "Takes one name", Example: "  demo one x", Args: Args(1, 1, "one name"),
		RunE: func(*cobra.Command, []string) error { return nil }}
	event := Group(&cobra.Command{Use: "event", Short: "Events", Example: "  demo event add"})
	event.AddCommand(&cobra.Command{Use: "add", Short: "Adds", Example: "  demo event add", RunE: func(*cobra.Command, []string) error { return nil }})
	root.AddCommand(ok, fail, unavailable, quiet, one, event)
	return root
}

func run(args ...string) (int, string, string, []string) {
	var got []string
	var out, errOut bytes.Buffer
	code := Run(context.Background(), demo(&got), args, &out, &errOut)
	return code, out.String(), errOut.String(), got
}

func TestRunExitCodes(t *testing.T) {
	for _, c := range []struct {
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{[]string{"ok"}, ExitOK, "", ""},
		{[]string{"--help"}, ExitOK, "Usage:\n  demo [command]\n", ""},
		{[]string{"event", "--help"}, ExitOK, "Usage:\n  demo event [command]\n", ""},
		{[]string{"one", "--help"}, ExitOK, "Usage:\n  demo one NAME [flags]\n", ""},
		{[]string{"ok", "-h"}, ExitOK, "--s3-endpoint", ""},
		{[]string{"--version"}, ExitOK, "demo " + Version(), ""},
		{[]string{"completion", "bash"}, ExitOK, "bash completion", ""},
		{[]string{"fail"}, ExitFailed, "", "demo fail: the store refused the credentials"},
		{[]string{"unavailable"}, ExitUnavailable, "", "demo: Temporal unreachable"},
		{[]string{"quiet"}, ExitFailed, "", ""},
		{[]string{"ok", "--nope"}, ExitUsage, "", "unknown flag: --nope"},
		{[]string{"ok", "--count", "many"}, ExitUsage, "", `invalid argument "many"`},
		{[]string{"ok", "extra"}, ExitUsage, "", `unexpected arguments ["extra"]`},
		{[]string{"one"}, ExitUsage, "", "want one name"},
		{[]string{"one", "a", "b"}, ExitUsage, "", "want one name"},
		{nil, ExitUsage, "", "a command is required"},
		{[]string{"fial"}, ExitUsage, "", `unknown command "fial"; did you mean fail?`},
		{[]string{"event"}, ExitUsage, "", "demo event: a command is required"},
		{[]string{"event", "drop"}, ExitUsage, "", `demo event: unknown command "drop"`},
	} {
		code, out, errOut, _ := run(c.args...)
		if code != c.code || !strings.Contains(out, c.stdout) || !strings.Contains(errOut, c.stderr) {
			t.Errorf("demo %q: exit %d, stdout %.300q, stderr %q; want %d, %q, %q", c.args, code, out, errOut, c.code, c.stdout, c.stderr)
		}
	}
}

// Flags written the way Go's flag package took them (-json, -name=value)
// still work, while one-letter flags and negative values are left alone.
func TestSingleDashLongFlags(t *testing.T) {
	for _, args := range [][]string{
		{"ok", "-json", "-s3-endpoint", "h:9000"},
		{"ok", "-json=true", "-s3-endpoint=h:9000"},
		{"-json", "ok", "--s3-endpoint", "h:9000"},
	} {
		code, _, errOut, got := run(args...)
		if code != 0 || len(got) != 1 || got[0] != "json=true endpoint=h:9000" {
			t.Errorf("demo %q: exit %d %q, ran with %q", args, code, errOut, got)
		}
	}
	if code, _, _, _ := run("ok", "-count", "-1"); code != 0 {
		t.Errorf("-count -1: exit %d", code)
	}
	if code, _, errOut, _ := run("ok", "-nope"); code != ExitUsage || !strings.Contains(errOut, "unknown shorthand flag: 'n'") {
		t.Errorf("-nope: exit %d, %q: not a flag, so left to pflag to refuse", code, errOut)
	}
}

// A command's deferred calls run before the process exits, and AtExit's
// work after them: from a real process, since exiting is what is checked.
func TestExecuteExitsAfterDeferredCalls(t *testing.T) {
	if os.Getenv("CLI_EXECUTE_DEMO") == "1" {
		os.Args = []string{"demo"}
		root := &cobra.Command{Use: "demo", Short: "A demo", Example: "  demo", Args: NoArgs,
			RunE: func(*cobra.Command, []string) error {
				AtExit(func() { fmt.Fprintln(os.Stderr, "spans flushed") })
				defer fmt.Fprintln(os.Stderr, "client closed")
				return Fail(ExitUnavailable, "demo: Temporal unreachable")
			}}
		Execute(root)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestExecuteExitsAfterDeferredCalls$")
	cmd.Env = append(os.Environ(), "CLI_EXECUTE_DEMO=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != ExitUnavailable {
		t.Fatalf("exit %v, want %d\n%s", err, ExitUnavailable, stderr.String())
	}
	if want := "client closed\ndemo: Temporal unreachable\nspans flushed\n"; stderr.String() != want {
		t.Errorf("stderr %q, want %q", stderr.String(), want)
	}
}

func TestVersionOf(t *testing.T) {
	info := &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Path: "github.com/edgeflow/edgeflow", Version: "v1.4.0"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "3f2a9c1"}, {Key: "vcs.modified", Value: "true"}, {Key: "vcs.time", Value: "2026-05-01T10:00:00Z"}}}
	if got, want := versionOf(info), "v1.4.0, commit 3f2a9c1 (modified) of 2026-05-01T10:00:00Z, go1.26.0"; got != want {
		t.Errorf("versionOf = %q, want %q", got, want)
	}
	if got, want := versionOf(&debug.BuildInfo{GoVersion: "go1.26.0"}), "(devel), commit unknown, go1.26.0"; got != want {
		t.Errorf("without VCS information: %q, want %q", got, want)
	}
}
