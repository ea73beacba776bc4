package migrate

import (
	"errors"
	"fmt"
	"strconv"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/edgeflow/edgeflow/internal/migrate"
	"github.com/edgeflow/edgeflow/workflows/migrate/contract"
)

// schedule starts what may start now: the next listing (copy or redrive)
// while the pages in flight leave room, and a redrive pass once the copy is
// done. Nothing starts while the job is paused.
func (j *job) schedule(ctx workflow.Context) {
	st := j.st
	if st.Waiting != nil {
		j.armProbe(ctx) // nothing new starts while a store is down
		return
	}
	if st.State != contract.StateRunning {
		return
	}
	if !st.Listing.Done {
		if !j.listing && st.Pages.InFlight() < j.set.PagesInFlight && st.Pages.Span() < j.set.PageSpan {
			j.listNext(ctx)
		}
		return
	}
	if st.Redrive == nil && st.RedriveRequested && st.Pages.AllDone() {
		st.Passes++
		st.RedriveRequested = false
		st.Redrive = &contract.RedrivePass{Pass: st.Passes}
		j.details(ctx)
	}
	if r := st.Redrive; r != nil {
		if r.Listing.Done && r.Items.AllDone() && !j.listing {
			st.Redrive = nil
			j.details(ctx)
			return
		}
		if !r.Listing.Done && !j.listing && r.Items.InFlight() < j.set.PagesInFlight && r.Items.Span() < j.set.PageSpan {
			j.listDeadPages(ctx)
		}
	}
}

// listNext lists the page the cursor points at. Its answer is accepted only
// for that page number, so a listing retried or answered twice is never
// scheduled twice.
func (j *job) listNext(ctx workflow.Context) {
	st := j.st
	size := j.set.PageSize
	if ramped := migrate.RampedPageSize(st.Listing.Seq, size); ramped < size &&
		workflow.GetVersion(ctx, "ramp-first-pages", workflow.DefaultVersion, 1) == 1 {
		// Small first pages: copying starts after a short listing.
		size = ramped
	}
	in := contract.ListInput{Job: j.in.Job, Execution: st.Execution, Seq: st.Listing.Seq, Token: st.Listing.Token,
		Source: j.in.Source, KeyList: j.in.KeyList, Range: j.in.Range, PageSize: size, Filter: j.in.Filter,
		// The listing runs only while a page's share is free (schedule).
		Limits: j.set.SourceLimits(), Account: j.in.Account}
	if j.in.Sync != nil && j.in.KeyList == "" {
		// A sync's pages also answer for the destination between them.
		in.Bounded, in.After = true, st.ListedThrough
	}
	j.listing = true
	f := listPage(j.activityOptions(ctx), in)
	j.sel.AddFuture(f, func(f workflow.Future) {
		j.listing = false
		var res contract.ListResult
		if err := f.Get(ctx, &res); err != nil {
			if d, ok := storeDown(err); ok && j.enterWait(ctx, d) {
				return // listed again, from the same cursor, once the source is back
			}
			j.failure = fmt.Errorf("list page %d of %s: %w", in.Seq, j.in.Source, err)
			return
		}
		if (st.State != contract.StateRunning || st.Waiting != nil) && workflow.GetVersion(ctx, "relist-after-pause", workflow.DefaultVersion, 1) == 1 {
			// Paused (or aborted) while the listing ran: nothing new may
			// start, so the answer is dropped with the cursor where it was,
			// and the page is listed again on resume (a listing is
			// idempotent; its page has no child yet).
			return
		}
		if !st.Listing.Accept(res.Seq, res.Next, res.Last) {
			return // a stale or duplicate answer
		}
		st.Counters.Listed += int64(res.Count)
		st.Counters.ListedBytes += res.Bytes
		st.Counters.Filtered += int64(res.Filtered)
		if res.LastKey != "" {
			st.ListedThrough = res.LastKey
		}
		if err := st.Pages.Schedule(res.Seq); err != nil {
			j.failure = err
			return
		}
		if res.Count == 0 && !res.Stored {
			st.Pages.MarkDone(res.Seq)
		} else {
			j.startPage(ctx, 0, res.Seq, res.Seq, 0)
		}
		j.details(ctx)
	})
}

// listDeadPages finds the next pages holding dead letters for the redrive
// pass; each becomes an item, numbered in order.
func (j *job) listDeadPages(ctx workflow.Context) {
	r := j.st.Redrive
	after := -1
	if r.Listing.Token != "" {
		after, _ = strconv.Atoi(r.Listing.Token)
	}
	in := contract.DeadPagesInput{Job: j.in.Job, Execution: j.st.Execution, After: after, Max: j.set.PagesInFlight}
	seq := r.Listing.Seq
	j.listing = true
	f := deadPages(j.activityOptions(ctx), in)
	j.sel.AddFuture(f, func(f workflow.Future) {
		j.listing = false
		var res contract.DeadPagesResult
		if err := f.Get(ctx, &res); err != nil {
			j.failure = fmt.Errorf("find dead letters: %w", err)
			return
		}
		next := r.Listing.Token
		if n := len(res.Seqs); n > 0 {
			next = strconv.Itoa(res.Seqs[n-1])
		}
		if !r.Listing.Accept(seq, next, res.Last || len(res.Seqs) == 0) {
			return
		}
		if r.Seqs == nil {
			r.Seqs = map[int]int{}
		}
		for _, s := range res.Seqs {
			item := r.Items.Scheduled
			_ = r.Items.Schedule(item)
			r.Seqs[item] = s
			j.startPage(ctx, r.Pass, s, item, 0)
		}
	})
}

// startPage starts the child that copies a page (or redrives its dead
// letters). Children are abandoned on continue-as-new and report by signal
// to whichever run is current; their result, when this run sees it, is the
// same report, and only the first of the two counts.
func (j *job) startPage(ctx workflow.Context, pass, seq, item, restart int) {
	in := contract.PageInput{
		Job: j.in.Job, Execution: j.st.Execution, Pass: pass, Seq: seq, Item: item,
		Source: j.in.Source, Dest: j.in.Dest, Map: j.in.KeyMap(), Filter: j.in.Filter, Overwrite: j.in.Overwrite,
		Verify: j.in.Verify, DryRun: j.in.DryRun, KeysOnly: pass > 0 || j.in.KeyList != "",
		Started: j.st.Started, Restart: restart, Settings: j.set, Sync: j.in.Sync, Account: j.in.Account,
	}
	summary := fmt.Sprintf("%s: page %d", j.in.Job, seq)
	if pass > 0 {
		summary = fmt.Sprintf("%s: redrive %d of page %d", j.in.Job, pass, seq)
	}
	cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{
		WorkflowID:            j.pageWorkflowID(ctx, pass, seq),
		TaskQueue:             contract.TaskQueue,
		ParentClosePolicy:     enums.PARENT_CLOSE_POLICY_ABANDON,
		WorkflowIDReusePolicy: enums.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		TypedSearchAttributes: temporal.NewSearchAttributes(contract.JobKey.ValueSet(j.in.Job),
			contract.SourceBucketKey.ValueSet(j.in.Source.Bucket), contract.DestBucketKey.ValueSet(j.in.Dest.Bucket)),
		StaticSummary: summary,
		// A cancelled page still reports what it did before ending.
		WaitForCancellation: true,
	})
	child := workflow.ExecuteChildWorkflow(cctx, contract.WorkflowTypeMigrationPage, in)
	j.pendingStarts++
	j.sel.AddFuture(child.GetChildWorkflowExecution(), func(f workflow.Future) {
		j.pendingStarts--
		if err := f.Get(ctx, nil); err != nil && !isAlreadyStarted(err) {
			j.failure = fmt.Errorf("start %s: %w", summary, err)
		}
	})
	j.sel.AddFuture(child, func(f workflow.Future) {
		var rep contract.PageReport
		err := f.Get(ctx, &rep)
		switch {
		case err == nil:
			j.record(ctx, rep)
		case isAlreadyStarted(err):
			// A run of this page is already going (started by an earlier
			// run of the job): its signal will report it.
		case !j.reported(pass, seq, item) && j.failure == nil && !j.abort:
			j.failure = fmt.Errorf("%s ended without reporting: %w", summary, err)
		}
	})
}

// pageWorkflowID is the workflow ID of a page's child: a job's pages are
// named by the job and its execution, a sync run's by the run.
func (j *job) pageWorkflowID(ctx workflow.Context, pass, seq int) string {
	if j.in.Sync != nil {
		return contract.SyncPageWorkflowID(workflow.GetInfo(ctx).WorkflowExecution.ID, pass, seq)
	}
	return contract.MigrationPageWorkflowID(j.in.Job, j.st.Execution, pass, seq)
}

// reported says whether a page (or redrive item) has been counted.
func (j *job) reported(pass, seq, item int) bool {
	if pass == 0 {
		return j.st.Pages.IsDone(seq)
	}
	r := j.st.Redrive
	return r == nil || r.Pass != pass || r.Items.IsDone(item)
}

// record counts a page's report once: reports of another execution of the
// job, of pages never scheduled, or already counted change nothing.
func (j *job) record(ctx workflow.Context, r contract.PageReport) {
	st := j.st
	if r.Execution != st.Execution {
		return
	}
	if r.Pass == 0 {
		if !st.Pages.MarkDone(r.Seq) {
			return
		}
		delete(st.Restarts, r.Seq)
	} else {
		rp := st.Redrive
		if rp == nil || r.Pass != rp.Pass || !rp.Items.MarkDone(r.Item) {
			return
		}
		delete(rp.Seqs, r.Item)
	}
	j.lastReport = workflow.Now(ctx)
	c := r.Counters
	c.Listed, c.ListedBytes = 0, 0 // the listing counted them
	st.Counters.Add(c)
	st.Counters.Failed -= int64(r.Redriven)
	if n := contract.MaxDifferences - len(st.Differences); n > 0 && len(r.Differences) > 0 {
		st.Differences = append(st.Differences, r.Differences[:min(n, len(r.Differences))]...)
	}
	if r.Error != "" && j.failure == nil && !r.Aborted {
		j.failure = fmt.Errorf("page %d: %s", r.Seq, r.Error)
	}
	st.Rate.Add(migrate.Sample{At: workflow.Now(ctx), Objects: st.Counters.Done(), Bytes: st.Counters.Bytes})
	j.details(ctx)
}

func (j *job) outstanding() int {
	n := j.st.Pages.InFlight()
	if r := j.st.Redrive; r != nil {
		n += r.Items.InFlight()
	}
	return n
}

// armWatchdog keeps one timer armed while pages are in flight. When no
// report arrived for WatchEvery, the job looks for the stored outcomes of
// its unreported pages (a report lost on the way, or sent to a run that no
// longer exists) and counts them; pages with no outcome are started again,
// which either finds their child still running or copies what is missing.
func (j *job) armWatchdog(ctx workflow.Context) {
	if j.watching || j.outstanding() == 0 {
		return
	}
	j.watching = true
	j.sel.AddFuture(workflow.NewTimer(ctx, j.set.WatchEvery), func(workflow.Future) {
		j.watching = false
		if workflow.Now(ctx).Sub(j.lastReport) < j.set.WatchEvery || j.abort || j.failure != nil || j.st.Waiting != nil {
			return
		}
		j.recoverLost(ctx)
		j.lastReport = workflow.Now(ctx)
	})
}

func (j *job) recoverLost(ctx workflow.Context) {
	st := j.st
	pass, seqs := 0, st.Pages.Outstanding()
	items := map[int]int{} // seq → item, for a redrive pass
	if len(seqs) == 0 && st.Redrive != nil {
		pass = st.Redrive.Pass
		seqs = nil
		for _, item := range st.Redrive.Items.Outstanding() {
			s := st.Redrive.Seqs[item]
			seqs = append(seqs, s)
			items[s] = item
		}
	}
	if len(seqs) == 0 {
		return
	}
	in := contract.FindReportsInput{Job: j.in.Job, Execution: st.Execution, Pass: pass, Seqs: seqs}
	found, err := findReports(j.activityOptions(ctx), in)
	if err != nil {
		j.failure = fmt.Errorf("look for lost page reports: %w", err)
		return
	}
	for _, r := range found {
		j.record(ctx, r)
	}
	for _, s := range seqs {
		item := s
		if pass > 0 {
			item = items[s]
		}
		if j.reported(pass, s, item) {
			continue
		}
		if st.Restarts == nil {
			st.Restarts = map[int]int{}
		}
		st.Restarts[s]++
		workflow.GetLogger(ctx).Warn("page reported nothing; starting it again", "page", s, "pass", pass, "restart", st.Restarts[s])
		j.startPage(ctx, pass, s, item, st.Restarts[s])
	}
}

// cancelOutstanding asks every unreported page child to stop: a failed or
// aborted job must not keep copying.
func (j *job) cancelOutstanding(ctx workflow.Context) {
	var pending []workflow.Future
	ctx, _ = workflow.NewDisconnectedContext(ctx)
	for _, s := range j.st.Pages.Outstanding() {
		pending = append(pending, workflow.RequestCancelExternalWorkflow(ctx, j.pageWorkflowID(ctx, 0, s), ""))
	}
	if r := j.st.Redrive; r != nil {
		for _, item := range r.Items.Outstanding() {
			pending = append(pending, workflow.RequestCancelExternalWorkflow(ctx, j.pageWorkflowID(ctx, r.Pass, r.Seqs[item]), ""))
		}
	}
	for _, f := range pending {
		_ = f.Get(ctx, nil) // a child that already ended has nothing to cancel
	}
}

func isAlreadyStarted(err error) bool {
	var started *temporal.ChildWorkflowExecutionAlreadyStartedError
	var exists *serviceerror.WorkflowExecutionAlreadyStarted
	return errors.As(err, &started) || errors.As(err, &exists)
}
