package integration

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/edgeflow/edgeflow/internal/devstack"
	"github.com/edgeflow/edgeflow/internal/testenv"
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
	var logs testenv.SyncBuffer
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(),
		"TEMPORAL_ADDRESS="+env.Temporal.HostPort, "S3_ENDPOINT="+env.MinIO.Endpoint,
		"S3_ACCESS_KEY="+env.MinIO.AccessKey, "S3_SECRET_KEY="+env.MinIO.SecretKey,
		"BUCKET_FILES="+buckets.Files, "BUCKET_MIRROR="+buckets.Mirror, "BUCKET_META="+buckets.Meta,
		"BUCKET_MIRROR_META="+buckets.MirrorMeta, "BUCKET_INCOMING="+buckets.Incoming,
		// Port 0: the worker binds a free port itself and logs it, so no
		// other process can take it between choosing and binding.
		"HEALTH_ADDR=127.0.0.1:0", "TASK_QUEUE=it-health-check")
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()

	var health string
	healthAddr := regexp.MustCompile(`msg="worker started".* health=(127\.0\.0\.1:\d+)`)
	eventually(t, 30*time.Second, "the worker logs its health address", func() (bool, string) {
		if m := healthAddr.FindStringSubmatch(logs.String()); m != nil {
			health = m[1]
			return true, ""
		}
		return false, logs.String()
	})
	var status map[string]any
	eventually(t, 30*time.Second, "the worker is healthy", func() (bool, string) {
		resp, err := http.Get("http://" + health + "/healthz")
		if err != nil {
			return false, err.Error()
		}
		defer resp.Body.Close()
		status = nil
		json.NewDecoder(resp.Body).Decode(&status)
		return resp.StatusCode == http.StatusOK, fmt.Sprint(status, "\n", logs.String())
	})
	if status["temporal"] != "ok" || status["taskQueue"] != "it-health-check" {
		t.Errorf("health: %v", status)
	}
	// /metrics on the same port: ours at zero from the start, and the
	// SDK's of a polling worker.
	eventually(t, 30*time.Second, "the worker's metrics", func() (bool, string) {
		resp, err := http.Get("http://" + health + "/metrics")
		if err != nil {
			return false, err.Error()
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		text := string(body)
		for _, want := range []string{"\nedgeflow_compress_files_processed_total 0\n",
			"\nedgeflow_compress_input_bytes_total{codec=\"br\"} 0\n", "\ntemporal_worker_task_slots_available{", "\ntemporal_num_pollers{"} {
			if !strings.Contains(text, want) {
				return false, "no " + strings.TrimSpace(want) + " in\n" + text
			}
		}
		return true, ""
	})

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
