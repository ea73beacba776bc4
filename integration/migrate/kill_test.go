package migrate_test

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/edgeflow/edgeflow/internal/devstack"
	"github.com/edgeflow/edgeflow/internal/migrate"
	"github.com/edgeflow/edgeflow/internal/migrate/migratetest"
	"github.com/edgeflow/edgeflow/workflows/migrate/contract"
)

// workerProcess runs the migrate worker binary; its output is kept for
// the test's log.
type workerProcess struct {
	cmd  *exec.Cmd
	logs *strings.Builder
}

// startWorkerProcess runs a worker process until the test ends, with extra
// environment (NAME=value) beside the tests' own.
func startWorkerProcess(t *testing.T, extraEnv ...string) *workerProcess {
	t.Helper()
	p := &workerProcess{cmd: exec.Command(binary(t, "migrate-worker")), logs: &strings.Builder{}}
	port, err := devstack.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	p.cmd.Env = processEnv(append([]string{"MAX_ACTIVITIES=8", fmt.Sprintf("HEALTH_ADDR=127.0.0.1:%d", port)}, extraEnv...)...)
	p.cmd.Stdout, p.cmd.Stderr = p.logs, p.logs
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		_ = p.cmd.Wait()
		if t.Failed() {
			t.Logf("worker log:\n%s", p.logs.String())
		}
	})
	checkedWhileWorkerRuns(t)
	return p
}

// kill ends the worker at once, as a crash or an OOM kill would: no drain,
// no goodbye to Temporal.
func (p *workerProcess) kill(t *testing.T) {
	t.Helper()
	if err := syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = p.cmd.Wait()
}

func TestWorkerKilledMidJobLosesNothingAndWritesNothingTwice(t *testing.T) {
	setup(t)
	objs := append(migratetest.Small("k/", 400, 16<<10), migratetest.OddObjects(t, 13*mib)...)
	srcBucket := migratetest.Bucket(t, env.Store, "kill-src")
	migratetest.Seed(t, env.Store, srcBucket, objs)
	dstBucket := migratetest.Bucket(t, env.Store2, "kill-dst")
	proxy := migratetest.NewProxy(env.MinIO2.Endpoint)
	defer proxy.Close()

	first := startWorkerProcess(t)
	job := fmt.Sprintf("kill-%d", time.Now().UnixNano())
	in := jobInput(t, job, source(srcBucket), dest2(proxy.Endpoint, dstBucket, "k9/"))
	in.Settings.PageSize, in.Settings.PagesInFlight, in.Settings.Concurrency = 20, 2, 2
	in.Settings.HeartbeatTimeout = 3 * time.Second
	run := start(t, in)
	var before contract.Status
	eventually(t, 2*time.Minute, "the job copies a few pages", func() bool {
		before = status(t, job)
		return before.Copied >= 60
	})
	first.kill(t)
	if before.Done() >= int64(len(objs)) {
		t.Fatal("the job finished before the kill: nothing was tested")
	}
	startWorkerProcess(t)
	st, err := wait(t, run)
	if err != nil {
		t.Fatalf("%v; status %+v", err, status(t, job))
	}
	n := int64(len(objs))
	if st.State != contract.StateCompleted || st.Listed != n || st.Copied != n || st.Skipped != 0 || st.Failed != 0 || st.Bytes != totalBytes(objs) {
		t.Fatalf("after the kill: %+v (before it: copied %d)", st, before.Copied)
	}
	migratetest.CheckCopies(t, env.Store2, dstBucket, in.KeyMap(), objs)
	onceEach(t, proxy, dstBucket, in.KeyMap(), objs)
	// Often 0, and not a loss: the kill follows a page's report, and the
	// job's pages share the worker's one limit of 2 requests to this pair of
	// stores (lowest page first), so the next page has seldom written
	// anything yet, or has finished and only its report is retried. What a
	// retried page finds of its own copies is TestTransferRetriedNeverCopiesAgain's.
	recovered := 0
	_ = jobs.ForEachResult(context.Background(), job, st.Execution, func(r migrate.ObjectResult) error {
		if r.Reason == migrate.ReasonCopiedByJob {
			recovered++
		}
		return nil
	})
	t.Logf("killed after %d objects; the retried pages found %d objects the killed worker had copied", before.Copied, recovered)
}
