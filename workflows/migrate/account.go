package migrate

import (
	"slices"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/edgeflow/edgeflow/internal/migrate"
	"github.com/edgeflow/edgeflow/workflows/migrate/contract"
)

// accountHistoryBudget bounds an account's history before it continues as new.
const accountHistoryBudget = 2000

// accountCheckEvery is how often an account with jobs waiting checks that
// its running jobs still run: a job terminated from outside never releases
// its slot.
const accountCheckEvery = 5 * time.Minute

// accountIdle is how long an account with no jobs stays before it ends
// (the next job starts it again).
const accountIdle = time.Hour

// Account admits one account's jobs: at most Queue.Limit run at once and
// the others wait in line, first come first served, durably. Jobs ask with
// AcquireSignal (by signal-with-start) and are answered with
// SlotGrantedSignal; they give the slot back with ReleaseSignal.
func Account(ctx workflow.Context, in contract.AccountInput) error {
	q := &in.Queue
	if in.Holders == nil {
		in.Holders = map[string]string{}
	}
	holders := in.Holders
	err := workflow.SetQueryHandler(ctx, contract.QueueQuery, func() (contract.Queue, error) {
		return contract.Queue{Account: in.Account, Limit: limitOf(q), Running: slices.Clone(q.Running), Waiting: slices.Clone(q.Waiting)}, nil
	})
	if err != nil {
		return err
	}
	// grant tells jobs they may run; a job that is gone hands its slot on.
	grant := func(jobs []string) {
		for len(jobs) > 0 {
			job := jobs[0]
			jobs = jobs[1:]
			err := workflow.SignalExternalWorkflow(ctx, holders[job], "", contract.SlotGrantedSignal, nil).Get(ctx, nil)
			if err != nil {
				workflow.GetLogger(ctx).Warn("job to admit is gone; its slot goes to the next in line", "job", job, "error", err)
				delete(holders, job)
				jobs = append(jobs, q.Release(job)...)
			}
		}
	}
	err = workflow.SetUpdateHandlerWithOptions(ctx, contract.SetLimitUpdate,
		func(ctx workflow.Context, n int) (contract.Queue, error) {
			grant(q.SetLimit(n))
			return contract.Queue{Account: in.Account, Limit: limitOf(q), Running: slices.Clone(q.Running), Waiting: slices.Clone(q.Waiting)}, nil
		},
		workflow.UpdateHandlerOptions{Validator: func(_ workflow.Context, n int) error {
			if n < 1 {
				return refuse(contract.ErrInvalidLimit, "limit %d: an account runs at least one job at a time", n)
			}
			return nil
		}})
	if err != nil {
		return err
	}
	acquire := workflow.GetSignalChannel(ctx, contract.AcquireSignal)
	release := workflow.GetSignalChannel(ctx, contract.ReleaseSignal)
	onAcquire := func(r contract.SlotRequest) {
		holders[r.Job] = r.WorkflowID
		if q.Request(r.Job) {
			grant([]string{r.Job}) // also answers a job asking again
		}
	}
	onRelease := func(r contract.SlotRequest) {
		if w, ok := holders[r.Job]; ok && w != r.WorkflowID {
			return // a release from an older run of a job with this id
		}
		delete(holders, r.Job)
		grant(q.Release(r.Job))
	}
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		TaskQueue: contract.TaskQueue, StartToCloseTimeout: time.Minute, HeartbeatTimeout: 20 * time.Second,
		RetryPolicy: &temporal.RetryPolicy{MaximumAttempts: 5},
	})
	lastBusy := workflow.Now(ctx)
	for {
		sel := workflow.NewSelector(ctx)
		sel.AddReceive(acquire, func(c workflow.ReceiveChannel, _ bool) {
			var r contract.SlotRequest
			c.Receive(ctx, &r)
			onAcquire(r)
		})
		sel.AddReceive(release, func(c workflow.ReceiveChannel, _ bool) {
			var r contract.SlotRequest
			c.Receive(ctx, &r)
			onRelease(r)
		})
		wait := accountIdle
		if len(q.Waiting) > 0 {
			wait = accountCheckEvery
		}
		timerCtx, cancelTimer := workflow.WithCancel(ctx)
		fired := false
		sel.AddFuture(workflow.NewTimer(timerCtx, wait), func(workflow.Future) { fired = true })
		sel.Select(ctx)
		cancelTimer()
		if len(q.Running) > 0 || len(q.Waiting) > 0 {
			lastBusy = workflow.Now(ctx)
		}
		if fired && len(q.Waiting) > 0 && len(q.Running) > 0 {
			var ids []string
			for _, job := range q.Running {
				ids = append(ids, holders[job])
			}
			if running, err := stillRunning(actx, contract.RunningInput{WorkflowIDs: ids}); err == nil {
				for _, job := range slices.Clone(q.Running) {
					if !slices.Contains(running, holders[job]) {
						workflow.GetLogger(ctx).Warn("running job ended without releasing its slot", "job", job)
						onRelease(contract.SlotRequest{Job: job, WorkflowID: holders[job]})
					}
				}
			}
		}
		drain := func() {
			for r := (contract.SlotRequest{}); acquire.ReceiveAsync(&r); r = (contract.SlotRequest{}) {
				onAcquire(r)
			}
			for r := (contract.SlotRequest{}); release.ReceiveAsync(&r); r = (contract.SlotRequest{}) {
				onRelease(r)
			}
		}
		idle := len(q.Running) == 0 && len(q.Waiting) == 0 && workflow.Now(ctx).Sub(lastBusy) >= accountIdle
		if idle || workflow.GetInfo(ctx).GetCurrentHistoryLength() > accountHistoryBudget || workflow.GetInfo(ctx).GetContinueAsNewSuggested() {
			drain()
			if err := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }); err != nil {
				return err
			}
			if len(q.Running) == 0 && len(q.Waiting) == 0 && idle {
				return nil
			}
			return workflow.NewContinueAsNewError(ctx, contract.WorkflowTypeMigrationAccount, in)
		}
	}
}

func limitOf(q *migrate.JobQueue) int {
	if q.Limit < 1 {
		return migrate.DefaultJobLimit
	}
	return q.Limit
}
