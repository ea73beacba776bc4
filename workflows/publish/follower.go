package publish

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/edgeflow/edgeflow/workflows/publish/contract"
)

// The follower's timing.
const (
	// defaultPollWait is how long one long-poll of the feed waits for a
	// change.
	defaultPollWait = 30 * time.Second
	// pollGrace is how much longer than its wait a poll may take before
	// it counts as stalled.
	pollGrace = 30 * time.Second
	// pollHeartbeat bounds how long a killed worker holds a poll: the
	// activity heartbeats every 3 s while it waits.
	pollHeartbeat = 10 * time.Second
	// The back-off after a failed or stalled poll doubles from
	// backoffFirst to backoffMax.
	backoffFirst = time.Second
	backoffMax   = 2 * time.Minute
)

// RegistryFollower follows one registry's changes feed, one per registry
// (RegistryFollowerWorkflowID), for as long as it runs. Its state is the
// feed's last sequence it took in, kept in workflow state: a worker or
// server killed mid-poll loses nothing, and the poll runs again from that
// sequence. Each poll (FollowRegistry, on a worker, which reads the catalog)
// returns only the catalog packages that changed; the follower starts their
// check (PackageUpdates with Only) at once, one check at a time per
// package: a package that changes again while its check runs gets one more
// check when it ends. A feed that fails or stalls is retried with a
// doubling back-off; the package-updates Schedule, which keeps running,
// finds new versions meanwhile.
func RegistryFollower(ctx workflow.Context, in contract.FollowerInput) error {
	f := &follower{FollowerInput: in}
	if err := workflow.SetQueryHandler(ctx, contract.ProgressQuery, func() (contract.FollowerStatus, error) { return f.status(), nil }); err != nil {
		return err
	}
	return f.run(ctx)
}

// follower is a follower's state; FollowerInput is what continue-as-new
// carries.
type follower struct {
	contract.FollowerInput
	checking []followerCheck
	// While polls fail: since when, how many in a row, the last error
	// and when the next poll is due.
	stalledSince, retryAt time.Time
	failures              int
	lastError             string
}

// followerCheck is a running check of some changed packages.
type followerCheck struct {
	id     string
	names  []string
	future workflow.ChildWorkflowFuture
}

func (f *follower) run(ctx workflow.Context) error {
	budget := f.HistoryBudget
	if budget <= 0 {
		budget = historyBudget
	}
	wait := f.PollWait
	if wait <= 0 {
		wait = defaultPollWait
	}
	pollCtx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		TaskQueue:           contract.TaskQueue,
		StartToCloseTimeout: wait + pollGrace,
		HeartbeatTimeout:    pollHeartbeat,
		// The follower backs off itself, so that its state says the feed
		// is stalled while it waits.
		RetryPolicy: &temporal.RetryPolicy{MaximumAttempts: 1},
	})
	// Packages that changed during the last run's final checks.
	if dirty := f.Dirty; len(dirty) > 0 {
		f.Dirty = nil
		f.startCheck(ctx, dirty)
	}
	var poll, retry workflow.Future
	for {
		info := workflow.GetInfo(ctx)
		due := info.GetCurrentHistoryLength() > budget || info.GetContinueAsNewSuggested()
		if due && poll == nil && retry == nil && len(f.checking) == 0 {
			// Only the sequence and the dirty packages carry over: no
			// check is left for the next run to wait for.
			f.Stats.ContinuedAsNew++
			return workflow.NewContinueAsNewError(ctx, RegistryFollower, f.FollowerInput)
		}
		if !due && poll == nil && retry == nil {
			poll = workflow.ExecuteActivity(pollCtx, contract.FollowRegistryActivity,
				contract.FollowInput{Registry: f.Registry, Since: f.Since, Wait: wait})
		}
		f.setDetails(ctx)
		sel := workflow.NewSelector(ctx)
		if poll != nil {
			sel.AddFuture(poll, func(fut workflow.Future) {
				poll = nil
				if d, failed := f.polled(ctx, fut); failed {
					retry = workflow.NewTimer(ctx, d)
				}
			})
		}
		if retry != nil {
			sel.AddFuture(retry, func(workflow.Future) { retry = nil })
		}
		for _, c := range f.checking {
			sel.AddFuture(c.future, func(fut workflow.Future) { f.checked(ctx, c, fut) })
		}
		sel.Select(ctx)
	}
}

// polled takes in a poll's result: the new sequence and the changed
// packages' checks, or, for a failed poll, how long to back off.
func (f *follower) polled(ctx workflow.Context, fut workflow.Future) (backoff time.Duration, failed bool) {
	var res contract.FollowResult
	err := fut.Get(ctx, &res)
	f.Stats.Polls++
	if err != nil {
		f.Stats.Failures++
		f.failures++
		now := workflow.Now(ctx)
		if f.stalledSince.IsZero() {
			f.stalledSince = now
		}
		f.lastError = trimError(err.Error())
		backoff = backoffFirst << min(f.failures-1, 10)
		backoff = min(backoff, backoffMax)
		f.retryAt = now.Add(backoff)
		workflow.GetLogger(ctx).Warn("the registry's feed failed or stalled; backing off (the Schedule's checks go on)",
			"registry", f.Registry, "failures", f.failures, "retryIn", backoff, "error", err)
		return backoff, true
	}
	f.failures, f.stalledSince, f.retryAt, f.lastError = 0, time.Time{}, time.Time{}, ""
	if res.LastSeq != "" {
		f.Since = res.LastSeq
	}
	if !res.CaughtUpAt.IsZero() {
		f.CaughtUpAt = res.CaughtUpAt
	}
	f.Stats.Changes += res.Changes
	f.Stats.Changed += len(res.Names)
	var start []string
	for _, name := range res.Names {
		switch {
		case f.isChecking(name):
			if !slices.Contains(f.Dirty, name) {
				f.Dirty = append(f.Dirty, name)
			}
		case !slices.Contains(start, name):
			start = append(start, name)
		}
	}
	if len(start) > 0 {
		f.startCheck(ctx, start)
	}
	return 0, false
}

// startCheck starts one check of names, under the next burst's ID.
func (f *follower) startCheck(ctx workflow.Context, names []string) {
	f.Checks++
	f.Stats.Checks++
	id := contract.FollowerCheckWorkflowID(f.Registry, f.Checks)
	opts := workflow.ChildWorkflowOptions{
		WorkflowID:            id,
		TaskQueue:             contract.TaskQueue,
		WorkflowIDReusePolicy: enums.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		// A check started finishes even if the follower continues as new
		// or is terminated.
		ParentClosePolicy:   enums.PARENT_CLOSE_POLICY_ABANDON,
		WorkflowTaskTimeout: 10 * time.Second,
		StaticSummary:       "Check of " + listed(names) + ": changed in the " + f.Registry + " feed",
	}
	if len(names) == 1 {
		opts.TypedSearchAttributes = temporal.NewSearchAttributes(contract.PackageKey.ValueSet(names[0]))
	}
	fut := workflow.ExecuteChildWorkflow(workflow.WithChildOptions(ctx, opts), PackageUpdates, contract.UpdatesInput{Only: names})
	f.checking = append(f.checking, followerCheck{id: id, names: names, future: fut})
}

// checked takes in a check's end: the packages that changed again while it
// ran get their next check now.
func (f *follower) checked(ctx workflow.Context, c followerCheck, fut workflow.Future) {
	err := fut.Get(ctx, nil)
	f.checking = slices.DeleteFunc(f.checking, func(o followerCheck) bool { return o.id == c.id })
	switch {
	case isAlreadyStarted(err):
		// The ID is held by a check an earlier follower started (one
		// terminated and started again): the next ID checks them.
		f.startCheck(ctx, c.names)
		return
	case err != nil:
		f.Stats.CheckFailures++
		workflow.GetLogger(ctx).Warn("a follower's check failed; the Schedule's next check covers its packages", "check", c.id, "error", err)
	}
	var again []string
	for _, name := range c.names {
		if slices.Contains(f.Dirty, name) && !f.isChecking(name) {
			again = append(again, name)
		}
	}
	if len(again) > 0 {
		f.Dirty = slices.DeleteFunc(f.Dirty, func(n string) bool { return slices.Contains(again, n) })
		f.startCheck(ctx, again)
	}
}

func (f *follower) isChecking(name string) bool {
	return slices.ContainsFunc(f.checking, func(c followerCheck) bool { return slices.Contains(c.names, name) })
}

func (f *follower) status() contract.FollowerStatus {
	s := contract.FollowerStatus{Registry: f.Registry, Since: f.Since, CaughtUpAt: f.CaughtUpAt,
		Dirty: slices.Clone(f.Dirty), StalledSince: f.stalledSince, RetryAt: f.retryAt, LastError: f.lastError, Stats: f.Stats}
	for _, c := range f.checking {
		s.Checking = append(s.Checking, c.names...)
	}
	return s
}

func (f *follower) setDetails(ctx workflow.Context) {
	st := f.Stats
	counts := fmt.Sprintf("%d polls, %d changes read, %d of catalog packages, %d checks started", st.Polls, st.Changes, st.Changed, st.Checks)
	if !f.stalledSince.IsZero() {
		workflow.SetCurrentDetails(ctx, fmt.Sprintf("**feed failing** since %s (%d in a row: %s); next try at %s; the Schedule's checks find new versions meanwhile. %s",
			f.stalledSince.UTC().Format(time.RFC3339), f.failures, f.lastError, f.retryAt.UTC().Format(time.RFC3339), counts))
		return
	}
	caught := "not yet caught up"
	if !f.CaughtUpAt.IsZero() {
		caught = "every change seen up to " + f.CaughtUpAt.UTC().Format(time.RFC3339)
	}
	checking := "no check running"
	if s := f.status(); len(s.Checking) > 0 {
		checking = "checking " + listed(s.Checking)
	}
	workflow.SetCurrentDetails(ctx, fmt.Sprintf("following **%s** from sequence %s; %s; %s. %s", f.Registry, f.Since, caught, checking, counts))
}

// listed names a few packages, then how many more.
func listed(names []string) string {
	if len(names) <= 5 {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:5], ", "), len(names)-5)
}

// trimError bounds an error kept in state and shown in the details.
func trimError(s string) string {
	if len(s) > 300 {
		return s[:300] + "…"
	}
	return s
}
