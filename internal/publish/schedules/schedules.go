// Package schedules creates and updates the Temporal Schedule that starts
// PackageUpdates; shared by the schedule starter and `make run`.
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

// Upsert creates the schedule, or updates its interval and action when it
// exists. created says which happened.
func Upsert(ctx context.Context, c client.Client, id string, every time.Duration) (created bool, err error) {
	_, err = c.ScheduleClient().Create(ctx, client.ScheduleOptions{
		ID:      id,
		Spec:    client.ScheduleSpec{Intervals: []client.ScheduleIntervalSpec{{Every: every}}},
		Action:  Action(),
		Overlap: enums.SCHEDULE_OVERLAP_POLICY_SKIP,
		// A missed run is not worth catching up: the next run sees every version anyway.
		CatchupWindow: time.Minute,
		Note:          "checks the catalog for new versions",
	})
	if errors.Is(err, temporal.ErrScheduleAlreadyRunning) {
		return false, Update(ctx, c.ScheduleClient().GetHandle(ctx, id), every)
	}
	return err == nil, err
}

// Update sets the interval and action of an existing schedule.
func Update(ctx context.Context, h client.ScheduleHandle, every time.Duration) error {
	return h.Update(ctx, client.ScheduleUpdateOptions{
		DoUpdate: func(in client.ScheduleUpdateInput) (*client.ScheduleUpdate, error) {
			s := in.Description.Schedule
			s.Spec = &client.ScheduleSpec{Intervals: []client.ScheduleIntervalSpec{{Every: every}}}
			s.Action = Action()
			if s.Policy == nil {
				s.Policy = &client.SchedulePolicies{}
			}
			s.Policy.Overlap = enums.SCHEDULE_OVERLAP_POLICY_SKIP
			return &client.ScheduleUpdate{Schedule: &s}, nil
		},
	})
}
