// Package schedules creates and updates Publish's Temporal Schedules: the
// one that starts PackageUpdates and the one that starts AuditCatalog
// (catalog-audit); shared by the schedule starter and `make run`.
package schedules

import (
	"context"
	"errors"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/edgeflow/edgeflow/workflows/publish/contract"
)

// Action is what each scheduled run starts.
func Action() *client.ScheduleWorkflowAction {
	return &client.ScheduleWorkflowAction{
		ID:        "package-updates-run",
		Workflow:  contract.WorkflowTypePackageUpdates,
		Args:      []any{contract.UpdatesInput{}},
		TaskQueue: contract.TaskQueue,
		// Each run's details show its progress; the summary says what it is.
		StaticSummary: "Scheduled check of the catalog for new versions",
	}
}

// DefaultAuditEvery is how often the catalog-audit Schedule runs.
const DefaultAuditEvery = 24 * time.Hour

// AuditAction is what each run of the catalog-audit Schedule starts: by
// default a 5% sample of published files, with repair on and withdrawal
// off (a full audit is the starter's, on demand).
func AuditAction() *client.ScheduleWorkflowAction {
	return &client.ScheduleWorkflowAction{
		ID:            "catalog-audit-run",
		Workflow:      contract.WorkflowTypeAuditCatalog,
		Args:          []any{contract.AuditInput{SamplePercent: 5, Repair: true}},
		TaskQueue:     contract.TaskQueue,
		StaticSummary: "Scheduled audit: a 5% sample of published files on both stores, repairing",
	}
}

// actionOf is the action of the schedule id: the audit's, or the check's.
func actionOf(id string) *client.ScheduleWorkflowAction {
	if id == contract.AuditScheduleID {
		return AuditAction()
	}
	return Action()
}

// Upsert creates the schedule, or updates its interval and action when it
// exists (a paused schedule stays paused). created says which happened.
func Upsert(ctx context.Context, c client.Client, id string, every time.Duration) (created bool, err error) {
	note := "checks the catalog for new versions"
	if id == contract.AuditScheduleID {
		note = "audits published files on both stores and repairs them"
	}
	_, err = c.ScheduleClient().Create(ctx, client.ScheduleOptions{
		ID:      id,
		Spec:    client.ScheduleSpec{Intervals: []client.ScheduleIntervalSpec{{Every: every}}},
		Action:  actionOf(id),
		Overlap: enums.SCHEDULE_OVERLAP_POLICY_SKIP,
		// A missed run is not worth catching up: the next run sees every version anyway.
		CatchupWindow: time.Minute,
		Note:          note,
	})
	if errors.Is(err, temporal.ErrScheduleAlreadyRunning) {
		return false, Update(ctx, c.ScheduleClient().GetHandle(ctx, id), every)
	}
	return err == nil, err
}

// Update sets the interval and action of an existing schedule; its state
// (paused or not, and the note) is kept.
func Update(ctx context.Context, h client.ScheduleHandle, every time.Duration) error {
	return h.Update(ctx, client.ScheduleUpdateOptions{
		DoUpdate: func(in client.ScheduleUpdateInput) (*client.ScheduleUpdate, error) {
			s := in.Description.Schedule
			s.Spec = &client.ScheduleSpec{Intervals: []client.ScheduleIntervalSpec{{Every: every}}}
			s.Action = actionOf(h.GetID())
			if s.Policy == nil {
				s.Policy = &client.SchedulePolicies{}
			}
			s.Policy.Overlap = enums.SCHEDULE_OVERLAP_POLICY_SKIP
			return &client.ScheduleUpdate{Schedule: &s}, nil
		},
	})
}
