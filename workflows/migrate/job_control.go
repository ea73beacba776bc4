package migrate

import (
	"fmt"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/edgeflow/edgeflow/internal/migrate"
	"github.com/edgeflow/edgeflow/workflows/migrate/contract"
)

// registerHandlers installs the status query and the control updates. Each
// update is validated first, so a request that makes no sense in the
// current state (resume a running job, pause a finished one) is refused
// with a reason and never reaches the history.
func (j *job) registerHandlers(ctx workflow.Context) error {
	if err := workflow.SetQueryHandler(ctx, contract.StatusQuery, func() (contract.Status, error) { return j.status(ctx), nil }); err != nil {
		return err
	}
	if err := workflow.SetQueryHandler(ctx, contract.SourceUsersQuery, func() (contract.SourceUsers, error) { return j.sourceUsers(), nil }); err != nil {
		return err
	}
	type control struct {
		name     string
		validate func() error
		apply    func(ctx workflow.Context)
	}
	controls := []control{
		{contract.PauseUpdate, func() error {
			if j.st.State != contract.StateRunning {
				return refuse(contract.ErrNotRunning, "job %s is %s; only a running job can be paused", j.in.Job, j.st.State)
			}
			return nil
		}, func(ctx workflow.Context) { j.setState(ctx, contract.StatePaused) }},
		{contract.ResumeUpdate, func() error {
			if j.st.State != contract.StatePaused {
				return refuse(contract.ErrNotPaused, "job %s is %s; only a paused job can be resumed", j.in.Job, j.st.State)
			}
			return nil
		}, func(ctx workflow.Context) { j.setState(ctx, contract.StateRunning) }},
		{contract.AbortUpdate, func() error {
			if contract.Ended(j.st.State) || j.abort {
				return refuse(contract.ErrJobEnded, "job %s is %s already", j.in.Job, j.st.State)
			}
			return nil
		}, func(workflow.Context) { j.abort = true }},
		{contract.RedriveUpdate, func() error {
			switch {
			case contract.Ended(j.st.State) || j.abort:
				return refuse(contract.ErrJobEnded, "job %s is %s; redrive starts a new run of it instead", j.in.Job, j.st.State)
			case j.in.DryRun:
				return refuse(contract.ErrNothingToRedrive, "job %s is a dry run; it has nothing to redrive", j.in.Job)
			}
			return nil
		}, func(workflow.Context) { j.st.RedriveRequested = true }},
	}
	for _, c := range controls {
		err := workflow.SetUpdateHandlerWithOptions(ctx, c.name,
			func(ctx workflow.Context) (contract.Status, error) {
				c.apply(ctx)
				j.wake.SendAsync(struct{}{})
				j.details(ctx)
				return j.status(ctx), nil
			},
			workflow.UpdateHandlerOptions{Validator: func(workflow.Context) error { return c.validate() }})
		if err != nil {
			return err
		}
	}
	return nil
}

// refuse is a validator's refusal: an application error of a contract type,
// which the starter tells apart without reading its message.
func refuse(errType, format string, args ...any) error {
	return temporal.NewNonRetryableApplicationError(fmt.Sprintf(format, args...), errType, nil)
}

// setState changes the job's state and publishes it in the memo, which
// `migrate list` reads without asking the job.
func (j *job) setState(ctx workflow.Context, s string) {
	if j.st.State == s {
		return
	}
	j.st.State = s
	_ = workflow.UpsertMemo(ctx, map[string]any{
		contract.MemoState:   s,
		contract.MemoAccount: j.account(),
		contract.MemoSummary: fmt.Sprintf("%s → %s", j.in.Source, j.in.Dest),
	})
	j.details(ctx)
}

// status is the job as `migrate status` shows it.
func (j *job) status(ctx workflow.Context) contract.Status {
	st := j.st
	s := contract.Status{
		Job: j.in.Job, State: st.State, Account: j.account(), Execution: st.Execution,
		Source: j.in.Source.String(), Dest: j.in.Dest.String(), DryRun: j.in.DryRun, Verify: j.in.Verify,
		Filter: j.in.Filter, Counters: st.Counters, ListingDone: st.Listing.Done, PagesInFlight: j.outstanding(),
		Redriving: st.Redrive != nil || st.RedriveRequested, RedrivePasses: st.Passes,
		Started: st.Started, Error: st.Error, ContinuedAsNew: st.Runs,
	}
	if l := j.set.SourceLimits(); !l.IsZero() {
		s.Limits = &l
	}
	if objs, bytes, ok := st.Rate.Rate(); ok && st.State == contract.StateRunning {
		s.ObjectsPerSecond, s.BytesPerSecond = objs, bytes
		if st.Listing.Done {
			if eta, ok := migrate.ETA(st.Counters.Listed-st.Counters.Done(), objs); ok {
				secs := eta.Seconds()
				s.ETASeconds = &secs
			}
		}
	}
	if contract.Ended(st.State) {
		now := workflow.Now(ctx)
		s.Ended = &now
	}
	j.waitingStatus(ctx, &s)
	j.syncStatus(ctx, &s)
	return s
}

// syncStatus fills a sync run's fields: its request, and once it ended its
// lag and (a cutover) its verdict. Identical means the run completed, every
// listed object was copied or found identical and verified (size, then
// ETag or MD5), and the destination holds nothing the source lacks.
func (j *job) syncStatus(ctx workflow.Context, s *contract.Status) {
	if j.in.Sync == nil {
		return
	}
	s.Sync = &contract.SyncInfo{WorkflowID: workflow.GetInfo(ctx).WorkflowExecution.ID, SyncRun: *j.in.Sync}
	if !contract.Ended(s.State) {
		return
	}
	lag := s.Ended.Sub(s.Started).Seconds()
	s.LagSeconds = &lag
	if !j.in.Sync.Cutover {
		return
	}
	c := s.Counters
	s.DifferenceCount = migrate.DifferenceCount(c, j.in.DryRun)
	s.Differences = j.st.Differences
	identical := s.State == contract.StateCompleted && s.DifferenceCount == 0 && !j.in.DryRun &&
		c.Copied+c.Unchanged == c.Listed && c.Verified == c.Listed
	s.Identical = &identical
}

// sourceUsers is how many users the job's limits on its source are
// divided among now: its pages in flight, once it can start no other.
func (j *job) sourceUsers() contract.SourceUsers {
	st := j.st
	more := !st.Listing.Done || j.listing || st.RedriveRequested || st.Redrive != nil && !st.Redrive.Listing.Done
	return contract.SourceUsers{Execution: st.Execution, Users: migrate.SourceUsers(j.set.PagesInFlight, j.outstanding(), more)}
}

// details is the job's live summary in the Web UI.
func (j *job) details(ctx workflow.Context) {
	s := j.status(ctx)
	var b strings.Builder
	fmt.Fprintf(&b, "**%s** — %s\n\n%s → %s\n\n", s.Job, s.State, s.Source, s.Dest)
	fmt.Fprintf(&b, "listed %d (%s)%s · copied %d (%s) · skipped %d · failed %d",
		s.Listed, migrate.HumanBytes(float64(s.ListedBytes)), map[bool]string{true: "", false: "+"}[s.ListingDone],
		s.Copied, migrate.HumanBytes(float64(s.Bytes)), s.Skipped, s.Failed)
	if s.Verify {
		fmt.Fprintf(&b, " · verified %d, mismatched %d", s.Verified, s.Mismatched)
	}
	if s.ObjectsPerSecond > 0 {
		fmt.Fprintf(&b, "\n\n%.0f objects/s, %s/s", s.ObjectsPerSecond, migrate.HumanBytes(s.BytesPerSecond))
		if s.ETASeconds != nil {
			fmt.Fprintf(&b, ", ETA %s", (time.Duration(*s.ETASeconds) * time.Second).String())
		}
	}
	b.WriteString(waitingDetails(s))
	if s.PagesInFlight > 0 {
		fmt.Fprintf(&b, "\n\n%d pages in flight", s.PagesInFlight)
	}
	if s.Redriving {
		fmt.Fprintf(&b, " · redriving dead letters (pass %d)", s.RedrivePasses)
	}
	if s.Sync != nil {
		fmt.Fprintf(&b, "\n\nsync: changed %d · unchanged %d · at the destination only %d, deleted %d", s.Changed, s.Unchanged, s.Extraneous, s.Deleted)
		if s.Identical != nil {
			fmt.Fprintf(&b, " · cutover: identical %t (%d differences)", *s.Identical, s.DifferenceCount)
		}
	}
	if s.DryRun {
		b.WriteString("\n\n_dry run: nothing is written_")
	}
	if s.Error != "" {
		fmt.Fprintf(&b, "\n\n**error**: %s", s.Error)
	}
	workflow.SetCurrentDetails(ctx, b.String())
}
