package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/edgeflow/edgeflow/internal/cli"
	"github.com/edgeflow/edgeflow/internal/cli/clitest"
	"github.com/edgeflow/edgeflow/internal/testenv"
)

// run is the edge's command line on args, as main runs it.
func run(ctx context.Context, args []string, stderr io.Writer, ready func(string)) error {
	if code := cli.Run(ctx, newRootCommand(stderr, ready), args, io.Discard, stderr); code != cli.ExitOK {
		return fmt.Errorf("exit status %d", code)
	}
	return nil
}

func TestCommandLine(t *testing.T) {
	clitest.Check(t, func() *cobra.Command { return newRootCommand(io.Discard, nil) })
}

// The process wiring needs no store: the stores connect lazily, and neither
// /healthz nor a rejected path touches them. Serving from the buckets is
// covered by internal/publish/edge's tests on a real MinIO.
func TestRunServesHealthAndShutsDownGracefully(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	logs := &testenv.SyncBuffer{}
	addrs := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		// Spelled as scripts wrote them for Go's flag package: one dash, and
		// the ops address's old name.
		done <- run(ctx, []string{"-addr", "127.0.0.1:0", "-metrics-addr", "127.0.0.1:0", "-s3-endpoint", "127.0.0.1:1", "-cache-mib", "8"}, logs, func(addr string) { addrs <- addr })
	}()
	var base string
	select {
	case addr := <-addrs:
		base = "http://" + addr
	case err := <-done:
		t.Fatalf("run ended before listening: %v\n%s", err, logs)
	case <-time.After(60 * time.Second):
		t.Fatalf("not listening after 60s\n%s", logs)
	}

	resp, err := http.Get(base + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != "ok\n" {
		t.Errorf("/healthz: %d %q", resp.StatusCode, body)
	}
	// The edge's path guard is in front of mounted routes too.
	resp, err = http.Get(base + "/ajax/libs/x/1.0.0/..%2f..%2fetc")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("hostile path through the process: %d", resp.StatusCode)
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("shutdown: %v\n%s", err, logs)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("run did not return after cancellation")
	}
	if !strings.Contains(logs.String(), "shutting down") {
		t.Errorf("no shutdown log:\n%s", logs)
	}
	if _, err := http.Get(base + "/healthz"); err == nil {
		t.Error("still serving after shutdown")
	}
}

func TestRunRejectsBadFlags(t *testing.T) {
	cases := map[string][]string{
		"unknown flag":    {"-nope"},
		"extra argument":  {"serve"},
		"bad log level":   {"-log-level", "loud"},
		"negative cache":  {"-cache-mib", "-1"},
		"zero file limit": {"-max-cached-file-kib", "0"},
		"bad address":     {"-addr", "127.0.0.1:notaport"},
		// A wait the server's write deadline would cut short.
		"wait past the write timeout": {"--catalog", "catalog", "--wait-for-publish", "2m", "--write-timeout", "1m"},
		"no starts allowed":           {"--catalog", "catalog", "--on-request-total", "0"},
	}
	for name, args := range cases {
		t.Run(name, func(t *testing.T) {
			err := run(context.Background(), args, io.Discard, nil)
			if err == nil {
				t.Fatalf("run(%q) = %v, want an error", args, err)
			}
		})
	}
}
