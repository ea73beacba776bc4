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
	if in.Holders == nil {
		in.Holders = map[string]string{}
	}
	acc := &account{in: in}
	if err := acc.registerHandlers(ctx); err != nil {
		return err
	}
	acc.acquire = workflow.GetSignalChannel(ctx, contract.AcquireSignal)
	acc.release = workflow.GetSignalChannel(ctx, contract.ReleaseSignal)
	acc.lastBusy = workflow.Now(ctx)
	return acc.run(ctx)
}

// account is one run of a MigrationAccount workflow. Its durable state is
// in (the line, and the workflow ID of each job in it), carried over on
// continue-as-new.
type account struct {
	in       contract.AccountInput
	acquire  workflow.ReceiveChannel
	release  workflow.ReceiveChannel
	lastBusy time.Time
}

func (acc *account) queue() *migrate.JobQueue { return &acc.in.Queue }

// snapshot is the line as the queue query and set-limit answer it.
func (acc *account) snapshot() contract.Queue {
	q := acc.queue()
	return contract.Queue{Account: acc.in.Account, Limit: limitOf(q), Running: slices.Clone(q.Running), Waiting: slices.Clone(q.Waiting)}
}

func (acc *account) registerHandlers(ctx workflow.Context) error {
	err := workflow.SetQueryHandler(ctx, contract.QueueQuery, func() (contract.Queue, error) { return acc.snapshot(), nil })
	if err != nil {
		return err
	}
	return workflow.SetUpdateHandlerWithOptions(ctx, contract.SetLimitUpdate,
		func(ctx workflow.Context, n int) (contract.Queue, error) {
			acc.grant(ctx, acc.queue().SetLimit(n))
			return acc.snapshot(), nil
		},
		workflow.UpdateHandlerOptions{Validator: func(_ workflow.Context, n int) error {
			if n < 1 {
				return refuse(contract.ErrInvalidLimit, "limit %d: an account runs at least one job at a time", n)
			}
			return nil
		}})
}

// grant tells jobs they may run; a job that is gone hands its slot on.
func (acc *account) grant(ctx workflow.Context, jobs []string) {
	for len(jobs) > 0 {
		job := jobs[0]
		jobs = jobs[1:]
		err := workflow.SignalExternalWorkflow(ctx, acc.in.Holders[job], "", contract.SlotGrantedSignal, nil).Get(ctx, nil)
		if err != nil {
			workflow.GetLogger(ctx).Warn("job to admit is gone; its slot goes to the next in line", "job", job, "error", err)
			delete(acc.in.Holders, job)
			jobs = append(jobs, acc.queue().Release(job)...)
		}
	}
}

func (acc *account) onAcquire(ctx workflow.Context, r contract.SlotRequest) {
	acc.in.Holders[r.Job] = r.WorkflowID
	if acc.queue().Request(r.Job) {
		acc.grant(ctx, []string{r.Job}) // also answers a job asking again
	}
}

func (acc *account) onRelease(ctx workflow.Context, r contract.SlotRequest) {
	if w, ok := acc.in.Holders[r.Job]; ok && w != r.WorkflowID {
		return // a release from an older run of a job with this id
	}
	delete(acc.in.Holders, r.Job)
	acc.grant(ctx, acc.queue().Release(r.Job))
}

// run waits for requests and releases, checks now and then that running
// jobs still run while others wait, and ends when idle long enough or
// continues as new when its history is long.
func (acc *account) run(ctx workflow.Context) error {
	q := acc.queue()
	for {
		sel := workflow.NewSelector(ctx)
		sel.AddReceive(acc.acquire, func(c workflow.ReceiveChannel, _ bool) {
			var r contract.SlotRequest
			c.Receive(ctx, &r)
			acc.onAcquire(ctx, r)
		})
		sel.AddReceive(acc.release, func(c workflow.ReceiveChannel, _ bool) {
			var r contract.SlotRequest
			c.Receive(ctx, &r)
			acc.onRelease(ctx, r)
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
			acc.lastBusy = workflow.Now(ctx)
		}
		if fired && len(q.Waiting) > 0 && len(q.Running) > 0 {
			acc.releaseEnded(ctx)
		}
		idle := len(q.Running) == 0 && len(q.Waiting) == 0 && workflow.Now(ctx).Sub(acc.lastBusy) >= accountIdle
		if idle || workflow.GetInfo(ctx).GetCurrentHistoryLength() > accountHistoryBudget || workflow.GetInfo(ctx).GetContinueAsNewSuggested() {
			acc.drain(ctx)
			if err := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }); err != nil {
				return err
			}
			if len(q.Running) == 0 && len(q.Waiting) == 0 && idle {
				return nil
			}
			return workflow.NewContinueAsNewError(ctx, contract.WorkflowTypeMigrationAccount, acc.in)
		}
	}
}

// releaseEnded frees the slots of running jobs that ended without
// releasing them (terminated from outside); a failed check changes nothing.
func (acc *account) releaseEnded(ctx workflow.Context) {
	q := acc.queue()
	var ids []string
	for _, job := range q.Running {
		ids = append(ids, acc.in.Holders[job])
	}
	running, err := stillRunning(checkOptions(ctx), contract.RunningInput{WorkflowIDs: ids})
	if err != nil {
		return
	}
	for _, job := range slices.Clone(q.Running) {
		if !slices.Contains(running, acc.in.Holders[job]) {
			workflow.GetLogger(ctx).Warn("running job ended without releasing its slot", "job", job)
			acc.onRelease(ctx, contract.SlotRequest{Job: job, WorkflowID: acc.in.Holders[job]})
		}
	}
}

// checkOptions are the StillRunning check's activity options.
func checkOptions(ctx workflow.Context) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		TaskQueue: contract.TaskQueue, StartToCloseTimeout: time.Minute, HeartbeatTimeout: 20 * time.Second,
		RetryPolicy: &temporal.RetryPolicy{MaximumAttempts: 5},
	})
}

// drain handles the requests and releases still queued before the run ends.
func (acc *account) drain(ctx workflow.Context) {
	for r := (contract.SlotRequest{}); acc.acquire.ReceiveAsync(&r); r = (contract.SlotRequest{}) {
		acc.onAcquire(ctx, r)
	}
	for r := (contract.SlotRequest{}); acc.release.ReceiveAsync(&r); r = (contract.SlotRequest{}) {
		acc.onRelease(ctx, r)
	}
}

func limitOf(q *migrate.JobQueue) int {
	if q.Limit < 1 {
		return migrate.DefaultJobLimit
	}
	return q.Limit
}
