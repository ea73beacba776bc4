package main

import (
	"strings"
	"testing"

	"github.com/edgeflow/edgeflow/internal/cli"
	"github.com/edgeflow/edgeflow/internal/cli/clitest"
)

func TestMain(m *testing.M) { clitest.Main(m, "migrate", main) }

// Every command's help exits 0 and lists only its own flags: status's no
// start flags, list's no --follow; unknown flags exit 2.
func TestCommandLine(t *testing.T) {
	clitest.Check(t, newRootCommand)
	r := clitest.Run(newRootCommand, "status", "--help")
	if strings.Contains(r.Stdout, "--source") || !strings.Contains(r.Stdout, "--follow") || !strings.Contains(r.Stdout, "--json") {
		t.Errorf("migrate status --help:\n%s", r.Stdout)
	}
}

// Bad input exits 2 naming the flag, before Temporal is dialled; the old
// one-dash spellings still parse; an unreachable Temporal exits 3.
func TestExitCodes(t *testing.T) {
	nowhere := []string{"--address", "127.0.0.1:1"}
	job := func(extra ...string) []string {
		return append([]string{"start", "--source", "s3://src", "--source-endpoint", "s:9000", "--dest", "s3://dst", "--dest-endpoint", "d:9000"}, extra...)
	}
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"start", "--source", "s3://src", "--source-endpoint", "s:9000", "--dest", "s3://dst", "--dest-endpoint", "d:9000", "--follow", "--detach"}, cli.ExitUsage, "--follow and --detach exclude each other"},
		{[]string{"start", "-source", "ftp://x", "-dest", "s3://dst", "-dest-endpoint", "d:9000", "-json"}, cli.ExitUsage, "--source"},
		{job("--include", "*.js", "--exclude", "a/[b"), cli.ExitUsage, `--exclude "a/[b" (filter rule 2): at character 3: "[" not closed by "]"`},
		{job("--include", "{{x}}"), cli.ExitUsage, `--include "{{x}}" (filter rule 1): at character 1: regular expressions`},
		{job("--min-size", "10q"), cli.ExitUsage, `--min-size: size "10q"`},
		{job("--min-size", "2M", "--max-size", "1M"), cli.ExitUsage, "--min-size 2097152 is above --max-size 1048576"},
		{job("--modified-after", "yesterday"), cli.ExitUsage, `--modified-after: "yesterday": want an RFC 3339 time`},
		{job("--modified-after", "24h", "--modified-before", "48h"), cli.ExitUsage, "is not before --modified-before"},
		{job("--keys", "keys.txt", "--max-size", "1M"), cli.ExitUsage, "--keys: a key list has no sizes or times"},
		{job("--max-bandwidth", "10XB"), cli.ExitUsage, `--max-bandwidth: bandwidth "10XB": want bytes a second`},
		{job("--max-bandwidth", "-1M"), cli.ExitUsage, `--max-bandwidth: bandwidth "-1M": not negative`},
		{job("--max-requests", "-3"), cli.ExitUsage, `--max-requests: requests "-3": not negative`},
		{job("--max-requests", "2.5"), cli.ExitUsage, `--max-requests: requests "2.5": want a whole number`},
		{[]string{"status"}, cli.ExitUsage, "want exactly one JOB"},
		{[]string{"pause", "a", "b"}, cli.ExitUsage, "want exactly one JOB"},
		{[]string{"report", "job-1", "--format", "xml"}, cli.ExitUsage, `--format "xml": use csv or jsonl`},
		{[]string{"list", "--follow"}, cli.ExitUsage, "unknown flag: --follow"},
		{[]string{"list"}, cli.ExitUnavailable, "migrate: connect to Temporal at 127.0.0.1:1"},
		{[]string{"sync", "job-1", "--pause", "--resume"}, cli.ExitUsage, "--pause, --resume, --trigger and --remove exclude each other"},
		{[]string{"sync", "job-1", "--trigger", "--every", "1h"}, cli.ExitUsage, "--trigger controls the Schedule"},
		{[]string{"sync", "job-1", "--every", "1s"}, cli.ExitUsage, "--every 1s: at least 10s"},
		{[]string{"sync", "job-1", "--every", "1h", "--follow"}, cli.ExitUsage, "--every starts no run now"},
		{[]string{"sync", "no/such job"}, cli.ExitUsage, "job id"},
		{[]string{"cutover"}, cli.ExitUsage, "want exactly one JOB"},
		{[]string{"cutover", "job-1"}, cli.ExitUnavailable, "migrate: connect to Temporal at 127.0.0.1:1"},
	} {
		r := clitest.Exec(t, nil, append(c.args, nowhere...)...)
		if r.Code != c.code || !strings.Contains(r.Stderr, c.want) {
			t.Errorf("migrate %q: exit %d, %q; want %d and %q", c.args, r.Code, r.Stderr, c.code, c.want)
		}
	}
	// --json makes the error the one JSON document on stdout.
	r := clitest.Exec(t, nil, "report", "job-1", "--format", "xml", "-json")
	if !strings.HasPrefix(r.Stdout, "{") || !strings.Contains(r.Stdout, `"error"`) {
		t.Errorf("report --json: stdout %q", r.Stdout)
	}
}

// Every command of the starter is named in its product's page.
func TestCommandsAreDocumented(t *testing.T) {
	clitest.Documented(t, newRootCommand, "docs/migrate.md")
}
