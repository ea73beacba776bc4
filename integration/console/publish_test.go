package console

import (
	"context"
	"testing"
	"time"

	"github.com/edgeflow/edgeflow/internal/publish/schedules"
	"github.com/edgeflow/edgeflow/workflows/publish/contract"
)

// TestPublishRequest starts what the publish starter starts: a check of a
// package, or one version, under the starter's workflow IDs. (No publish
// worker runs here: the runs are only started, and terminated after.)
func TestPublishRequest(t *testing.T) {
	a := start(t)
	var run struct {
		Name, Version, WorkflowID, RunID string
	}
	a.fails(a.do("POST", "/api/v1/libraries/it-lib/publish", "", ""), 401, "Authorization")
	a.fails(a.do("POST", "/api/v1/libraries/it-lib/publish", roSecret, ""), 403, "read-only")
	a.fails(a.do("POST", "/api/v1/libraries/it%20lib/publish", rwSecret, ""), 400, "name")
	a.fails(a.do("POST", "/api/v1/libraries/it-lib/publish", rwSecret, `{"version":"1.0/../x"}`), 400, "version")
	a.fails(a.do("POST", "/api/v1/libraries/it-lib/publish", rwSecret, `{"versoin":"1.0.0"}`), 400, "versoin")

	a.ok(a.do("POST", "/api/v1/libraries/it-lib/publish", rwSecret, ""), 202, &run)
	if run.WorkflowID != contract.PackageUpdatesWorkflowID("it-lib") || run.RunID == "" {
		t.Fatalf("a check: %+v", run)
	}
	a.ok(a.do("POST", "/api/v1/libraries/it-lib/publish", rwSecret, `{"version":"1.2.3"}`), 202, &run)
	if run.WorkflowID != contract.PublishVersionWorkflowID("it-lib", "1.2.3") || run.Version != "1.2.3" {
		t.Fatalf("a version: %+v", run)
	}
	first := run.RunID
	// A second request follows the run under that ID.
	a.ok(a.do("POST", "/api/v1/libraries/it-lib/publish", rwSecret, `{"version":"1.2.3"}`), 202, &run)
	if run.RunID != first {
		t.Errorf("a second request started run %s, not the running %s", run.RunID, first)
	}
	for id, typ := range map[string]string{contract.PackageUpdatesWorkflowID("it-lib"): contract.WorkflowTypePackageUpdates,
		contract.PublishVersionWorkflowID("it-lib", "1.2.3"): contract.WorkflowTypePublishVersion} {
		d, err := env.Client.DescribeWorkflow(context.Background(), id, "")
		if err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		if info := d.RawResponse.GetWorkflowExecutionInfo(); info.GetTaskQueue() != contract.TaskQueue || info.GetType().GetName() != typ {
			t.Errorf("%s is a %s on %q, want a %s on %q", id, info.GetType().GetName(), info.GetTaskQueue(), typ, contract.TaskQueue)
		}
		_ = env.Client.TerminateWorkflow(context.Background(), id, "", "test over")
	}
}

// TestScheduleAPI reads and changes the package-update schedule: the
// interval, a pause with its note, a trigger; 404 before it exists.
func TestScheduleAPI(t *testing.T) {
	a := start(t)
	ctx := context.Background()
	a.fails(a.do("GET", "/api/v1/schedule", roSecret, ""), 404, "schedule")
	if _, err := schedules.Upsert(ctx, env.Client, contract.UpdatesScheduleID, 10*time.Minute); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.ScheduleClient().GetHandle(ctx, contract.UpdatesScheduleID).Delete(ctx) })

	var s schedules.Description
	a.ok(a.do("GET", "/api/v1/schedule", roSecret, ""), 200, &s)
	if s.ID != contract.UpdatesScheduleID || s.Paused || len(s.Every) != 1 || s.Every[0] != "10m0s" {
		t.Fatalf("schedule %+v", s)
	}
	a.fails(a.do("PATCH", "/api/v1/schedule", roSecret, `{"paused":true}`), 403, "read-only")
	a.fails(a.do("PATCH", "/api/v1/schedule", rwSecret, `{"every":"10s"}`), 400, "every")
	a.fails(a.do("PATCH", "/api/v1/schedule", rwSecret, `{"every":"often"}`), 400, "every")
	a.fails(a.do("PATCH", "/api/v1/schedule", rwSecret, `{"note":"why"}`), 400, "note")
	a.fails(a.do("PATCH", "/api/v1/schedule", rwSecret, `{"pause":true}`), 400, "pause")

	a.ok(a.do("PATCH", "/api/v1/schedule", rwSecret, `{"every":"30m","paused":true,"note":"registry maintenance"}`), 200, &s)
	if !s.Paused || s.Note != "registry maintenance" || len(s.Every) != 1 || s.Every[0] != "30m0s" {
		t.Fatalf("after the change: %+v", s)
	}
	a.ok(a.do("PATCH", "/api/v1/schedule", rwSecret, `{"paused":false,"trigger":true}`), 200, &s)
	if s.Paused {
		t.Fatalf("after unpause: %+v", s)
	}
	// The trigger shows as a run of the schedule once Temporal has taken it.
	deadline := time.Now().Add(30 * time.Second)
	for s.Actions == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the trigger started no run: %+v", s)
		}
		time.Sleep(200 * time.Millisecond)
		a.ok(a.do("GET", "/api/v1/schedule", roSecret, ""), 200, &s)
	}
	for _, id := range s.Running {
		_ = env.Client.TerminateWorkflow(ctx, id, "", "test over")
	}
}
