package migrate_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.temporal.io/api/enums/v1"
	sdkpb "go.temporal.io/api/sdk/v1"
	"go.temporal.io/api/temporalproto"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/edgeflow/edgeflow/internal/cli"
	"github.com/edgeflow/edgeflow/internal/migrate"
	"github.com/edgeflow/edgeflow/internal/migrate/migratetest"
	"github.com/edgeflow/edgeflow/workflows/migrate/contract"
)

const mib = 1 << 20

func totalBytes(objs []migratetest.Object) int64 {
	var n int64
	for _, o := range objs {
		n += int64(len(o.Data))
	}
	return n
}

func onceEach(t *testing.T, p *migratetest.Proxy, bucket string, m migrate.KeyMap, objs []migratetest.Object) {
	t.Helper()
	w := p.Writes()
	for _, o := range objs {
		if n := w[bucket+"/"+m.Dest(o.Key)]; n != 1 {
			t.Errorf("%s written %d times, want once", o.Key, n)
		}
	}
	if len(w) != len(objs) {
		t.Errorf("%d keys written, want %d", len(w), len(objs))
	}
}

func TestCrossEndpointJob(t *testing.T) {
	startWorker(t, 3)
	objs := append(migratetest.OddObjects(t, 12*mib+4321), migratetest.Small("small/", 230, 4096)...)
	srcBucket := migratetest.Bucket(t, env.Store, "x-src")
	migratetest.Seed(t, env.Store, srcBucket, objs)
	dstBucket := migratetest.Bucket(t, env.Store2, "x-dst")
	proxy := migratetest.NewProxy(env.MinIO2.Endpoint)
	defer proxy.Close()

	job := fmt.Sprintf("cross-%d", time.Now().UnixNano())
	in := jobInput(t, job, source(srcBucket), dest2(proxy.Endpoint, dstBucket, "copy/"))
	in.Verify = true
	st, err := wait(t, start(t, in))
	if err != nil {
		t.Fatal(err)
	}
	n := int64(len(objs))
	if st.State != contract.StateCompleted || st.Listed != n || st.Copied != n || st.Skipped != 0 || st.Failed != 0 ||
		st.Verified != n || st.Mismatched != 0 || st.Bytes != totalBytes(objs) || st.ListedBytes != totalBytes(objs) {
		t.Fatalf("status %+v", st)
	}
	migratetest.CheckCopies(t, env.Store2, dstBucket, in.KeyMap(), objs)
	onceEach(t, proxy, dstBucket, in.KeyMap(), objs)

	// The report has one line per object, all copied and verified.
	var lines, copied int
	err = jobs.ForEachResult(context.Background(), job, st.Execution, func(r migrate.ObjectResult) error {
		lines++
		if r.Status == migrate.StatusCopied && r.Verify == migrate.VerifyMatch {
			copied++
		}
		return nil
	})
	if err != nil || lines != len(objs) || copied != len(objs) {
		t.Fatalf("report: %d lines, %d copied and verified, %v", lines, copied, err)
	}

	// Findable in the Web UI by job and by both buckets.
	for _, q := range []string{
		fmt.Sprintf("MigrationJob = '%s' AND WorkflowType = '%s'", job, contract.WorkflowTypeMigration),
		fmt.Sprintf("MigrationSourceBucket = '%s' AND WorkflowType = '%s'", srcBucket, contract.WorkflowTypeMigration),
		fmt.Sprintf("MigrationDestBucket = '%s' AND WorkflowType = '%s'", dstBucket, contract.WorkflowTypeMigration),
	} {
		eventually(t, 30*time.Second, "visibility: "+q, func() bool {
			resp, err := env.Client.ListWorkflow(context.Background(), &workflowservice.ListWorkflowExecutionsRequest{Query: q})
			return err == nil && len(resp.GetExecutions()) == 1
		})
	}
	// Its current details say how it ended.
	details := currentDetails(t, contract.MigrationWorkflowID(job))
	if !strings.Contains(details, "completed") || !strings.Contains(details, fmt.Sprintf("copied %d", n)) {
		t.Fatalf("current details:\n%s", details)
	}

	// Again, into the same place: everything is there, nothing is written.
	proxy.ResetWrites()
	again := jobInput(t, job+"-again", source(srcBucket), dest2(proxy.Endpoint, dstBucket, "copy/"))
	st, err = wait(t, start(t, again))
	if err != nil || st.Skipped != n || st.Copied != 0 {
		t.Fatalf("second job: %+v %v", st, err)
	}
	if w := proxy.Writes(); len(w) != 0 {
		t.Fatalf("second job wrote %v", w)
	}
}

func currentDetails(t *testing.T, workflowID string) string {
	t.Helper()
	v, err := env.Client.QueryWorkflow(context.Background(), workflowID, "", "__temporal_workflow_metadata")
	if err != nil {
		t.Fatal(err)
	}
	var md sdkpb.WorkflowMetadata
	if err := v.Get(&md); err != nil {
		t.Fatal(err)
	}
	return md.GetCurrentDetails()
}

func TestSameEndpointJobCopiesServerSide(t *testing.T) {
	startWorker(t, 3)
	objs := migratetest.OddObjects(t, 13*mib)
	srcBucket := migratetest.Bucket(t, env.Store, "s-src")
	migratetest.Seed(t, env.Store, srcBucket, objs)
	dstBucket := migratetest.Bucket(t, env.Store, "s-dst")
	proxy := migratetest.NewProxy(env.MinIO.Endpoint)
	defer proxy.Close()
	src := source(srcBucket)
	src.endpoint = proxy.Endpoint
	dst := source(dstBucket)
	dst.endpoint = proxy.Endpoint
	in := jobInput(t, fmt.Sprintf("same-%d", time.Now().UnixNano()), src, dst)
	in.Verify = true
	st, err := wait(t, start(t, in))
	if err != nil || st.Copied != int64(len(objs)) || st.Mismatched != 0 || st.Verified != int64(len(objs)) {
		t.Fatalf("status %+v %v", st, err)
	}
	migratetest.CheckCopies(t, env.Store, dstBucket, in.KeyMap(), objs)
	onceEach(t, proxy, dstBucket, in.KeyMap(), objs)
	// Copied server side: the bytes never came through the proxy as a PUT body
	// (a composed copy shows as a multipart ETag of server-side part copies).
	info, err := env.Store.Stat(context.Background(), dstBucket, "large/blob.bin")
	if err != nil || !strings.HasSuffix(info.ETag, "-3") {
		t.Fatalf("large object %q %v: want composed from 3 part copies", info.ETag, err)
	}
}

func TestSecretsNeverInHistoryOrLogs(t *testing.T) {
	startWorker(t, 3)
	srcBucket := migratetest.Bucket(t, env.Store, "sec-src")
	migratetest.Seed(t, env.Store, srcBucket, migratetest.Small("", 30, 100))
	dstBucket := migratetest.Bucket(t, env.Store2, "sec-dst")
	job := fmt.Sprintf("secrets-%d", time.Now().UnixNano())
	in := jobInput(t, job, source(srcBucket), dest2(env.MinIO2.Endpoint, dstBucket, ""))
	in.Settings.PageSize = 10
	if _, err := wait(t, start(t, in)); err != nil {
		t.Fatal(err)
	}
	// Everything the job's runs left in Temporal, read raw through a client
	// that has no codec keys: the job, its pages, its account.
	ids := []string{contract.MigrationWorkflowID(job), contract.MigrationAccountWorkflowID("it")}
	for seq := range 3 {
		ids = append(ids, contract.MigrationPageWorkflowID(job, status(t, job).Execution, 0, seq))
	}
	var all strings.Builder
	for _, id := range ids {
		it := env.Client.GetWorkflowHistory(context.Background(), id, "", false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		events := 0
		for it.HasNext() {
			ev, err := it.Next()
			if err != nil {
				t.Fatalf("history of %s: %v", id, err)
			}
			b, err := temporalproto.CustomJSONMarshalOptions{}.Marshal(ev)
			if err != nil {
				t.Fatal(err)
			}
			all.Write(b)
			events++
		}
		if events < 3 {
			t.Fatalf("history of %s has %d events", id, events)
		}
	}
	history := decodePayloads(all.String())
	if !strings.Contains(history, "credentials") {
		t.Fatal("the history has no sealed credentials at all: the check would prove nothing")
	}
	logs.Lock()
	logged := logs.String()
	logs.Unlock()
	for _, secret := range []string{env.MinIO.SecretKey, env.MinIO2.SecretKey, env.MinIO2.AccessKey} {
		if strings.Contains(history, secret) {
			t.Errorf("the history shows %q in plain text", secret)
		}
		if strings.Contains(logged, secret) {
			t.Errorf("the worker's log shows %q in plain text", secret)
		}
	}
}

func TestPauseResumeAndAbort(t *testing.T) {
	startWorker(t, 3)
	objs := migratetest.Small("p/", 300, 2048)
	srcBucket := migratetest.Bucket(t, env.Store, "pr-src")
	migratetest.Seed(t, env.Store, srcBucket, objs)

	// Slow enough to catch in the middle: one object at a time, pages of 10.
	slow := func(job, dstBucket string) contract.JobInput {
		in := jobInput(t, job, source(srcBucket), dest2(env.MinIO2.Endpoint, dstBucket, ""))
		in.Settings.PageSize, in.Settings.PagesInFlight, in.Settings.Concurrency = 10, 1, 1
		return in
	}
	dstBucket := migratetest.Bucket(t, env.Store2, "pr-dst")
	job := fmt.Sprintf("pause-%d", time.Now().UnixNano())
	run := start(t, slow(job, dstBucket))
	eventually(t, time.Minute, "the job copies", func() bool { return status(t, job).Copied > 0 })
	if _, err := update(job, contract.PauseUpdate); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, "pages in flight finish", func() bool { return status(t, job).PagesInFlight == 0 })
	paused := status(t, job)
	time.Sleep(1500 * time.Millisecond) // a paused job starts nothing new
	if now := status(t, job); now.State != contract.StatePaused || now.Done() != paused.Done() || now.Listed != paused.Listed {
		t.Fatalf("while paused: %+v then %+v", paused, now)
	}
	if paused.Done() == int64(len(objs)) {
		t.Fatal("the job finished before the pause: nothing was tested")
	}
	if _, err := update(job, contract.PauseUpdate); err == nil || !strings.Contains(err.Error(), "only a running job") {
		t.Fatalf("pausing a paused job: %v", err)
	}
	if _, err := update(job, contract.ResumeUpdate); err != nil {
		t.Fatal(err)
	}
	st, err := wait(t, run)
	if err != nil || st.State != contract.StateCompleted || st.Copied != int64(len(objs)) {
		t.Fatalf("after resume: %+v %v", st, err)
	}

	// Abort: pages in flight stop and report exactly what they copied.
	dstBucket = migratetest.Bucket(t, env.Store2, "ab-dst")
	job = fmt.Sprintf("abort-%d", time.Now().UnixNano())
	run = start(t, slow(job, dstBucket))
	eventually(t, time.Minute, "the job copies", func() bool { return status(t, job).Copied > 0 })
	if _, err := update(job, contract.AbortUpdate); err != nil {
		t.Fatal(err)
	}
	st, err = wait(t, run)
	if err != nil || st.State != contract.StateAborted {
		t.Fatalf("aborted: %+v %v", st, err)
	}
	there := migratetest.List(t, env.Store2, dstBucket, "")
	if st.Copied != int64(len(there)) || st.Copied == int64(len(objs)) {
		t.Fatalf("aborted job counts %d copied; the destination holds %d of %d", st.Copied, len(there), len(objs))
	}
	if _, err := update(job, contract.ResumeUpdate); err == nil {
		t.Fatal("an aborted job accepted resume")
	}
}

func update(job, name string) (contract.Status, error) {
	var st contract.Status
	err := cli.Update(context.Background(), env.Client, client.UpdateWorkflowOptions{WorkflowID: contract.MigrationWorkflowID(job), UpdateName: name}, &st)
	return st, err
}

func TestContinueAsNewAndThrottling(t *testing.T) {
	startWorker(t, 3)
	objs := migratetest.Small("c/", 500, 1024)
	srcBucket := migratetest.Bucket(t, env.Store, "can-src")
	migratetest.Seed(t, env.Store, srcBucket, objs)
	dstBucket := migratetest.Bucket(t, env.Store2, "can-dst")
	proxy := migratetest.NewProxy(env.MinIO2.Endpoint)
	defer proxy.Close()
	in := jobInput(t, fmt.Sprintf("can-%d", time.Now().UnixNano()), source(srcBucket), dest2(proxy.Endpoint, dstBucket, ""))
	// 50 pages with a history budget of 150 events: several runs.
	in.Settings.PageSize, in.Settings.HistoryBudget = 10, 150
	proxy.Throttle(100) // and the destination says SlowDown to every other request for a while
	run := start(t, in)
	st, err := wait(t, run)
	if err != nil {
		t.Fatal(err)
	}
	if st.ContinuedAsNew < 2 || st.Listed != 500 || st.Copied != 500 || st.Failed != 0 {
		t.Fatalf("status %+v", st)
	}
	if st.Throttled == 0 || proxy.Throttled() == 0 {
		t.Fatalf("throttling not seen: job %d, proxy %d", st.Throttled, proxy.Throttled())
	}
	onceEach(t, proxy, dstBucket, in.KeyMap(), objs)
}

func TestAccountRunsAtMostItsLimit(t *testing.T) {
	startWorker(t, 1)
	objs := migratetest.Small("q/", 60, 512)
	srcBucket := migratetest.Bucket(t, env.Store, "acc-src")
	migratetest.Seed(t, env.Store, srcBucket, objs)
	account := fmt.Sprintf("acct-%d", time.Now().UnixNano())
	var runs []client.WorkflowRun
	var names []string
	for i := range 2 {
		job := fmt.Sprintf("%s-%d", account, i)
		in := jobInput(t, job, source(srcBucket), dest2(env.MinIO2.Endpoint, migratetest.Bucket(t, env.Store2, "acc-dst"), ""))
		in.Account = account
		in.Settings.PageSize, in.Settings.PagesInFlight, in.Settings.Concurrency = 5, 1, 1
		runs = append(runs, start(t, in))
		names = append(names, job)
		if i == 0 {
			eventually(t, time.Minute, "the first job runs", func() bool { return status(t, job).State == contract.StateRunning })
		}
	}
	eventually(t, 30*time.Second, "the second job waits in line", func() bool {
		s := status(t, names[1])
		return s.State == contract.StateQueued && status(t, names[0]).State == contract.StateRunning
	})
	for _, r := range runs {
		st, err := wait(t, r)
		if err != nil || st.Copied != int64(len(objs)) {
			t.Fatalf("%+v %v", st, err)
		}
	}
}

var payloadData = regexp.MustCompile(`"data":"([A-Za-z0-9+/=]+)"`)

// decodePayloads appends the decoded bytes of every payload in a history's
// JSON (payloads are base64 there), so a search sees what they carry.
func decodePayloads(history string) string {
	var b strings.Builder
	b.WriteString(history)
	for _, m := range payloadData.FindAllStringSubmatch(history, -1) {
		if data, err := base64.StdEncoding.DecodeString(m[1]); err == nil {
			b.WriteString("\n")
			b.Write(data)
		}
	}
	return b.String()
}
