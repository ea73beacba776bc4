// Package cli is what every starter shares: exit codes, human or JSON output,
// Web UI links, and progress: a live bar on a terminal, plain periodic lines
// elsewhere, with rates that start only once they mean something.
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

// Exit codes, the same for every starter.
const (
	ExitOK          = 0
	ExitFailed      = 1 // the workflow or check failed
	ExitUsage       = 2 // bad flags or input
	ExitUnavailable = 3 // Temporal or a store could not be reached
)

// Exit prints a message to stderr and exits with code (after AtExit's work).
func Exit(code int, format string, args ...any) {
	fmt.Fprintf(os.Stderr, format+"\n", args...)
	Finish(code)
}

var atExit []func()

// AtExit registers f to run before Exit or Finish ends the process (the
// last registered first): flushing spans, say.
func AtExit(f func()) { atExit = append(atExit, f) }

// Finish runs AtExit's work and exits with code.
func Finish(code int) {
	for i := len(atExit) - 1; i >= 0; i-- {
		atExit[i]()
	}
	os.Exit(code)
}

// Trace starts this starter's trace when tracing is on (the OTEL_*
// variables, internal/tracing): a root span named span, which every
// workflow, child and activity it starts joins, and which Exit and Finish
// end and flush. Off, it returns ctx as is.
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
