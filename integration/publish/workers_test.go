package integration

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/edgeflow/edgeflow/internal/devstack"
)

// TestWorkerProcessHealthAndGracefulStop runs a real worker pool process: it
// reports healthy once polling, and on SIGINT stops cleanly with exit 0.
func TestWorkerProcessHealthAndGracefulStop(t *testing.T) {
	startWorkers(t) // creates the test buckets
	root, err := devstack.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "compress")
	build := exec.Command("go", "build", "-o", bin, "./workers/compress")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	port, err := devstack.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	health := fmt.Sprintf("127.0.0.1:%d", port)
	var logs strings.Builder
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(),
		"TEMPORAL_ADDRESS="+env.Temporal.HostPort, "S3_ENDPOINT="+env.MinIO.Endpoint,
		"S3_ACCESS_KEY="+env.MinIO.AccessKey, "S3_SECRET_KEY="+env.MinIO.SecretKey,
		"BUCKET_FILES="+buckets.Files, "BUCKET_MIRROR="+buckets.Mirror, "BUCKET_META="+buckets.Meta,
		"BUCKET_MIRROR_META="+buckets.MirrorMeta, "BUCKET_INCOMING="+buckets.Incoming,
		"HEALTH_ADDR="+health, "TASK_QUEUE=it-health-check")
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()

	var status map[string]any
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get("http://" + health + "/healthz")
		if err == nil {
			json.NewDecoder(resp.Body).Decode(&status)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("worker never healthy: %v %v\n%s", status, err, logs.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	if status["temporal"] != "ok" || status["taskQueue"] != "it-health-check" {
		t.Errorf("health: %v", status)
	}

	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("worker exited with %v after SIGINT\n%s", err, logs.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("worker still running 30s after SIGINT\n%s", logs.String())
	}
	if !strings.Contains(logs.String(), "stopped") {
		t.Errorf("no stop in the worker's log:\n%s", logs.String())
	}
}
