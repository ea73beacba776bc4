// Package cli is what every binary and starter shares: one command tree
// shape (cobra: help with examples, each subcommand with its own flags,
// --version, completion, exit codes), human or JSON output, Web UI links,
// and progress: a live bar on a terminal, plain periodic lines elsewhere,
// with rates that start only once they mean something.
package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/edgeflow/edgeflow/internal/config"
	"github.com/edgeflow/edgeflow/internal/tracing"
)

var atExit []func()

// AtExit registers f to run once the command has returned, after its
// deferred calls and before the process exits (the last registered
// first): flushing spans, say. Run runs them.
func AtExit(f func()) { atExit = append(atExit, f) }

func runAtExit() {
	for i := len(atExit) - 1; i >= 0; i-- {
		atExit[i]()
	}
	atExit = nil
}

// Trace starts this starter's trace when tracing is on (the OTEL_*
// variables, internal/tracing): a root span named span, which every
// workflow, child and activity it starts joins, and which is ended and
// flushed once the command has returned. Off, it returns ctx as is.
func Trace(ctx context.Context, service, span string, attrs ...attribute.KeyValue) context.Context {
	shutdown, err := tracing.Setup(ctx, service)
	if err != nil {
		fmt.Fprintf(os.Stderr, "warning: tracing off: %v\n", err)
		return ctx
	}
	ctx, end := tracing.Start(ctx, span, attrs...)
	AtExit(func() {
		end()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = shutdown(sctx)
	})
	if id := tracing.TraceID(ctx); id != "" {
		fmt.Fprintf(os.Stderr, "trace %s\n", id)
	}
	return ctx
}

// PrintJSON writes v as indented JSON to stdout.
func PrintJSON(v any) {
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

// UIURL is the Web UI base URL (env TEMPORAL_UI_URL).
func UIURL() string {
	return strings.TrimRight(config.Env("TEMPORAL_UI_URL", "http://127.0.0.1:8233"), "/")
}

// WorkflowURL links to a run in the Web UI.
func WorkflowURL(namespace, workflowID string) string {
	return fmt.Sprintf("%s/namespaces/%s/workflows/%s", UIURL(), url.PathEscape(namespace), url.PathEscape(workflowID))
}
