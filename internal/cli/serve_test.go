package cli

import (
	"context"
	"errors"
	"flag"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// The exit codes every server command shares, from a real process: the
// test binary runs itself with the body to serve.
func TestServeExitCodes(t *testing.T) {
	if body := os.Getenv("CLI_SERVE_BODY"); body != "" {
		Serve("demo", func(context.Context, []string, io.Writer, func(string)) error {
			switch body {
			case "help":
				return flag.ErrHelp
			case "fail":
				return errors.New("the store refused the credentials")
			}
			return nil
		})
		os.Exit(0)
	}
	for _, c := range []struct {
		body   string
		code   int
		stderr string
	}{
		{"done", 0, ""},
		{"help", ExitUsage, ""},
		{"fail", ExitFailed, "demo: the store refused the credentials"},
	} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestServeExitCodes$")
		cmd.Env = append(os.Environ(), "CLI_SERVE_BODY="+c.body)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		err := cmd.Run()
		code := 0
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			code = exit.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if code != c.code || !strings.Contains(stderr.String(), c.stderr) {
			t.Errorf("%s: exit %d, stderr %q; want %d and %q", c.body, code, stderr.String(), c.code, c.stderr)
		}
	}
}
