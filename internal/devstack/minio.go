package devstack

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"time"
)

var healthClient = &http.Client{Timeout: 2 * time.Second}

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

// StartMinIO starts MinIO on DataDir and waits until it serves. Ports it
// chooses itself are chosen again if the server cannot bind them.
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
	retry := o.Port == 0 || o.ConsolePort == 0
	return startServer(ctx, "minio", retry, func() (*MinIO, error) { return startMinIOOnce(ctx, o) })
}

func startMinIOOnce(ctx context.Context, o MinIOOptions) (*MinIO, error) {
	var err error
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
			return nil, p.failed("minio on %s exited during start: %v", endpoint, err)
		}
		// "cluster" answers 200 only once the object layer is initialised; "live"
		// answers earlier, and requests then fail with XMinioServerNotInitialized.
		resp, err := healthClient.Get("http://" + endpoint + "/minio/health/cluster")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				if !listensOn(p.cmd.Process.Pid, o.Port) {
					return nil, p.failed("another process answers on %s, the port minio was to bind", endpoint)
				}
				return m, nil
			}
		}
		if time.Now().After(deadline) {
			_ = p.Stop(5 * time.Second)
			return nil, fmt.Errorf("minio at %s not ready after 60s\n--- its last log lines ---\n%s", endpoint, p.log.String())
		}
		select {
		case <-ctx.Done():
			_ = p.Stop(5 * time.Second)
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}
