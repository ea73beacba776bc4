package integration

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/edgeflow/edgeflow/internal/devstack"
	"github.com/edgeflow/edgeflow/internal/testenv"
)

// One trace spans a whole publish, across processes: the starter's span,
// the PublishVersion workflow and its ProcessBatch child, the activities
// of both worker pools (publish and compress, each its own process), and
// the edge request that serves the result. Every process exports by OTLP
// to a collector in this test, configured by the standard OTEL_* variables
// only, as an operator would.
func TestOneTraceSpansAWholePublish(t *testing.T) {
	setUpStack(t)
	collector := &otlpCollector{}
	srv := httptest.NewServer(collector)
	defer srv.Close()
	otel := []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + srv.URL, "OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf", "OTEL_BSP_SCHEDULE_DELAY=100"}

	npm.Add("traced", "1.0.0", demoTarball("1.0.0", demoCSS))
	dir := writeCatalog(t, demoPackage("traced"))
	bins := buildBinaries(t, "./workers/publish", "./workers/compress", "./cmd/edge")
	stack := append(os.Environ(), otel...)
	stack = append(stack, "TEMPORAL_ADDRESS="+env.Temporal.HostPort, "S3_ENDPOINT="+env.MinIO.Endpoint,
		"S3_ACCESS_KEY="+env.MinIO.AccessKey, "S3_SECRET_KEY="+env.MinIO.SecretKey,
		"BUCKET_FILES="+buckets.Files, "BUCKET_MIRROR="+buckets.Mirror, "BUCKET_META="+buckets.Meta,
		"BUCKET_MIRROR_META="+buckets.MirrorMeta, "BUCKET_INCOMING="+buckets.Incoming,
		"NPM_REGISTRY="+npm.URL, "CATALOG_DIR="+dir, "HEALTH_ADDR=127.0.0.1:0", "EDGE_ADDR=127.0.0.1:0", "EDGE_METRICS_ADDR=127.0.0.1:0")
	for _, name := range []string{"publish", "compress"} {
		runProcess(t, filepath.Join(bins, name), stack)
	}
	edgeLog := runProcess(t, filepath.Join(bins, "edge"), stack)
	var edgeURL string
	listening := regexp.MustCompile(`msg="edge listening" .*?addr=(127\.0\.0\.1:\d+)`)
	eventually(t, 30*time.Second, "the edge listens", func() (bool, string) {
		if m := listening.FindStringSubmatch(edgeLog.String()); m != nil {
			edgeURL = "http://" + m[1]
			return true, ""
		}
		return false, edgeLog.String()
	})

	cmd := exec.Command(starter(t, "publish"), "--package", "traced", "--version", "1.0.0", "--catalog", dir, "--check-edge", edgeURL)
	cmd.Env = append(slices.Clip(stack), "OTEL_SERVICE_NAME=") // the starter names itself
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("publish: %v\n%s%s", err, stdout.String(), stderr.String())
	}
	if !strings.Contains(stdout.String(), "serves traced@1.0.0") {
		t.Errorf("the starter did not check the edge: %s", stdout.String())
	}
	m := regexp.MustCompile(`(?m)^trace ([0-9a-f]{32})$`).FindStringSubmatch(stderr.String())
	if m == nil {
		t.Fatalf("the starter printed no trace id: %s", stderr.String())
	}
	traceID := m[1]

	// What each process did, by service and span name, all in that trace.
	want := []string{
		"edgeflow-publish-starter publish traced@1.0.0",
		"edgeflow-publish-starter StartWorkflow:PublishVersion",
		"edgeflow-publish RunWorkflow:PublishVersion",
		"edgeflow-publish RunActivity:Download",
		"edgeflow-publish RunWorkflow:ProcessBatch",
		"edgeflow-compress RunActivity:ProcessBatch",
		"edgeflow-publish RunActivity:Commit",
		"edgeflow-publish-starter HTTP GET",
		"edgeflow-edge edge GET",
	}
	eventually(t, 30*time.Second, "every process's spans reach the collector in one trace", func() (bool, string) {
		got := collector.inTrace(traceID)
		var missing []string
		for _, w := range want {
			if !got[w] {
				missing = append(missing, w)
			}
		}
		// Should spans be missing: whether they arrived in another trace
		// or not at all.
		var elsewhere []string
		for _, s := range collector.all() {
			if s.traceID != traceID && len(elsewhere) < 12 {
				elsewhere = append(elsewhere, s.service+" "+s.name+" in "+s.traceID)
			}
		}
		return len(missing) == 0, fmt.Sprintf("missing %q; the trace has %q; %d spans in all, elsewhere %q", missing, keys(got), len(collector.all()), elsewhere)
	})
	// Nothing of this publish lands in another trace.
	for _, s := range collector.all() {
		if s.workflowID != "" && strings.HasPrefix(s.workflowID, "publish/traced@1.0.0") && s.traceID != traceID {
			t.Errorf("%s %s of %s in trace %s, not the starter's %s", s.service, s.name, s.workflowID, s.traceID, traceID)
		}
	}
	// The root is the starter's span: every other span has a parent.
	for _, s := range collector.all() {
		if s.traceID == traceID && s.parent == "" && s.name != "publish traced@1.0.0" {
			t.Errorf("a second root in the trace: %s %s", s.service, s.name)
		}
	}
}

// otlpCollector receives OTLP/HTTP trace exports (protobuf) and keeps the spans.
type otlpCollector struct {
	mu    sync.Mutex
	spans []collectedSpan
}

type collectedSpan struct {
	service, name, traceID, parent, workflowID string
}

func (c *otlpCollector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		gz, err := gzip.NewReader(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = gz
	}
	data, err := io.ReadAll(body)
	var req coltracepb.ExportTraceServiceRequest
	if err == nil {
		err = proto.Unmarshal(data, &req)
	}
	if err != nil || r.URL.Path != "/v1/traces" {
		http.Error(w, fmt.Sprintf("%s: %v", r.URL.Path, err), http.StatusBadRequest)
		return
	}
	c.mu.Lock()
	for _, rs := range req.ResourceSpans {
		service := ""
		for _, a := range rs.GetResource().GetAttributes() {
			if a.Key == "service.name" {
				service = a.GetValue().GetStringValue()
			}
		}
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				cs := collectedSpan{service: service, name: s.Name, traceID: fmt.Sprintf("%x", s.TraceId)}
				if len(s.ParentSpanId) > 0 && !bytes.Equal(s.ParentSpanId, make([]byte, 8)) {
					cs.parent = fmt.Sprintf("%x", s.ParentSpanId)
				}
				for _, a := range s.Attributes {
					if a.Key == "temporalWorkflowID" {
						cs.workflowID = a.GetValue().GetStringValue()
					}
				}
				c.spans = append(c.spans, cs)
			}
		}
	}
	c.mu.Unlock()
	out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

func (c *otlpCollector) all() []collectedSpan {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.spans)
}

// inTrace is "service name" of every span in trace id.
func (c *otlpCollector) inTrace(id string) map[string]bool {
	got := map[string]bool{}
	for _, s := range c.all() {
		if s.traceID == id {
			got[s.service+" "+s.name] = true
		}
	}
	return got
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// buildBinaries builds the packages (paths from the repo root) into a
// temporary directory, named after their folders.
func buildBinaries(t testing.TB, pkgs ...string) string {
	t.Helper()
	root, err := devstack.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	build := exec.Command("go", append([]string{"build", "-o", dir + "/"}, pkgs...)...)
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build %v: %v\n%s", pkgs, err, out)
	}
	return dir
}

// runProcess starts bin with env until the test ends, then interrupts it
// (so it flushes its spans) and waits; its output is returned as it grows,
// and shown if the test fails.
func runProcess(t testing.TB, bin string, env []string) *testenv.SyncBuffer {
	t.Helper()
	logs, _ := runProcessPID(t, bin, env)
	return logs
}

// runProcessPID is runProcess, also returning the process's id.
func runProcessPID(t testing.TB, bin string, env []string) (*testenv.SyncBuffer, int) {
	t.Helper()
	logs := &testenv.SyncBuffer{}
	cmd := exec.Command(bin)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGINT)
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("%s log:\n%s", filepath.Base(bin), logs.String())
		}
	})
	return logs, cmd.Process.Pid
}
