package migrate_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/edgeflow/edgeflow/internal/migrate"
	"github.com/edgeflow/edgeflow/internal/migrate/migratetest"
	"github.com/edgeflow/edgeflow/internal/objectstore"
	"github.com/edgeflow/edgeflow/workflows/migrate/contract"
)

// migrateCLI runs the starter and returns its stdout, stderr and exit code.
func migrateCLI(t *testing.T, extraEnv []string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(binary(t, "migrate-starter"), args...)
	cmd.Env = processEnv(append([]string{
		"MIGRATE_SOURCE_ACCESS_KEY=" + env.MinIO.AccessKey, "MIGRATE_SOURCE_SECRET_KEY=" + env.MinIO.SecretKey,
		"MIGRATE_DEST_ACCESS_KEY=" + env.MinIO2.AccessKey, "MIGRATE_DEST_SECRET_KEY=" + env.MinIO2.SecretKey,
	}, extraEnv...)...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code := 0
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return out.String(), errOut.String(), code
}

// oneJSON decodes stdout, which must hold exactly one JSON document.
func oneJSON(t *testing.T, stdout string, v any) {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(stdout))
	if err := dec.Decode(v); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s", err, stdout)
	}
	var extra json.RawMessage
	if err := dec.Decode(&extra); err != io.EOF {
		t.Fatalf("stdout holds more than one JSON document:\n%s", stdout)
	}
}

func jobArgs(srcBucket, dstBucket string, more ...string) []string {
	return append([]string{"--source", "s3://" + srcBucket, "--source-endpoint", env.MinIO.Endpoint, "--source-insecure",
		"--dest", "s3://" + dstBucket + "/cli/", "--dest-endpoint", env.MinIO2.Endpoint, "--dest-insecure",
		"--account", "cli", "--page-size", "50"}, more...)
}

func TestStarterContract(t *testing.T) {
	startWorker(t, 3)
	objs := migratetest.Small("", 120, 2048)
	srcBucket := migratetest.Bucket(t, env.Store, "cli-src")
	migratetest.Seed(t, env.Store, srcBucket, objs)
	dstBucket := migratetest.Bucket(t, env.Store2, "cli-dst")
	job := fmt.Sprintf("cli-%d", time.Now().UnixNano())

	stdout, stderr, code := migrateCLI(t, nil, append([]string{"start", "--job", job, "--json", "--follow"}, jobArgs(srcBucket, dstBucket)...)...)
	if code != 0 {
		t.Fatalf("start exited %d\n%s", code, stderr)
	}
	var fields map[string]any
	oneJSON(t, stdout, &fields)
	for _, k := range []string{"job", "state", "listed", "copied", "skipped", "failed", "bytes"} {
		if _, ok := fields[k]; !ok {
			t.Errorf("start --json lacks %q: %s", k, stdout)
		}
	}
	var st contract.Status
	oneJSON(t, stdout, &st)
	if st.Job != job || st.State != contract.StateCompleted || st.Copied != 120 || st.Bytes != totalBytes(objs) {
		t.Fatalf("start --json: %+v", st)
	}
	// Not a terminal: progress came as plain lines, never a redrawn bar.
	if strings.Contains(stderr, "\r") || !strings.Contains(stderr, "copied") {
		t.Errorf("--follow without a terminal:\n%q", stderr)
	}
	for _, secret := range []string{env.MinIO.SecretKey, env.MinIO2.SecretKey} {
		if strings.Contains(stdout+stderr, secret) {
			t.Errorf("the starter printed a secret")
		}
	}

	stdout, _, code = migrateCLI(t, nil, "status", job, "--json")
	var again contract.Status
	oneJSON(t, stdout, &again)
	if code != 0 || again.Copied != 120 || again.State != contract.StateCompleted {
		t.Fatalf("status --json (exit %d): %+v", code, again)
	}
	stdout, _, code = migrateCLI(t, nil, "list", "--json", "--account", "cli")
	var rows []struct{ Job, State string }
	oneJSON(t, stdout, &rows)
	found := false
	for _, r := range rows {
		found = found || (r.Job == job && r.State == contract.StateCompleted)
	}
	if code != 0 || !found {
		t.Fatalf("list --json (exit %d) has no completed %s: %+v", code, job, rows)
	}
	// Control of an ended job is refused as bad input.
	if _, stderr, code := migrateCLI(t, nil, "pause", job); code != 2 {
		t.Fatalf("pause of a completed job exited %d: %s", code, stderr)
	}

	// A dry run writes nothing and says what it would copy.
	dry := migratetest.Bucket(t, env.Store2, "cli-dry")
	stdout, stderr, code = migrateCLI(t, nil, append([]string{"start", "--dry-run", "--json"}, jobArgs(srcBucket, dry)...)...)
	var d contract.Status
	oneJSON(t, stdout, &d)
	if code != 0 || !d.DryRun || d.Copied != 120 {
		t.Fatalf("dry run (exit %d): %+v\n%s", code, d, stderr)
	}
	if left := migratetest.List(t, env.Store2, dry, ""); len(left) != 0 {
		t.Fatalf("a dry run wrote %d objects", len(left))
	}
}

func TestStarterBadInputAndUnreachable(t *testing.T) {
	setup(t)
	cases := []struct {
		name string
		env  []string
		args []string
		code int
		want string
	}{
		{"no source", nil, []string{"start", "--dest", "s3://dst", "--dest-endpoint", "h:1"}, 2, "--source is required"},
		{"bad location", nil, []string{"start", "--source", "http://x", "--source-endpoint", "h:1", "--dest", "s3://dst", "--dest-endpoint", "h:1"}, 2, "s3://BUCKET[/PREFIX]"},
		{"bad policy", nil, append([]string{"start", "--overwrite", "sometimes"}, jobArgs("src", "dst")...), 2, "--overwrite"},
		{"follow and detach", nil, append([]string{"start", "--follow", "--detach"}, jobArgs("src", "dst")...), 2, "exclude"},
		{"copy into itself", nil, []string{"start", "--source", "s3://same", "--source-endpoint", "h:1", "--dest", "s3://same/x/", "--dest-endpoint", "h:1"}, 2, "inside --source"},
		{"no credentials", []string{"MIGRATE_DEST_SECRET_KEY="}, append([]string{"start"}, jobArgs("src", "dst")...), 2, "MIGRATE_DEST_SECRET_KEY"},
		{"no codec keys", []string{"CODEC_KEYS=", "DATA_DIR=" + t.TempDir()}, append([]string{"start"}, jobArgs("src", "dst")...), 2, "make run"},
		{"unknown command", nil, []string{"frobnicate"}, 2, "unknown command"},
		{"Temporal unreachable", []string{"TEMPORAL_ADDRESS=127.0.0.1:1"}, append([]string{"start"}, jobArgs("src", "dst")...), 3, "Temporal"},
		{"no such job", nil, []string{"status", "no-such-job-here"}, 2, "no-such-job-here"},
	}
	for _, c := range cases {
		_, stderr, code := migrateCLI(t, c.env, c.args...)
		if code != c.code || !strings.Contains(stderr, c.want) {
			t.Errorf("%s: exit %d, want %d; stderr %q should mention %q", c.name, code, c.code, stderr, c.want)
		}
	}
}

func TestStarterPrecheckFailureNamesTheSide(t *testing.T) {
	startWorker(t, 3)
	srcBucket := migratetest.Bucket(t, env.Store, "pcf-src")
	migratetest.Seed(t, env.Store, srcBucket, migratetest.Small("", 3, 10))
	stdout, stderr, code := migrateCLI(t, nil, append([]string{"start", "--json"}, jobArgs(srcBucket, "no-such-destination")...)...)
	var st contract.Status
	oneJSON(t, stdout, &st)
	if code != 1 || st.State != contract.StateFailed || !strings.Contains(st.Error, "destination") || !strings.Contains(st.Error, "does not exist") {
		t.Fatalf("exit %d, status %+v\n%s", code, st, stderr)
	}
}

// A starter sealing with keys the workers do not have: the job fails at
// once and says which key is missing and what to check.
func TestStarterWithOtherCodecKeys(t *testing.T) {
	startWorker(t, 3)
	srcBucket := migratetest.Bucket(t, env.Store, "keys-src")
	migratetest.Seed(t, env.Store, srcBucket, migratetest.Small("", 3, 10))
	dstBucket := migratetest.Bucket(t, env.Store2, "keys-dst")
	other := "elsewhere:" + base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 32))
	stdout, stderr, code := migrateCLI(t, []string{"CODEC_KEYS=" + other}, append([]string{"start", "--json"}, jobArgs(srcBucket, dstBucket)...)...)
	var st contract.Status
	oneJSON(t, stdout, &st)
	if code != 1 || st.State != contract.StateFailed || !strings.Contains(st.Error, `"elsewhere"`) || !strings.Contains(st.Error, "CODEC_KEYS") {
		t.Fatalf("exit %d, status %+v\n%s", code, st, stderr)
	}
}

func TestDeadLettersAndRedriveFromTheStarter(t *testing.T) {
	startWorker(t, 3)
	srcBucket := migratetest.Bucket(t, env.Store, "dl-src")
	migratetest.Seed(t, env.Store, srcBucket, migratetest.Small("k/", 5, 100))
	dstBucket := migratetest.Bucket(t, env.Store2, "dl-dst")
	keys := filepath.Join(t.TempDir(), "keys.txt")
	list := "k/00000.bin\nk/00001.bin\nk/missing one.bin\nk/00002.bin\n"
	if err := os.WriteFile(keys, []byte(list), 0o644); err != nil {
		t.Fatal(err)
	}
	job := fmt.Sprintf("dl-%d", time.Now().UnixNano())
	stdout, stderr, code := migrateCLI(t, nil, append([]string{"start", "--job", job, "--keys", keys, "--json"}, jobArgs(srcBucket, dstBucket)...)...)
	var st contract.Status
	oneJSON(t, stdout, &st)
	if code != 1 || st.Listed != 4 || st.Copied != 3 || st.Failed != 1 {
		t.Fatalf("exit %d (want 1: an object failed), %+v\n%s", code, st, stderr)
	}
	report, _, _ := migrateCLI(t, nil, "report", job, "--failed")
	if !strings.Contains(report, "k/missing one.bin,failed,0,not found at the source") {
		t.Fatalf("failed report:\n%s", report)
	}
	// The object appears at the source; redrive copies it.
	migratetest.Seed(t, env.Store, srcBucket, []migratetest.Object{{Key: "k/missing one.bin", Data: []byte("late")}})
	stdout, stderr, code = migrateCLI(t, nil, "redrive", job, "--json")
	var after contract.Status
	oneJSON(t, stdout, &after)
	if code != 0 || after.Copied != 4 || after.Failed != 0 || after.Listed != 4 || after.RedrivePasses != 1 {
		t.Fatalf("redrive exit %d: %+v\n%s", code, after, stderr)
	}
	report, _, _ = migrateCLI(t, nil, "report", job, "--format", "jsonl")
	var lines int
	err := migrate.ReadJSONLines(strings.NewReader(report), func(r migrate.ObjectResult) error {
		lines++
		if r.Status != migrate.StatusCopied {
			return fmt.Errorf("%s: %s", r.Key, r.Status)
		}
		return nil
	})
	if err != nil || lines != 4 {
		t.Fatalf("report after redrive (%d lines): %v\n%s", lines, err, report)
	}
	// The report can also go to a bucket.
	if _, stderr, code := migrateCLI(t, nil, "report", job, "--out", "s3://it-reports/"+job+".csv"); code != 0 {
		t.Fatalf("report to a bucket: %d %s", code, stderr)
	}
	data, _, err := objectstore.ReadAll(context.Background(), env.Store, "it-reports", job+".csv")
	if err != nil || strings.Count(string(data), "\n") != 5 {
		t.Fatalf("report in the bucket: %v\n%s", err, data)
	}
}

func TestSplitByPrefixRunsParallelJobs(t *testing.T) {
	startWorker(t, 2)
	var objs []migratetest.Object
	for _, p := range []string{"a/", "b/", "c/", "d/", "e/"} {
		objs = append(objs, migratetest.Small(p, 12, 64)...)
	}
	objs = append(objs, migratetest.Object{Key: "top-level.txt", Data: []byte("x")})
	srcBucket := migratetest.Bucket(t, env.Store, "split-src")
	migratetest.Seed(t, env.Store, srcBucket, objs)
	dstBucket := migratetest.Bucket(t, env.Store2, "split-dst")
	base := fmt.Sprintf("split-%d", time.Now().UnixNano())
	args := jobArgs(srcBucket, dstBucket, "--job", base, "--parts", "3", "--json")
	for i, a := range args {
		if a == "cli" { // a fresh account: its limit of 2 leaves one job in line
			args[i] = base
		}
	}
	stdout, stderr, code := migrateCLI(t, nil, append([]string{"split"}, args...)...)
	var started []struct{ Job string }
	oneJSON(t, stdout, &started)
	if code != 0 || len(started) != 3 {
		t.Fatalf("split exit %d: %s\n%s", code, stdout, stderr)
	}
	var total int64
	for _, s := range started {
		st, err := wait(t, env.Client.GetWorkflow(context.Background(), contract.MigrationWorkflowID(s.Job), ""))
		if err != nil || st.Failed != 0 || st.State != contract.StateCompleted {
			t.Fatalf("%s: %+v %v", s.Job, st, err)
		}
		total += st.Copied
	}
	if total != int64(len(objs)) {
		t.Fatalf("the split jobs copied %d objects together, want %d", total, len(objs))
	}
	migratetest.CheckCopies(t, env.Store2, dstBucket, migrate.KeyMap{DestPrefix: "cli/"}, objs)
}
