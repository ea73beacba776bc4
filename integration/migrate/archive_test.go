package migrate_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"go.temporal.io/api/common/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"

	"github.com/edgeflow/edgeflow/internal/migrate/migratetest"
	"github.com/edgeflow/edgeflow/workflows/migrate/contract"
)

// A finished job answers status, report and list --all the same once its
// workflow is gone (as after the namespace's retention): from the summary
// it left in the job store.
func TestFinishedJobOutlivesItsWorkflow(t *testing.T) {
	startWorker(t, 3)
	srcBucket := migratetest.Bucket(t, env.Store, "arch-src")
	migratetest.Seed(t, env.Store, srcBucket, migratetest.Small("a/", 60, 512))
	dstBucket := migratetest.Bucket(t, env.Store2, "arch-dst")
	job := fmt.Sprintf("arch-%d", time.Now().UnixNano())
	account := job // its own account, so its list holds this job only
	if _, stderr, code := migrateCLI(t, nil, append([]string{"start", "--job", job, "--json"}, jobArgs(srcBucket, dstBucket, "--account", account)...)...); code != 0 {
		t.Fatalf("start exited %d\n%s", code, stderr)
	}

	type answers struct {
		status map[string]any
		report string
		rows   []map[string]any
	}
	ask := func() answers {
		t.Helper()
		var a answers
		stdout, stderr, code := migrateCLI(t, nil, "status", job, "--json")
		if code != 0 {
			t.Fatalf("status exited %d\n%s", code, stderr)
		}
		oneJSON(t, stdout, &a.status)
		if a.report, stderr, code = migrateCLI(t, nil, "report", job, "--format", "jsonl"); code != 0 {
			t.Fatalf("report exited %d\n%s", code, stderr)
		}
		stdout, stderr, code = migrateCLI(t, nil, "list", "--all", "--json", "--account", account)
		if code != 0 {
			t.Fatalf("list --all exited %d\n%s", code, stderr)
		}
		oneJSON(t, stdout, &a.rows)
		return a
	}
	before := ask()
	if before.status["state"] != contract.StateCompleted || before.status["copied"] != float64(60) {
		t.Fatalf("status before: %v", before.status)
	}
	// The job has a workflow and a summary: it is listed once, live.
	if len(before.rows) != 1 || before.rows[0]["job"] != job || before.rows[0]["archived"] != nil {
		t.Fatalf("list --all before: %v", before.rows)
	}

	// Retention, now: the workflow execution is deleted.
	id := contract.MigrationWorkflowID(job)
	if _, err := env.Client.WorkflowService().DeleteWorkflowExecution(context.Background(), &workflowservice.DeleteWorkflowExecutionRequest{
		Namespace: env.Temporal.Namespace, WorkflowExecution: &common.WorkflowExecution{WorkflowId: id},
	}); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, "the deleted workflow is NotFound", func() bool {
		_, err := env.Client.DescribeWorkflow(context.Background(), id, "")
		var notFound *serviceerror.NotFound
		return errors.As(err, &notFound)
	})
	// The visibility store learns of the deletion a moment later; until
	// then list shows the job live.
	var after answers
	eventually(t, time.Minute, "list --all shows the job archived", func() bool {
		after = ask()
		return len(after.rows) == 1 && after.rows[0]["archived"] == true
	})

	if !reflect.DeepEqual(after.status, before.status) {
		t.Errorf("status --json changed:\nbefore %v\nafter  %v", before.status, after.status)
	}
	if after.report != before.report || len(after.report) == 0 {
		t.Errorf("report changed:\nbefore %q\nafter  %q", before.report, after.report)
	}
	b, a := before.rows[0], after.rows[0]
	for _, k := range []string{"job", "state", "account", "summary", "closed"} {
		if !reflect.DeepEqual(a[k], b[k]) {
			t.Errorf("list --all %s: before %v, after %v", k, b[k], a[k])
		}
	}
	// started: the workflow's start time before, the job's own record of
	// it after (taken in its first workflow task).
	bs, _ := time.Parse(time.RFC3339Nano, fmt.Sprint(b["started"]))
	as, _ := time.Parse(time.RFC3339Nano, fmt.Sprint(a["started"]))
	if d := as.Sub(bs); d < 0 || d > 10*time.Second {
		t.Errorf("list --all started: before %v, after %v", bs, as)
	}

	// A job that never existed is still bad input.
	if _, stderr, code := migrateCLI(t, nil, "status", "no-such-"+job); code != 2 {
		t.Errorf("status of an unknown job exited %d: %s", code, stderr)
	}
}
