package migrate_test

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"go.temporal.io/api/workflowservice/v1"

	"github.com/edgeflow/edgeflow/internal/migrate/jobclient"
	"github.com/edgeflow/edgeflow/internal/migrate/migratetest"
	"github.com/edgeflow/edgeflow/internal/objectstore"
	"github.com/edgeflow/edgeflow/workflows/migrate/contract"
)

// syncReport is `migrate sync --json` and `migrate cutover --json`.
type syncReport struct {
	contract.Status
	Changed    int64  `json:"changed"`
	Unchanged  int64  `json:"unchanged"`
	Extraneous int64  `json:"extraneous"`
	Deleted    int64  `json:"deleted"`
	WorkflowID string `json:"workflowId"`
}

// liveBucket is a source with a finished bulk job into a destination
// reached through a proxy that counts writes.
type liveBucket struct {
	job                  string
	srcBucket, dstBucket string
	in                   contract.JobInput
	proxy                *migratetest.Proxy
	objs                 map[string][]byte // the source now
}

func bulkCopied(t *testing.T, name string, n int) *liveBucket {
	t.Helper()
	objs := migratetest.Small("s/", n, 4096)
	lb := &liveBucket{job: fmt.Sprintf("%s-%d", name, time.Now().UnixNano()), objs: map[string][]byte{},
		srcBucket: migratetest.Bucket(t, env.Store, name+"-src"), dstBucket: migratetest.Bucket(t, env.Store2, name+"-dst")}
	migratetest.Seed(t, env.Store, lb.srcBucket, objs)
	for _, o := range objs {
		lb.objs[o.Key] = o.Data
	}
	lb.proxy = migratetest.NewProxy(env.MinIO2.Endpoint)
	t.Cleanup(lb.proxy.Close)
	lb.in = jobInput(t, lb.job, source(lb.srcBucket), dest2(lb.proxy.Endpoint, lb.dstBucket, "live/"))
	lb.in.Settings.PageSize = 40
	return lb
}

func (lb *liveBucket) runBulk(t *testing.T) {
	t.Helper()
	st, err := wait(t, start(t, lb.in))
	if err != nil || st.State != contract.StateCompleted || st.Copied != int64(len(lb.objs)) {
		t.Fatalf("bulk copy: %+v %v", st, err)
	}
	lb.proxy.ResetWrites()
}

func (lb *liveBucket) put(t *testing.T, key string, data []byte) {
	t.Helper()
	if _, err := env.Store.Put(context.Background(), lb.srcBucket, key, bytes.NewReader(data), int64(len(data)), objectstore.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	lb.objs[key] = data
}

func (lb *liveBucket) remove(t *testing.T, key string) {
	t.Helper()
	if err := env.Store.Delete(context.Background(), lb.srcBucket, key); err != nil {
		t.Fatal(err)
	}
	delete(lb.objs, key)
}

// destKeys are the destination's keys under the job's prefix.
func (lb *liveBucket) destKeys(t *testing.T) []string {
	t.Helper()
	var keys []string
	for _, o := range migratetest.List(t, env.Store2, lb.dstBucket, "live/") {
		keys = append(keys, o.Key)
	}
	return keys
}

// sameAsSource checks every source object's copy, bytes compared.
func (lb *liveBucket) sameAsSource(t *testing.T) {
	t.Helper()
	var objs []migratetest.Object
	for k, d := range lb.objs {
		objs = append(objs, migratetest.Object{Key: k, Data: d})
	}
	migratetest.CheckCopies(t, env.Store2, lb.dstBucket, lb.in.KeyMap(), objs)
}

// writtenKeys are the destination keys written since the last reset.
func (lb *liveBucket) writtenKeys(t *testing.T) map[string]int {
	t.Helper()
	out := map[string]int{}
	for k, n := range lb.proxy.Writes() {
		out[k[len(lb.dstBucket)+1:]] = n
	}
	return out
}

// A sync after the source changed (new keys, changed keys — one of the same
// size —, deleted keys) writes exactly the new and changed objects, once
// each, and counts the deleted ones without deleting them; with
// --delete-extraneous it deletes those and writes nothing.
func TestSyncCopiesExactlyWhatChanged(t *testing.T) {
	startWorker(t, 3)
	lb := bulkCopied(t, "sync", 200)
	lb.runBulk(t)

	lb.put(t, "s/new-0.bin", []byte("new 0"))
	lb.put(t, "s/new-1.bin", []byte("new 1"))
	lb.put(t, "s/zz-last.bin", []byte("after every other key"))
	lb.put(t, "s/00010.bin", []byte("a different size"))
	same := bytes.Clone(lb.objs["s/00020.bin"])
	same[0] ^= 0xff // the same size, other bytes: told by the ETag
	lb.put(t, "s/00020.bin", same)
	lb.remove(t, "s/00030.bin")
	lb.remove(t, "s/00199.bin") // the last key: only the last page's span has it

	stdout, stderr, code := migrateCLI(t, nil, "sync", lb.job, "--json")
	if code != 0 {
		t.Fatalf("sync exited %d\n%s", code, stderr)
	}
	var fields map[string]any
	oneJSON(t, stdout, &fields)
	for _, k := range []string{"job", "state", "listed", "copied", "changed", "unchanged", "deleted", "extraneous", "lagSeconds", "workflowId"} {
		if _, ok := fields[k]; !ok {
			t.Errorf("sync --json lacks %q: %s", k, stdout)
		}
	}
	var r syncReport
	oneJSON(t, stdout, &r)
	if r.State != contract.StateCompleted || r.Listed != 201 || r.Copied != 5 || r.Changed != 2 || r.Unchanged != 196 ||
		r.Extraneous != 2 || r.Deleted != 0 || r.Failed != 0 || r.LagSeconds == nil || *r.LagSeconds <= 0 {
		t.Fatalf("sync: %s", stdout)
	}
	want := []string{"live/s/00010.bin", "live/s/00020.bin", "live/s/new-0.bin", "live/s/new-1.bin", "live/s/zz-last.bin"}
	written := lb.writtenKeys(t)
	if got := slices.Sorted(func(yield func(string) bool) {
		for k := range written {
			if !yield(k) {
				return
			}
		}
	}); !slices.Equal(got, want) {
		t.Fatalf("the sync wrote %v, want %v", written, want)
	}
	for k, n := range written {
		if n != 1 {
			t.Errorf("%s written %d times", k, n)
		}
	}
	if keys := lb.destKeys(t); !slices.Contains(keys, "live/s/00030.bin") || !slices.Contains(keys, "live/s/00199.bin") {
		t.Fatal("a sync without --delete-extraneous deleted at the destination")
	}
	lb.sameAsSource(t)

	lb.proxy.ResetWrites()
	stdout, stderr, code = migrateCLI(t, nil, "sync", lb.job, "--delete-extraneous", "--json")
	r = syncReport{}
	oneJSON(t, stdout, &r)
	if code != 0 || r.Copied != 0 || r.Unchanged != 201 || r.Extraneous != 2 || r.Deleted != 2 {
		t.Fatalf("sync --delete-extraneous (exit %d): %s\n%s", code, stdout, stderr)
	}
	if w := lb.proxy.Writes(); len(w) != 0 {
		t.Fatalf("a sync of an unchanged source wrote %v", w)
	}
	if keys := lb.destKeys(t); len(keys) != len(lb.objs) || slices.Contains(keys, "live/s/00030.bin") || slices.Contains(keys, "live/s/00199.bin") {
		t.Fatalf("after --delete-extraneous the destination holds %d keys (source %d)", len(keys), len(lb.objs))
	}
	lb.sameAsSource(t)

	// Each run is its own workflow, found by the job's search attribute.
	eventually(t, 30*time.Second, "both sync runs are found by MigrationJob", func() bool {
		resp, err := env.Client.ListWorkflow(context.Background(), &workflowservice.ListWorkflowExecutionsRequest{
			Query: fmt.Sprintf("WorkflowType = '%s' AND MigrationJob = '%s' AND ExecutionStatus = 'Completed'", contract.WorkflowTypeMigrationSync, lb.job)})
		return err == nil && len(resp.GetExecutions()) == 2
	})
}

// A cutover pauses the job's sync Schedule, runs a last sync that verifies
// every object, and exits 1 naming a difference planted at the
// destination (an object the source does not have); once it is removed,
// the cutover says identical and exits 0. The Schedule's controls work.
func TestCutoverFindsAPlantedDifference(t *testing.T) {
	startWorker(t, 3)
	lb := bulkCopied(t, "cut", 60)
	lb.runBulk(t)

	stdout, stderr, code := migrateCLI(t, nil, "sync", lb.job, "--every", "1h", "--json")
	var sched struct {
		ScheduleID string `json:"scheduleId"`
		Paused     bool   `json:"paused"`
		Every      string `json:"every"`
	}
	oneJSON(t, stdout, &sched)
	if code != 0 || sched.ScheduleID != contract.MigrationSyncScheduleID(lb.job) || sched.Paused || sched.Every != "1h0m0s" {
		t.Fatalf("sync --every (exit %d): %s\n%s", code, stdout, stderr)
	}
	t.Cleanup(func() {
		_ = env.Client.ScheduleClient().GetHandle(context.Background(), sched.ScheduleID).Delete(context.Background())
	})

	planted := []byte("only at the destination")
	if _, err := env.Store2.Put(context.Background(), lb.dstBucket, "live/s/planted.txt", bytes.NewReader(planted), int64(len(planted)), objectstore.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	lb.put(t, "s/00007.bin", []byte("changed before the cutover"))

	stdout, stderr, code = migrateCLI(t, nil, "cutover", lb.job, "--json")
	var r syncReport
	oneJSON(t, stdout, &r)
	if code != 1 || r.Identical == nil || *r.Identical || r.DifferenceCount != 1 || len(r.Differences) != 1 ||
		r.Differences[0].Key != "live/s/planted.txt" || r.Copied != 1 || r.Changed != 1 || r.Verified != 60 {
		t.Fatalf("cutover with a planted difference (exit %d): %s\n%s", code, stdout, stderr)
	}
	// The run's report lists the difference with every object.
	stdout, stderr, code = migrateCLI(t, nil, "report", lb.job, "--sync", r.WorkflowID, "--format", "jsonl")
	if code != 0 || strings.Count(stdout, "\n") != 61 || !strings.Contains(stdout, `{"key":"live/s/planted.txt","status":"extraneous"`) {
		t.Fatalf("report --sync (exit %d): %s\n%s", code, stdout, stderr)
	}
	if _, stderr, code := migrateCLI(t, nil, "report", lb.job, "--sync", "migrate/"+lb.job); code != 2 {
		t.Fatalf("report --sync of a run that is not a sync exited %d: %s", code, stderr)
	}
	h := env.Client.ScheduleClient().GetHandle(context.Background(), sched.ScheduleID)
	if d, err := h.Describe(context.Background()); err != nil || d.Schedule.State == nil || !d.Schedule.State.Paused {
		t.Fatalf("the cutover left the sync schedule running: %+v %v", d, err)
	}

	if err := env.Store2.Delete(context.Background(), lb.dstBucket, "live/s/planted.txt"); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code = migrateCLI(t, nil, "cutover", lb.job, "--json")
	r = syncReport{}
	oneJSON(t, stdout, &r)
	if code != 0 || r.Identical == nil || !*r.Identical || r.DifferenceCount != 0 || r.Copied != 0 || r.Verified != 60 {
		t.Fatalf("cutover of identical sides (exit %d): %s\n%s", code, stdout, stderr)
	}
	lb.sameAsSource(t)

	// The Schedule: resumed, triggered (a run now), and removed; a removed
	// one is bad input.
	stdout, _, code = migrateCLI(t, nil, "sync", lb.job, "--resume", "--json")
	oneJSON(t, stdout, &sched)
	if code != 0 || sched.Paused {
		t.Fatalf("sync --resume (exit %d): %s", code, stdout)
	}
	if stdout, stderr, code := migrateCLI(t, nil, "sync", lb.job, "--trigger"); code != 0 {
		t.Fatalf("sync --trigger exited %d: %s %s", code, stdout, stderr)
	}
	eventually(t, 30*time.Second, "the triggered sync runs", func() bool {
		d, err := h.Describe(context.Background())
		return err == nil && len(d.Info.RecentActions) > 0
	})
	if err := jobclient.AwaitSyncs(context.Background(), env.Client, lb.job); err != nil {
		t.Fatal(err)
	}
	if stdout, stderr, code := migrateCLI(t, nil, "sync", lb.job, "--remove", "--json"); code != 0 {
		t.Fatalf("sync --remove exited %d: %s %s", code, stdout, stderr)
	}
	if _, stderr, code := migrateCLI(t, nil, "sync", lb.job, "--pause"); code != 2 || !strings.Contains(stderr, "has no sync schedule") {
		t.Fatalf("pause of a removed schedule exited %d: %s", code, stderr)
	}
}

// A sync of a job that runs is refused; one of a job that never existed
// is bad input.
func TestSyncRefusesARunningOrUnknownJob(t *testing.T) {
	setup(t)
	if _, stderr, code := migrateCLI(t, nil, "sync", fmt.Sprintf("nosuch-%d", time.Now().UnixNano())); code != 2 {
		t.Fatalf("sync of an unknown job exited %d: %s", code, stderr)
	}
}
