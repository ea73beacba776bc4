// Package cli is what every starter shares: exit codes, human or JSON output,
// Web UI links and a live progress line.
package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/edgeflow/edgeflow/internal/config"
)

// Exit codes, the same for every starter.
const (
	ExitOK          = 0
	ExitFailed      = 1 // the workflow or check failed
	ExitUsage       = 2 // bad flags or input
	ExitUnavailable = 3 // Temporal or a store could not be reached
)

// Exit prints a message to stderr and exits with code.
func Exit(code int, format string, args ...any) {
	fmt.Fprintf(os.Stderr, format+"\n", args...)
	os.Exit(code)
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

// Progress draws a single updating line: done/total, rate and ETA.
type Progress struct {
	Out     io.Writer
	Label   string
	start   time.Time
	started bool
}

// Update redraws the line; extra is appended as is.
func (p *Progress) Update(done, total int, extra string) {
	if !p.started {
		p.start, p.started = time.Now(), true
	}
	elapsed := time.Since(p.start).Seconds()
	rate := 0.0
	if elapsed > 0 {
		rate = float64(done) / elapsed
	}
	eta := "--"
	if rate > 0 && total > done {
		eta = (time.Duration(float64(total-done)/rate) * time.Second).Round(time.Second).String()
	}
	bar := ""
	if total > 0 {
		const width = 24
		filled := done * width / total
		bar = "[" + strings.Repeat("#", filled) + strings.Repeat(".", width-filled) + "] "
	}
	fmt.Fprintf(p.Out, "\r\033[K%s %s%d/%d  %.1f/s  ETA %s  %s", p.Label, bar, done, total, rate, eta, extra)
}

// Done ends the line.
func (p *Progress) Done() { fmt.Fprintln(p.Out) }
