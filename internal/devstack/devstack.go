// Package devstack starts the local parts the system runs on — the Temporal
// dev server and MinIO — as child processes, for `make run` and for
// integration tests (which use free ports so they never collide with a
// running stack). The binaries are the pinned ones `make tools` builds into
// .tools/bin, or ones already on PATH.
package devstack

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"go.temporal.io/sdk/client"
)

// RepoRoot finds the module root by walking up from the working directory.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("go.mod not found above the working directory")
		}
		dir = parent
	}
}

// FindTool locates a dev tool: $EDGEFLOW_<NAME>_BIN, then the repo's
// .tools/bin, then PATH.
func FindTool(name string) (string, error) {
	envName := "EDGEFLOW_" + strings.ToUpper(name) + "_BIN"
	if p := os.Getenv(envName); p != "" {
		return p, nil
	}
	if root, err := RepoRoot(); err == nil {
		p := filepath.Join(root, ".tools", "bin", name)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("%s not found in .tools/bin or on PATH: run `make tools` (or set %s)", name, envName)
}

// FreePort asks the kernel for a free TCP port on loopback.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func freePortOr(p int) (int, error) {
	if p != 0 {
		return p, nil
	}
	return FreePort()
}

var healthClient = &http.Client{Timeout: 2 * time.Second}

// Process is a started child process.
type Process struct {
	Name string
	cmd  *exec.Cmd
	done chan error
}

func start(name string, cmd *exec.Cmd, logs io.Writer) (*Process, error) {
	if logs == nil {
		logs = io.Discard
	}
	cmd.Stdout = logs
	cmd.Stderr = logs
	// Own process group: Ctrl-C in a terminal reaches us first, and we stop
	// children in order instead of all at once.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &Process{Name: name, cmd: cmd, done: make(chan error, 1)}
	go func() { p.done <- cmd.Wait() }()
	return p, nil
}

// Exited reports, without blocking, whether the process has ended.
func (p *Process) Exited() (bool, error) {
	select {
	case err := <-p.done:
		p.done <- err
		return true, err
	default:
		return false, nil
	}
}

// Stop interrupts the process and waits for it, killing it after grace.
func (p *Process) Stop(grace time.Duration) error {
	if p == nil || p.cmd.Process == nil {
		return nil
	}
	if exited, _ := p.Exited(); exited {
		return nil
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGINT)
	select {
	case err := <-p.done:
		p.done <- err // a second Stop or Exited still sees the end
		return nil
	case <-time.After(grace):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		p.done <- <-p.done
		return fmt.Errorf("%s did not stop within %s and was killed", p.Name, grace)
	}
}

// TemporalOptions configures the dev server. Zero ports mean free ports.
type TemporalOptions struct {
	Bin       string // default FindTool("temporal")
	DBFile    string // empty: in memory
	IP        string // default 127.0.0.1
	Port      int
	UIPort    int
	Headless  bool // no Web UI
	Namespace string
	Logs      io.Writer
}

// Temporal is a running dev server.
type Temporal struct {
	*Process
	HostPort  string
	UIURL     string
	Namespace string
}

// StartTemporal starts the dev server, waits until it serves, and registers
// the search attributes.
func StartTemporal(ctx context.Context, o TemporalOptions) (*Temporal, error) {
	var err error
	if o.Bin == "" {
		if o.Bin, err = FindTool("temporal"); err != nil {
			return nil, err
		}
	}
	if o.IP == "" {
		o.IP = "127.0.0.1"
	}
	if o.Namespace == "" {
		o.Namespace = "default"
	}
	if o.Port, err = freePortOr(o.Port); err != nil {
		return nil, err
	}
	httpPort, err := FreePort()
	if err != nil {
		return nil, err
	}
	metricsPort, err := FreePort()
	if err != nil {
		return nil, err
	}
	args := []string{"server", "start-dev",
		"--ip", o.IP, "--port", strconv.Itoa(o.Port),
		"--http-port", strconv.Itoa(httpPort), "--metrics-port", strconv.Itoa(metricsPort),
		"--namespace", o.Namespace, "--log-level", "warn",
	}
	if o.DBFile != "" {
		args = append(args, "--db-filename", o.DBFile)
	}
	if o.Headless {
		args = append(args, "--headless")
	} else {
		if o.UIPort, err = freePortOr(o.UIPort); err != nil {
			return nil, err
		}
		args = append(args, "--ui-port", strconv.Itoa(o.UIPort))
	}
	attrs, err := SearchAttributes()
	if err != nil {
		return nil, err
	}
	for _, name := range slices.Sorted(maps.Keys(attrs)) {
		args = append(args, "--search-attribute", name+"="+attrs[name])
	}
	p, err := start("temporal", exec.Command(o.Bin, args...), o.Logs)
	if err != nil {
		return nil, err
	}
	t := &Temporal{Process: p, HostPort: net.JoinHostPort(o.IP, strconv.Itoa(o.Port)), Namespace: o.Namespace}
	if !o.Headless {
		t.UIURL = fmt.Sprintf("http://%s:%d", o.IP, o.UIPort)
	}
	if err := t.waitReady(ctx); err != nil {
		_ = p.Stop(5 * time.Second)
		return nil, err
	}
	return t, nil
}

func (t *Temporal) waitReady(ctx context.Context) error {
	deadline := time.Now().Add(90 * time.Second)
	var last error
	for time.Now().Before(deadline) {
		if exited, err := t.Exited(); exited {
			return fmt.Errorf("temporal dev server exited during start: %v", err)
		}
		c, err := client.Dial(client.Options{HostPort: t.HostPort, Namespace: t.Namespace, Logger: quietLogger{}})
		if err == nil {
			_, err = c.CheckHealth(ctx, &client.CheckHealthRequest{})
			c.Close()
			if err == nil {
				return nil
			}
		}
		last = err
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	return fmt.Errorf("temporal dev server at %s not ready after 90s: %v", t.HostPort, last)
}

// MinIOOptions configures the MinIO server. Zero ports mean free ports.
type MinIOOptions struct {
	Bin         string
	DataDir     string
	IP          string
	Port        int
	ConsolePort int
	AccessKey   string
	SecretKey   string
	Logs        io.Writer
}

// MinIO is a running MinIO server.
type MinIO struct {
	*Process
	Endpoint   string // host:port
	ConsoleURL string
	AccessKey  string
	SecretKey  string
}

// StartMinIO starts MinIO on DataDir and waits until it is live.
func StartMinIO(ctx context.Context, o MinIOOptions) (*MinIO, error) {
	var err error
	if o.Bin == "" {
		if o.Bin, err = FindTool("minio"); err != nil {
			return nil, err
		}
	}
	if o.DataDir == "" {
		return nil, errors.New("minio: DataDir is required")
	}
	if o.IP == "" {
		o.IP = "127.0.0.1"
	}
	if len(o.SecretKey) < 8 {
		return nil, errors.New("minio: the secret key must be at least 8 characters")
	}
	if o.Port, err = freePortOr(o.Port); err != nil {
		return nil, err
	}
	if o.ConsolePort, err = freePortOr(o.ConsolePort); err != nil {
		return nil, err
	}
	endpoint := net.JoinHostPort(o.IP, strconv.Itoa(o.Port))
	cmd := exec.Command(o.Bin, "server", "--quiet", "--address", endpoint,
		"--console-address", net.JoinHostPort(o.IP, strconv.Itoa(o.ConsolePort)), o.DataDir)
	cmd.Env = append(os.Environ(),
		"MINIO_ROOT_USER="+o.AccessKey, "MINIO_ROOT_PASSWORD="+o.SecretKey,
		"MINIO_BROWSER_REDIRECT=off", "MINIO_UPDATE=off", "MINIO_CALLHOME_ENABLE=off")
	p, err := start("minio", cmd, o.Logs)
	if err != nil {
		return nil, err
	}
	m := &MinIO{Process: p, Endpoint: endpoint, AccessKey: o.AccessKey, SecretKey: o.SecretKey,
		ConsoleURL: fmt.Sprintf("http://%s:%d", o.IP, o.ConsolePort)}
	deadline := time.Now().Add(60 * time.Second)
	for {
		if exited, err := p.Exited(); exited {
			return nil, fmt.Errorf("minio exited during start: %v", err)
		}
		// "cluster" answers 200 only once the object layer is initialised; "live"
		// answers earlier, and requests then fail with XMinioServerNotInitialized.
		resp, err := healthClient.Get("http://" + endpoint + "/minio/health/cluster")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return m, nil
			}
		}
		if time.Now().After(deadline) {
			_ = p.Stop(5 * time.Second)
			return nil, fmt.Errorf("minio at %s not ready after 60s", endpoint)
		}
		select {
		case <-ctx.Done():
			_ = p.Stop(5 * time.Second)
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}
