package integration

import (
	"testing"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/edgeflow/edgeflow/internal/publish/schedules"
	"github.com/edgeflow/edgeflow/internal/testenv"
	"github.com/edgeflow/edgeflow/workflows/publish/contract"
)

// The catalog-audit Schedule `make run` creates: daily, a 5% sample with
// repair on and withdrawal off; created again, an operator's pause stays.
func TestAuditScheduleDefaultsAndKeepsPause(t *testing.T) {
	testenv.Require(t, env)
	ctx := testContext(t)
	created, err := schedules.Upsert(ctx, env.Client, contract.AuditScheduleID, schedules.DefaultAuditEvery)
	if err != nil || !created {
		t.Fatalf("create: %v, %v", created, err)
	}
	h := env.Client.ScheduleClient().GetHandle(ctx, contract.AuditScheduleID)
	t.Cleanup(func() { _ = h.Delete(ctx) })
	if err := h.Pause(ctx, client.SchedulePauseOptions{Note: "maintenance"}); err != nil {
		t.Fatal(err)
	}
	if created, err := schedules.Upsert(ctx, env.Client, contract.AuditScheduleID, schedules.DefaultAuditEvery); err != nil || created {
		t.Fatalf("upsert of an existing schedule: created %v, %v", created, err)
	}
	eventually(t, 30*time.Second, "the schedule is the audit's, and still paused", func() (bool, string) {
		d, err := h.Describe(ctx)
		if err != nil {
			return false, err.Error()
		}
		a, ok := d.Schedule.Action.(*client.ScheduleWorkflowAction)
		if !ok || a.Workflow != contract.WorkflowTypeAuditCatalog || len(a.Args) != 1 {
			return false, "action " + a.ID
		}
		var in contract.AuditInput
		p, _ := a.Args[0].(*commonpb.Payload)
		if err := converter.GetDefaultDataConverter().FromPayload(p, &in); err != nil {
			return false, err.Error()
		}
		iv := d.Schedule.Spec.Intervals
		return d.Schedule.State.Paused && in.SamplePercent == 5 && in.Repair && !in.WithdrawBroken &&
				len(iv) == 1 && iv[0].Every == 24*time.Hour,
			"paused " + map[bool]string{true: "yes", false: "no"}[d.Schedule.State.Paused]
	})
}
