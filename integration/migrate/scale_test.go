package migrate_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/edgeflow/edgeflow/internal/devstack"
	"github.com/edgeflow/edgeflow/internal/migrate/migratetest"
	"github.com/edgeflow/edgeflow/internal/objectstore"
	"github.com/edgeflow/edgeflow/workflows/migrate/contract"
)

// TestMigrateScale copies EDGEFLOW_SCALE_OBJECTS (1,000,000) tiny objects
// with the defaults users get, and first EDGEFLOW_SCALE_BASE (100,000) of
// them, each job with a worker process of its own, and says for each the
// worker's peak memory, the largest history of the job's workflows (its
// runs and its pages') and the rate over the run. Both must be flat: the
// same at both sizes within 10%. Opt-in (EDGEFLOW_SCALE_TEST=1): seeding
// and copying a million objects takes most of an hour on 2 cores.
func TestMigrateScale(t *testing.T) {
	if os.Getenv("EDGEFLOW_SCALE_TEST") != "1" {
		t.Skip("EDGEFLOW_SCALE_TEST=1 runs it (EDGEFLOW_SCALE_OBJECTS, EDGEFLOW_SCALE_BASE: the sizes)")
	}
	full, base := envInt(t, "EDGEFLOW_SCALE_OBJECTS", 1_000_000), envInt(t, "EDGEFLOW_SCALE_BASE", 100_000)
	if base >= full {
		t.Fatalf("EDGEFLOW_SCALE_BASE (%d) must be below EDGEFLOW_SCALE_OBJECTS (%d)", base, full)
	}
	setup(t)
	srcBucket := migratetest.Bucket(t, env.Store, "scale-src")
	// The base set under one prefix, the rest under another: the base job
	// copies the first prefix, the full one the whole bucket.
	began := time.Now()
	seedTiny(t, srcBucket, "a/", base)
	seedTiny(t, srcBucket, "b/", full-base)
	t.Logf("seeded %d objects in %s (load %s)", full, time.Since(began).Round(time.Second), loadAverage())

	small := scaleRun(t, srcBucket, "a/", base)
	large := scaleRun(t, srcBucket, "", full)
	for _, r := range []scaleResult{small, large} {
		t.Logf("%d objects: %s, %.0f objects/s, worker peak memory %.0f MiB, largest history %d events (%s), load %s",
			r.objects, r.took.Round(time.Second), float64(r.objects)/r.took.Seconds(), float64(r.peakRSS)/(1<<20), r.largestHistory, r.largestWorkflow, r.load)
	}
	within := func(what string, a, b float64) {
		if b > a*1.1 || b < a*0.9 {
			t.Errorf("%s is not flat: %.0f at %d objects, %.0f at %d (over 10%% apart)", what, a, base, b, full)
		}
	}
	within("the worker's peak memory (bytes)", float64(small.peakRSS), float64(large.peakRSS))
	within("the largest history (events)", float64(small.largestHistory), float64(large.largestHistory))
}

type scaleResult struct {
	objects         int
	took            time.Duration
	peakRSS         int64
	largestHistory  int64
	largestWorkflow string
	load            string
}

// scaleRun copies the objects under prefix with a fresh worker process and
// measures it.
func scaleRun(t *testing.T, srcBucket, prefix string, n int) scaleResult {
	dstBucket := migratetest.Bucket(t, env.Store2, "scale-dst")
	worker := startScaleWorker(t)
	job := fmt.Sprintf("scale-%d-%d", n, time.Now().UnixNano())
	src := source(srcBucket)
	src.prefix = prefix
	in := jobInput(t, job, src, dest2(env.MinIO2.Endpoint, dstBucket, prefix))
	in.Settings = contract.Settings{} // the defaults users get
	in.Account = job
	began := time.Now()
	st, err := waitWithin(t, start(t, in), 3*time.Hour)
	if err != nil || st.Copied != int64(n) {
		t.Fatalf("job of %d objects: %+v %v", n, st, err)
	}
	r := scaleResult{objects: n, took: time.Since(began), load: loadAverage()}
	r.peakRSS = worker.peakRSS(t)
	// The job's pages end after it (a page's last workflow task follows
	// its report): they do so on this worker, before it is killed.
	leavesNoJobRunning(t)
	worker.stop()
	r.largestHistory, r.largestWorkflow = largestHistory(t, job)
	// The copies go: the next run and the disk need the room.
	if err := objectstore.DeletePrefix(context.Background(), env.Store2, dstBucket, ""); err != nil {
		t.Fatal(err)
	}
	return r
}

// scaleWorker is the migrate worker binary with its defaults; its log goes
// nowhere (a million objects' worth would fill memory).
type scaleWorker struct {
	cmd  *exec.Cmd
	once sync.Once
}

func startScaleWorker(t *testing.T) *scaleWorker {
	port, err := devstack.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	w := &scaleWorker{cmd: exec.Command(binary(t, "migrate-worker"))}
	w.cmd.Env = processEnv(fmt.Sprintf("HEALTH_ADDR=127.0.0.1:%d", port), "LOG_LEVEL=warn")
	w.cmd.Stdout, w.cmd.Stderr = io.Discard, io.Discard
	w.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := w.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.stop)
	return w
}

func (w *scaleWorker) stop() {
	w.once.Do(func() {
		_ = syscall.Kill(-w.cmd.Process.Pid, syscall.SIGKILL)
		_ = w.cmd.Wait()
	})
}

// peakRSS is the process's peak resident memory (VmHWM), in bytes.
func (w *scaleWorker) peakRSS(t *testing.T) int64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", w.cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmHWM in the worker's status")
	return 0
}

// largestHistory is the longest history among the job's workflows (every
// run of the job, every page), once visibility has them all closed.
func largestHistory(t *testing.T, job string) (int64, string) {
	ctx := context.Background()
	query := fmt.Sprintf("%s = '%s'", contract.JobKey.GetName(), job)
	eventually(t, time.Minute, "the job's workflows all closed in visibility", func() bool {
		resp, err := env.Client.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: query + " AND ExecutionStatus = 'Running'"})
		return err == nil && len(resp.GetExecutions()) == 0
	})
	var largest int64
	var which string
	var token []byte
	for {
		resp, err := env.Client.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: query, NextPageToken: token, PageSize: 1000})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range resp.GetExecutions() {
			n := e.GetHistoryLength()
			if n == 0 { // not kept by this visibility store: asked of the run
				d, err := env.Client.DescribeWorkflow(ctx, e.GetExecution().GetWorkflowId(), e.GetExecution().GetRunId())
				if err != nil {
					t.Fatal(err)
				}
				n = d.RawResponse.GetWorkflowExecutionInfo().GetHistoryLength()
			}
			if n > largest {
				largest, which = n, e.GetType().GetName()+" "+e.GetExecution().GetWorkflowId()
			}
		}
		if token = resp.GetNextPageToken(); len(token) == 0 {
			return largest, which
		}
	}
}

// seedTiny writes n objects of 16-127 bytes under prefix as archives the
// store extracts (1,000 objects a request, 4 at once): a million in
// minutes.
func seedTiny(t testing.TB, bucket, prefix string, n int) {
	const perBatch = 1000
	batches := make(chan int)
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for first := range batches {
				entries := make([]objectstore.BatchEntry, 0, perBatch)
				for i := first; i < min(first+perBatch, n); i++ {
					entries = append(entries, objectstore.BatchEntry{Key: tinyKey(prefix, i), Data: tinyData(i)})
				}
				if err := env.Store.PutBatch(context.Background(), bucket, entries); err != nil {
					select {
					case errs <- err:
					default:
					}
				}
			}
		}()
	}
	for first := 0; first < n; first += perBatch {
		batches <- first
	}
	close(batches)
	wg.Wait()
	select {
	case err := <-errs:
		t.Fatalf("seeding: %v", err)
	default:
	}
}

func tinyKey(prefix string, i int) string { return fmt.Sprintf("%s%03d/obj-%07d", prefix, i%1000, i) }

func tinyData(i int) []byte {
	data := make([]byte, 16+i%112)
	for j := range data {
		data[j] = byte(i*31 + j)
	}
	return data
}

// waitWithin is wait for jobs of many objects.
func waitWithin(t testing.TB, run client.WorkflowRun, within time.Duration) (contract.Status, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	var st contract.Status
	err := run.Get(ctx, &st)
	return st, err
}

func envInt(t *testing.T, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		t.Fatalf("%s=%q: want a positive number of objects", name, v)
	}
	return n
}
