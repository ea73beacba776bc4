package jobclient

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"

	"github.com/edgeflow/edgeflow/workflows/migrate/contract"
)

// A job's syncs run its copy again, between the same stores: their input
// is read from the job's own history (its stores, pinned addresses and
// sealed credentials), never taken from whoever asks for the sync. Once
// retention has removed the job's workflow, the last sync run's history
// serves instead (it holds the same stores).

// SyncBase is the input a job's syncs start from: its last run's, with no
// state. A job that still runs is refused (a RefusedError): it is synced
// once it has ended.
func SyncBase(ctx context.Context, c client.Client, job string) (contract.JobInput, error) {
	id := contract.MigrationWorkflowID(job)
	d, err := c.DescribeWorkflow(ctx, id, "")
	if err == nil && d.WorkflowCloseTime == nil && endingRun(ctx, c, job, id) {
		d, err = c.DescribeWorkflow(ctx, id, "")
	}
	switch {
	case err == nil && d.WorkflowCloseTime == nil:
		return contract.JobInput{}, &RefusedError{fmt.Sprintf("job %s is still running: sync it once it has ended", job)}
	case err == nil:
		return baseOf(LastInput(ctx, c, id, d.WorkflowExecution.RunID))
	case !NotFound(err):
		return contract.JobInput{}, err
	}
	last, lerr := lastSyncRun(ctx, c, job)
	if lerr != nil {
		return contract.JobInput{}, lerr
	}
	if last == "" {
		return contract.JobInput{}, fmt.Errorf("job %s: no workflow of it or of a sync of it is left to take its stores from (after retention, start it again with migrate start --job %s): %w", job, job, err)
	}
	return baseOf(LastInput(ctx, c, last, ""))
}

// endingWait bounds how long a sync waits for a job whose status already
// says it ended to close: its run finishes its report after that.
const endingWait = 30 * time.Second

// endingRun reports whether the job's open run already says it has ended
// (status polled as "ended" is not yet a closed workflow), after waiting
// up to endingWait for it to close.
func endingRun(ctx context.Context, c client.Client, job, id string) bool {
	st, err := QueryStatus(ctx, c, job)
	if err != nil || !contract.Ended(st.State) {
		return false
	}
	wctx, cancel := context.WithTimeout(ctx, endingWait)
	defer cancel()
	_ = c.GetWorkflow(wctx, id, "").Get(wctx, nil)
	return true
}

func baseOf(in contract.JobInput, err error) (contract.JobInput, error) {
	in.Resume, in.Redrive, in.Sync = nil, nil, nil
	return in, err
}

// syncQuery finds a job's sync runs in the visibility store (the job's id
// is a CheckJobID id: no quote can end the string).
func syncQuery(job string) string {
	return fmt.Sprintf("WorkflowType = '%s' AND %s = '%s'", contract.WorkflowTypeMigrationSync, contract.JobKey.GetName(), job)
}

// lastSyncRun is the workflow ID of the job's newest sync run ("" none).
func lastSyncRun(ctx context.Context, c client.Client, job string) (string, error) {
	resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: syncQuery(job), PageSize: 1})
	if err != nil {
		return "", fmt.Errorf("find the sync runs of job %s: %w", job, err)
	}
	if e := resp.GetExecutions(); len(e) > 0 {
		return e[0].GetExecution().GetWorkflowId(), nil
	}
	return "", nil
}

// StartSync starts one sync run of the job whose base input is in (see
// SyncBase), now.
func StartSync(ctx context.Context, c client.Client, base contract.JobInput, run contract.SyncRun) (client.WorkflowRun, error) {
	in := contract.SyncInput(base, run)
	opts := syncAction(in)
	return c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                    contract.MigrationSyncWorkflowID(in.Job, time.Now()),
		TaskQueue:             contract.TaskQueue,
		WorkflowIDReusePolicy: enums.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		TypedSearchAttributes: opts.TypedSearchAttributes,
		Memo:                  opts.Memo,
		StaticSummary:         opts.StaticSummary,
		StaticDetails:         opts.StaticDetails,
	}, contract.WorkflowTypeMigrationSync, in)
}

// syncAction is how a sync run of in starts: by StartSync now, or by the
// job's Schedule.
func syncAction(in contract.JobInput) *client.ScheduleWorkflowAction {
	what := "sync"
	switch {
	case in.Sync.Cutover:
		what = "cutover sync"
	case in.Sync.DeleteExtraneous:
		what = "sync, deleting what the source lacks,"
	}
	return &client.ScheduleWorkflowAction{
		ID:        contract.MigrationSyncScheduleID(in.Job),
		Workflow:  contract.WorkflowTypeMigrationSync,
		Args:      []any{in},
		TaskQueue: contract.TaskQueue,
		TypedSearchAttributes: temporal.NewSearchAttributes(contract.JobKey.ValueSet(in.Job),
			contract.SourceBucketKey.ValueSet(in.Source.Bucket), contract.DestBucketKey.ValueSet(in.Dest.Bucket)),
		Memo:          map[string]any{contract.MemoState: contract.StateQueued, contract.MemoAccount: in.Account, contract.MemoSummary: summary(in)},
		StaticSummary: fmt.Sprintf("Migrate %s of job %s: %s", what, in.Job, summary(in)),
		StaticDetails: staticDetails(in),
	}
}

// ScheduleSyncs creates the job's sync Schedule (a run every every; runs
// that would overlap are skipped), or sets the interval and request of the
// one it has (a paused Schedule stays paused). created says which.
func ScheduleSyncs(ctx context.Context, c client.Client, base contract.JobInput, run contract.SyncRun, every time.Duration) (created bool, err error) {
	action := syncAction(contract.SyncInput(base, run))
	id := contract.MigrationSyncScheduleID(base.Job)
	_, err = c.ScheduleClient().Create(ctx, client.ScheduleOptions{
		ID:            id,
		Spec:          client.ScheduleSpec{Intervals: []client.ScheduleIntervalSpec{{Every: every}}},
		Action:        action,
		Overlap:       enums.SCHEDULE_OVERLAP_POLICY_SKIP,
		CatchupWindow: time.Minute, // a missed sync is not worth catching up: the next one copies it all
		Note:          "syncs job " + base.Job,
	})
	if !errors.Is(err, temporal.ErrScheduleAlreadyRunning) {
		return err == nil, err
	}
	return false, c.ScheduleClient().GetHandle(ctx, id).Update(ctx, client.ScheduleUpdateOptions{
		DoUpdate: func(in client.ScheduleUpdateInput) (*client.ScheduleUpdate, error) {
			s := in.Description.Schedule
			s.Spec = &client.ScheduleSpec{Intervals: []client.ScheduleIntervalSpec{{Every: every}}}
			s.Action = action
			return &client.ScheduleUpdate{Schedule: &s}, nil
		},
	})
}

// The controls of a job's sync Schedule.
const (
	SchedulePause   = "pause"
	ScheduleResume  = "resume"
	ScheduleTrigger = "trigger"
	ScheduleRemove  = "remove"
)

// ControlSchedule pauses, resumes, triggers (a run now) or removes the job's
// sync Schedule. A job without one is a serviceerror.NotFound.
func ControlSchedule(ctx context.Context, c client.Client, job, action string) error {
	h := c.ScheduleClient().GetHandle(ctx, contract.MigrationSyncScheduleID(job))
	switch action {
	case SchedulePause:
		return setPaused(ctx, h, true, "paused by migrate sync --pause")
	case ScheduleResume:
		return setPaused(ctx, h, false, "")
	case ScheduleTrigger:
		return h.Trigger(ctx, client.ScheduleTriggerOptions{Overlap: enums.SCHEDULE_OVERLAP_POLICY_SKIP})
	case ScheduleRemove:
		return h.Delete(ctx)
	}
	return fmt.Errorf("schedule action %q: use pause, resume, trigger or remove", action)
}

// setPaused pauses or unpauses within an update of the Schedule's whole
// state (as internal/publish/schedules does), so it cannot be undone by an
// update that read the state before it.
func setPaused(ctx context.Context, h client.ScheduleHandle, paused bool, note string) error {
	return h.Update(ctx, client.ScheduleUpdateOptions{
		DoUpdate: func(in client.ScheduleUpdateInput) (*client.ScheduleUpdate, error) {
			s := in.Description.Schedule
			state := client.ScheduleState{}
			if s.State != nil {
				state = *s.State
			}
			state.Paused, state.Note = paused, note
			s.State = &state
			return &client.ScheduleUpdate{Schedule: &s}, nil
		},
	})
}

// SyncSchedule is a job's sync Schedule as `migrate sync --json` shows it.
type SyncSchedule struct {
	Job        string `json:"job"`
	ScheduleID string `json:"scheduleId"`
	Every      string `json:"every,omitempty"`
	Paused     bool   `json:"paused"`
	// DeleteExtraneous: its runs delete what the source lacks.
	DeleteExtraneous bool     `json:"deleteExtraneous"`
	Running          []string `json:"running"`
	Next             []string `json:"next,omitempty"`
}

// DescribeSchedule reads the job's sync Schedule (NotFound: none).
func DescribeSchedule(ctx context.Context, c client.Client, job string) (SyncSchedule, error) {
	id := contract.MigrationSyncScheduleID(job)
	out := SyncSchedule{Job: job, ScheduleID: id, Running: []string{}}
	d, err := c.ScheduleClient().GetHandle(ctx, id).Describe(ctx)
	if err != nil {
		return out, err
	}
	s := d.Schedule
	if s.State != nil {
		out.Paused = s.State.Paused
	}
	if s.Spec != nil && len(s.Spec.Intervals) > 0 {
		out.Every = s.Spec.Intervals[0].Every.String()
	}
	if a, ok := s.Action.(*client.ScheduleWorkflowAction); ok && len(a.Args) == 1 {
		// Only the run's request is read; its credentials stay sealed.
		var in contract.JobInput
		if p, ok := a.Args[0].(*commonpb.Payload); ok && decodePayloads(&commonpb.Payloads{Payloads: []*commonpb.Payload{p}}, &in) == nil && in.Sync != nil {
			out.DeleteExtraneous = in.Sync.DeleteExtraneous
		}
	}
	for _, r := range d.Info.RunningWorkflows {
		out.Running = append(out.Running, r.WorkflowID)
	}
	for _, t := range d.Info.NextActionTimes {
		out.Next = append(out.Next, t.UTC().Format(time.RFC3339))
	}
	return out, nil
}

// AwaitSyncs waits for the job's sync runs in flight: those its Schedule
// started and those the visibility store knows to run.
func AwaitSyncs(ctx context.Context, c client.Client, job string) error {
	running := map[string]bool{}
	if s, err := DescribeSchedule(ctx, c, job); err == nil {
		for _, id := range s.Running {
			running[id] = true
		}
	} else if !NotFound(err) {
		return err
	}
	resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: syncQuery(job) + " AND ExecutionStatus = 'Running'"})
	if err != nil {
		return fmt.Errorf("find the sync runs of job %s: %w", job, err)
	}
	for _, e := range resp.GetExecutions() {
		running[e.GetExecution().GetWorkflowId()] = true
	}
	for id := range running {
		// How a run ends is its own report's; here it only has to end.
		if err := c.GetWorkflow(ctx, id, "").Get(ctx, nil); err != nil && ctx.Err() != nil {
			return ctx.Err()
		}
	}
	return nil
}

// Cutover pauses the job's sync Schedule (if it has one), waits for the
// syncs in flight, and starts the last sync, which verifies every object
// and ends with the verdict. paused says a Schedule was paused.
func Cutover(ctx context.Context, c client.Client, job string, deleteExtraneous bool) (run client.WorkflowRun, paused bool, err error) {
	base, err := SyncBase(ctx, c, job)
	if err != nil {
		return nil, false, err
	}
	if base.DryRun {
		return nil, false, &RefusedError{fmt.Sprintf("job %s is a dry run: it copied nothing, so there is nothing to cut over to", job)}
	}
	switch err := setPaused(ctx, c.ScheduleClient().GetHandle(ctx, contract.MigrationSyncScheduleID(job)), true, "paused by migrate cutover"); {
	case err == nil:
		paused = true
	case !NotFound(err):
		return nil, false, fmt.Errorf("pause the sync schedule of job %s: %w", job, err)
	}
	if err := AwaitSyncs(ctx, c, job); err != nil {
		return nil, paused, err
	}
	run, err = StartSync(ctx, c, base, contract.SyncRun{Cutover: true, DeleteExtraneous: deleteExtraneous})
	return run, paused, err
}

// SyncRow is one sync run of a job, as its history lists it: its state
// from its memo, and once it ended its report.
type SyncRow struct {
	WorkflowID string               `json:"workflowId"`
	State      string               `json:"state"`
	Started    time.Time            `json:"started"`
	Closed     bool                 `json:"closed"`
	Report     *contract.SyncReport `json:"report,omitempty"`
}

// Cutover says whether the run was a cutover.
func (r SyncRow) Cutover() bool {
	return r.Report != nil && r.Report.Sync != nil && r.Report.Sync.Cutover
}

// SyncHistory is the job's sync runs, newest first, at most limit, and the
// newest cutover among them that ended (nil none).
type SyncHistory struct {
	Runs    []SyncRow `json:"runs"`
	Cutover *SyncRow  `json:"cutover,omitempty"`
}

// Syncs reads the job's sync history from the visibility store: each run's
// memo holds its state and, once it ended, its report.
func Syncs(ctx context.Context, c client.Client, job string, limit int) (SyncHistory, error) {
	h := SyncHistory{Runs: []SyncRow{}}
	resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: syncQuery(job), PageSize: int32(limit)})
	if err != nil {
		return h, fmt.Errorf("find the sync runs of job %s: %w", job, err)
	}
	dc := converter.GetDefaultDataConverter()
	for _, e := range resp.GetExecutions() {
		if len(h.Runs) == limit {
			break
		}
		r := SyncRow{WorkflowID: e.GetExecution().GetWorkflowId(), Started: e.GetStartTime().AsTime(), Closed: e.GetCloseTime() != nil}
		fields := e.GetMemo().GetFields()
		_ = dc.FromPayload(fields[contract.MemoState], &r.State)
		if p := fields[contract.MemoSync]; p != nil {
			var rep contract.SyncReport
			if dc.FromPayload(p, &rep) == nil {
				r.Report = &rep
			}
		}
		if r.Closed && !contract.Ended(r.State) {
			r.State = strings.ToLower(strings.TrimPrefix(e.GetStatus().String(), "WORKFLOW_EXECUTION_STATUS_"))
		}
		h.Runs = append(h.Runs, r)
		if h.Cutover == nil && r.Cutover() {
			h.Cutover = &h.Runs[len(h.Runs)-1]
		}
	}
	if h.Cutover != nil {
		c := *h.Cutover // not a pointer into Runs, which the caller may change
		h.Cutover = &c
	}
	return h, nil
}
