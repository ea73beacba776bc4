package replaytest

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/temporalproto"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"
)

// RecordEnv names the Temporal dev server TestRecordHistories records on.
const RecordEnv = "EDGEFLOW_RECORD_HISTORY"

// Dial connects to the dev server RecordEnv names, until the test ends, or
// skips the test when RecordEnv is unset: recording is done by hand, after
// an intended change to workflow code.
func Dial(t testing.TB) client.Client {
	t.Helper()
	addr := os.Getenv(RecordEnv)
	if addr == "" {
		t.Skip("set " + RecordEnv + " to a Temporal dev server address to record histories")
	}
	quiet := log.NewStructuredLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	c, err := client.Dial(client.Options{HostPort: addr, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// StartWorker starts a worker on queue with what register registers on it,
// stopped when the test ends (before the client Dial gave is closed).
func StartWorker(t testing.TB, c client.Client, queue string, register func(worker.Worker)) {
	t.Helper()
	w := worker.New(c, queue, worker.Options{})
	register(w)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
}

// WriteHistory writes the history of run runID of workflow id (its latest
// run when runID is empty) to testdata/file, as the JSON Load and the
// replayer read.
func WriteHistory(t testing.TB, ctx context.Context, c client.Client, file, id, runID string) {
	t.Helper()
	iter := c.GetWorkflowHistory(ctx, id, runID, false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	hist := &historypb.History{}
	for iter.HasNext() {
		ev, err := iter.Next()
		if err != nil {
			t.Fatalf("history of %s: %v", id, err)
		}
		hist.Events = append(hist.Events, ev)
	}
	data, err := temporalproto.CustomJSONMarshalOptions{Indent: " "}.Marshal(hist)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll("testdata", 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("testdata", file)
	if err := os.WriteFile(path, append(data, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: %d events of %s", path, len(hist.Events), id)
}
