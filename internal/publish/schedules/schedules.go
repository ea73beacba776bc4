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
	return Change(ctx, h, &every, nil)
}

// Pause is a pause or an unpause with its note.
type Pause struct {
	Paused bool
	Note   string
}

// Change sets the interval (when every is not nil) and pauses or unpauses
// (when p is not nil) in one update. An update carries the schedule's whole
// state, so a pause or unpause sent as its own request beside updates may
// be applied first and then undone by the state an update read before it:
// every change of state goes through here.
func Change(ctx context.Context, h client.ScheduleHandle, every *time.Duration, p *Pause) error {
	return h.Update(ctx, client.ScheduleUpdateOptions{
		DoUpdate: func(in client.ScheduleUpdateInput) (*client.ScheduleUpdate, error) {
			s := in.Description.Schedule
			if p != nil {
				state := client.ScheduleState{}
				if s.State != nil {
					state = *s.State
				}
				state.Paused, state.Note = p.Paused, p.Note
				s.State = &state
			}
			if every == nil {
				return &client.ScheduleUpdate{Schedule: &s}, nil
			}
			s.Spec = &client.ScheduleSpec{Intervals: []client.ScheduleIntervalSpec{{Every: *every}}}
			s.Action = actionOf(h.GetID())
			if s.Policy == nil {
				s.Policy = &client.SchedulePolicies{}
			}
			s.Policy.Overlap = enums.SCHEDULE_OVERLAP_POLICY_SKIP
			return &client.ScheduleUpdate{Schedule: &s}, nil
		},
	})
}

// Description is a schedule as `schedule describe --json` shows it.
type Description struct {
	ID      string      `json:"id"`
	Paused  bool        `json:"paused"`
	Note    string      `json:"note,omitempty"`
	Every   []string    `json:"every"`
	Next    []time.Time `json:"next"`
	Recent  []Recent    `json:"recent"`
	Running []string    `json:"running"`
	Actions int         `json:"actions"`
	Skipped int         `json:"skippedOverlaps"`
}

// Recent is one of a schedule's recent runs.
type Recent struct {
	WorkflowID string    `json:"workflowId"`
	Scheduled  time.Time `json:"scheduled"`
	Started    time.Time `json:"started"`
}

// Describe reads the schedule h.
func Describe(ctx context.Context, h client.ScheduleHandle) (Description, error) {
	d, err := h.Describe(ctx)
	if err != nil {
		return Description{}, err
	}
	out := Description{ID: h.GetID(), Paused: d.Schedule.State.Paused, Note: d.Schedule.State.Note, Next: d.Info.NextActionTimes,
		Actions: d.Info.NumActions, Skipped: d.Info.NumActionsSkippedOverlap}
	if spec := d.Schedule.Spec; spec != nil {
		for _, iv := range spec.Intervals {
			out.Every = append(out.Every, iv.Every.String())
		}
	}
	for _, r := range d.Info.RecentActions {
		rc := Recent{Scheduled: r.ScheduleTime, Started: r.ActualTime}
		if r.StartWorkflowResult != nil {
			rc.WorkflowID = r.StartWorkflowResult.WorkflowID
		}
		out.Recent = append(out.Recent, rc)
	}
	for _, r := range d.Info.RunningWorkflows {
		out.Running = append(out.Running, r.WorkflowID)
	}
	return out, nil
}

// MinEvery is the shortest interval between scheduled checks.
const MinEvery = time.Minute
