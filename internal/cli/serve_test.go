package cli

import (
	"context"
	"errors"
	"flag"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
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

// A server shut down by its context lets the request in flight finish,
// then ServeHTTP returns without an error.
func TestServeHTTPDrainsInFlightRequests(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{})
	server := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		close(started)
		time.Sleep(200 * time.Millisecond)
		_, _ = io.WriteString(w, "done")
	})}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	answer := make(chan string, 1)
	err = ServeHTTP(ctx, server, func() error { return server.Serve(ln) }, 5*time.Second,
		slog.New(slog.NewTextHandler(io.Discard, nil)), func() {
			go func() {
				resp, err := http.Get("http://" + ln.Addr().String())
				if err != nil {
					answer <- err.Error()
					return
				}
				defer resp.Body.Close()
				body, _ := io.ReadAll(resp.Body)
				answer <- string(body)
			}()
			go func() { <-started; cancel() }()
		})
	if err != nil {
		t.Fatalf("ServeHTTP: %v", err)
	}
	if got := <-answer; got != "done" {
		t.Fatalf("the request in flight got %q, want it to finish", got)
	}
}
