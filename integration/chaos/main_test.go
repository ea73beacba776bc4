//go:build chaos

// Package chaos runs every product on the real stack while faults are
// injected — worker processes killed with SIGKILL, the Temporal dev server
// restarted, S3 requests failed by a proxy, a store taken away — and then
// checks that nothing was lost. It writes the figures to docs/chaos/report.md
// and prints one line per product. `make chaos` runs it; `make test` does
// not (build tag chaos), so the default run stays short.
package chaos

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"

	"github.com/edgeflow/edgeflow/internal/devstack"
	"github.com/edgeflow/edgeflow/internal/objectstore/s3"
	"github.com/edgeflow/edgeflow/internal/testenv"
)

// soak runs longer suites with more data and more faults (CHAOS_SOAK=1, or
// `make chaos SOAK=1`).
var soak = flag.Bool("soak", os.Getenv("CHAOS_SOAK") == "1", "a longer soak: more data, more faults")

// stack is the suite's own stack: a Temporal dev server whose history
// survives its restart (a database file), and two separate MinIO servers,
// the primary store and the mirror, so either can really go away.
type stack struct {
	dir      string
	logs     *os.File
	mu       sync.Mutex
	temporal *devstack.Temporal
	client   client.Client
	primary  *devstack.MinIO
	mirror   *devstack.MinIO
	// primaryStore and mirrorStore reach the servers directly, never
	// through a fault proxy: the checks read what was really stored.
	primaryStore *s3.Store
	mirrorStore  *s3.Store
	bins         map[string]string // binary name → path
}

var env *stack

func TestMain(m *testing.M) {
	flag.Parse()
	var err error
	env, err = startStack()
	if err != nil {
		fmt.Fprintf(os.Stderr, "chaos: %v\n", err)
		os.Exit(1)
	}
	code := m.Run()
	if werr := writeReport(); werr != nil {
		fmt.Fprintf(os.Stderr, "chaos: report: %v\n", werr)
		code = 1
	}
	if !reportClean() {
		code = 1
	}
	if code != 0 {
		fmt.Fprintf(os.Stderr, "chaos: the stack's logs are in %s\n", env.dir)
		env.stop(false)
	} else {
		env.stop(true)
	}
	os.Exit(code)
}

func startStack() (*stack, error) {
	dir, err := os.MkdirTemp("", "edgeflow-chaos-")
	if err != nil {
		return nil, err
	}
	s := &stack{dir: dir}
	if s.logs, err = os.Create(filepath.Join(dir, "stack.log")); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if s.primary, err = devstack.StartMinIO(ctx, devstack.MinIOOptions{DataDir: filepath.Join(dir, "primary"),
		AccessKey: "chaosaccess", SecretKey: "chaossecret1", Logs: s.logs}); err != nil {
		return nil, err
	}
	if s.mirror, err = devstack.StartMinIO(ctx, devstack.MinIOOptions{DataDir: filepath.Join(dir, "mirror"),
		AccessKey: "chaosmirror", SecretKey: "chaossecret2", Logs: s.logs}); err != nil {
		return nil, err
	}
	if s.primaryStore, err = s3.New(s3.Config{Endpoint: s.primary.Endpoint, AccessKey: s.primary.AccessKey, SecretKey: s.primary.SecretKey}); err != nil {
		return nil, err
	}
	if s.mirrorStore, err = s3.New(s3.Config{Endpoint: s.mirror.Endpoint, AccessKey: s.mirror.AccessKey, SecretKey: s.mirror.SecretKey}); err != nil {
		return nil, err
	}
	if s.temporal, err = devstack.StartTemporal(ctx, devstack.TemporalOptions{Headless: true,
		DBFile: filepath.Join(dir, "temporal.db"), Logs: s.logs}); err != nil {
		return nil, err
	}
	if s.client, err = client.Dial(client.Options{HostPort: s.temporal.HostPort,
		Logger: sdklog.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))}); err != nil {
		return nil, err
	}
	if err := s.build(); err != nil {
		return nil, err
	}
	return s, nil
}

// build compiles the real binaries once, into the stack's directory.
func (s *stack) build() error {
	root, err := devstack.RepoRoot()
	if err != nil {
		return err
	}
	s.bins = map[string]string{}
	for name, pkg := range map[string]string{
		"publish": "./workers/publish", "compress": "./workers/compress", "migrate": "./workers/migrate", "edge": "./cmd/edge",
		"admit": "./workers/admit", "gate": "./cmd/gate",
	} {
		out := filepath.Join(s.dir, "bin", name)
		cmd := exec.Command("go", "build", "-o", out, pkg)
		cmd.Dir = root
		if msg, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("go build %s: %v\n%s", pkg, err, msg)
		}
		s.bins[name] = out
	}
	return nil
}

// restartTemporal stops the dev server and starts it again on the same
// port with the same database: every client reconnects, nothing is lost.
func (s *stack) restartTemporal(t testing.TB) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	_, portText, _ := net.SplitHostPort(s.temporal.HostPort)
	port, _ := strconv.Atoi(portText)
	if err := s.temporal.Stop(30 * time.Second); err != nil {
		t.Logf("temporal stop: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var err error
	s.temporal, err = devstack.StartTemporal(ctx, devstack.TemporalOptions{Headless: true, Port: port,
		DBFile: filepath.Join(s.dir, "temporal.db"), Logs: s.logs})
	if err != nil {
		t.Fatalf("restart the temporal dev server on port %d: %v", port, err)
	}
}

func (s *stack) stop(removeData bool) {
	if s.client != nil {
		s.client.Close()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	if s.temporal != nil {
		errs = append(errs, s.temporal.Stop(10*time.Second))
	}
	for _, m := range []*devstack.MinIO{s.primary, s.mirror} {
		if m != nil {
			errs = append(errs, m.Stop(10*time.Second))
		}
	}
	if err := errors.Join(errs...); err != nil {
		fmt.Fprintln(os.Stderr, "chaos: stop:", err)
	}
	if removeData {
		_ = os.RemoveAll(s.dir)
	}
}

// eventually polls check until it reports done, failing the test with its
// last word after the deadline.
func eventually(t testing.TB, within time.Duration, what string, check func() (bool, string)) {
	t.Helper()
	testenv.Eventually(t, within, 250*time.Millisecond, what, check)
}
