// Package migrate holds Migrate's activities: thin adapters over
// internal/migrate that open a job's sealed credentials, reach its stores
// and the job store, and report progress by heartbeat.
package migrate

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/edgeflow/edgeflow/internal/heartbeat"
	"github.com/edgeflow/edgeflow/internal/keyring"
	"github.com/edgeflow/edgeflow/internal/migrate"
	"github.com/edgeflow/edgeflow/workflows/migrate/contract"
)

// Activities are the migrate pool's activities. Only they open sealed
// credentials, with Keys.
type Activities struct {
	Keys *keyring.Keyring
	// Jobs is the job store: pages, results, dead letters, key lists.
	Jobs migrate.JobStore
	// Temporal lets a job queue at its account and an account check its jobs.
	Temporal client.Client
	// JobsPerAccount is the limit a new account workflow starts with.
	JobsPerAccount int
	// Metrics counts the pool's work for /metrics (Metrics()); nil counts nothing.
	Metrics *PoolMetrics
	// AccountLimits is every account's budget on its sources, across all
	// its jobs (MIGRATE_ACCOUNT_MAX_BANDWIDTH, MIGRATE_ACCOUNT_MAX_REQUESTS;
	// zero: none); every worker of the pool must have the same.
	AccountLimits migrate.Limits
	// PerObjectWrites writes each object with a request of its own, also
	// to a destination that extracts archives (MinIO): the per-object path
	// every other store takes, for measuring it on MinIO. Settable while
	// the worker runs.
	PerObjectWrites atomic.Bool

	stores       stores
	accountJobs  accountJobs
	usersAnswers sourceUsersAnswers
}

// Precheck proves both sides usable before a job copies anything.
func (a *Activities) Precheck(ctx context.Context, in contract.PrecheckInput) error {
	defer beat(ctx)()
	src, dst, err := a.sides(in.Job, in.Source, in.Dest)
	if err != nil {
		return err
	}
	first := ""
	if in.KeyList != "" {
		l, err := migrate.ListKeyList(ctx, a.Jobs, in.KeyList, "", 1)
		if err != nil {
			return err
		}
		if len(l.Objects) > 0 {
			first = l.Objects[0].Key
		}
	}
	// The stores themselves, not their handles: a handle has only the core
	// methods, so the precheck would not see the stores' ranged reads and
	// multipart uploads and would skip its write test.
	err = migrate.Precheck(ctx, src.Store, in.Source.Location, in.Source.String(), dst.Store, in.Dest.Location, in.Dest.String(), first, in.Job)
	var pe *migrate.PrecheckError
	if errors.As(err, &pe) {
		return temporal.NewNonRetryableApplicationError(pe.Error(), contract.ErrPrecheck, nil)
	}
	return err
}

// ListPage lists page Seq of the source (or of the key list) from Token
// and stores it for its page child. Listing the same page again stores the
// same page, so a retry is harmless.
func (a *Activities) ListPage(ctx context.Context, in contract.ListInput) (contract.ListResult, error) {
	defer beat(ctx)()
	var filter *migrate.KeyFilter
	if in.Filter != nil {
		var err error
		if filter, err = in.Filter.Compile(); err != nil {
			return contract.ListResult{}, temporal.NewNonRetryableApplicationError(err.Error(), contract.ErrPermanent, nil)
		}
	}
	var listed migrate.Listed
	var err error
	if in.KeyList != "" {
		listed, err = migrate.ListKeyList(ctx, a.Jobs, in.KeyList, in.Token, in.PageSize)
	} else {
		var src *storeHandle
		if src, err = a.store(in.Job, migrate.SideSource, in.Source); err != nil {
			return contract.ListResult{}, err
		}
		limited := migrate.LimitSource(src.Store, a.sourceLimiter(ctx, in.Account, in.Limits))
		listed, err = migrate.ListSource(ctx, limited, in.Source.Location, in.Range, in.Token, in.PageSize)
		if err != nil {
			return contract.ListResult{}, a.listingFailed(ctx, in, src, err)
		}
	}
	if err != nil {
		return contract.ListResult{}, err
	}
	// Filtered after listing, so a page is as many keys as ever however
	// few the filters keep, and its bounds are the keys listed.
	var excluded []string
	if in.KeyList != "" {
		listed, excluded = migrate.FilterKeys(filter, listed)
	} else {
		listed, excluded = migrate.FilterListed(filter, in.Source.Prefix, listed)
	}
	res := contract.ListResult{Seq: in.Seq, Count: len(listed.Objects), Filtered: len(excluded), Bytes: listed.Bytes, Next: listed.Next, Last: listed.Last}
	page := migrate.Page{Seq: in.Seq, Objects: listed.Objects}
	bounded := in.Bounded && in.KeyList == ""
	if bounded {
		page.Excluded = excluded
		// A sync's page answers for the destination from the previous
		// page's last key (the range's start, for the first) to its own
		// last key, or to the range's end for the last page.
		page.Bounded, page.After, page.Final = true, in.After, listed.Last
		if page.After == "" {
			page.After = in.Range.After
		}
		if listed.Last {
			page.Until = in.Range.Until
		}
		res.LastKey = page.LastListed()
	}
	if len(listed.Objects) > 0 || bounded && (listed.Last || len(excluded) > 0) {
		if err := a.Jobs.PutPage(ctx, in.Job, in.Execution, page); err != nil {
			return contract.ListResult{}, err
		}
		res.Stored = true
	}
	return res, nil
}

// TransferPage copies one page (or redrives its dead letters), heartbeating
// as objects finish. Cancelled by an abort, it stores and returns what it
// did as the cancellation's details; stopped by its worker shutting down,
// it stores nothing, so the retry on another worker does the whole page.
func (a *Activities) TransferPage(ctx context.Context, in contract.PageInput) (contract.PageReport, error) {
	src, dst, err := a.sides(in.Job, in.Source, in.Dest)
	if err != nil {
		return contract.PageReport{}, err
	}
	set := in.Settings.WithDefaults()
	info := activity.GetInfo(ctx)
	// The page's share of the job's limits on its source, kept at the
	// limits divided among the job's users now; probes (a store down) go
	// around them.
	lim := a.sourceLimiter(ctx, in.Account, set.SourceLimits())
	defer a.followShares(ctx, in, set.SourceLimits(), lim)()
	run := migrate.PageRun{
		Jobs: a.Jobs, Job: in.Job, Execution: in.Execution, Seq: in.Seq,
		Sides: migrate.Sides{Source: migrate.LimitSource(src.Store, lim), SourceBucket: in.Source.Bucket, Dest: dst.Store, DestBucket: in.Dest.Bucket, Map: in.Map},
		Options: migrate.TransferOptions{
			Policy: in.Overwrite, DryRun: in.DryRun, Verify: in.Verify, KeysOnly: in.KeysOnly,
			// A retried attempt, or a page started again, may find its own copies.
			Recovering: info.Attempt > 1 || in.Restart > 0,
			JobStarted: in.Started, ClockSkew: set.ClockSkew,
			Concurrency: set.Concurrency, Controller: a.stores.controller(src, dst, set.Concurrency),
			MultipartCutoff: set.MultipartCutoff, PartSize: set.PartSize, PartConcurrency: set.PartConcurrency, CopyCutoff: set.CopyCutoff,
			Priority: in.Seq, PerObjectWrites: a.PerObjectWrites.Load(),
			BatchVerdicts: a.stores.batchVerdicts(dst),
			Probe: func(ctx context.Context, side string) error {
				if side == migrate.SideSource {
					return migrate.Probe(ctx, side, src.Store, in.Source.Location, in.Job)
				}
				return migrate.Probe(ctx, side, dst.Store, in.Dest.Location, in.Job)
			},
		},
		Differences: pageDifferences(in.Sync),
		KeepPartial: func() bool {
			select {
			case <-activity.GetWorkerStopChannel(ctx):
				return false
			default:
			}
			// Only a cancellation the job asked for (an abort) keeps a
			// partial page. An attempt whose heartbeat found it timed out
			// (a stalled worker; another attempt runs the page) is
			// cancelled too, with another cause: stored, its partial
			// results would pass for the whole page's.
			var asked *temporal.CanceledError
			return errors.As(context.Cause(ctx), &asked)
		},
	}
	// A page of large objects can spend minutes on one object.
	stopBeat := heartbeat.Every(ctx, heartbeat.Within(set.HeartbeatTimeout), nil)
	var done int64
	run.Options.Progress = func(n int) { done = int64(n) }
	run.DeleteExtraneous = in.Sync != nil && in.Sync.DeleteExtraneous
	if in.Filter != nil {
		if run.Filter, err = in.Filter.Compile(); err != nil {
			return contract.PageReport{}, temporal.NewNonRetryableApplicationError(err.Error(), contract.ErrPermanent, nil)
		}
	}
	var out migrate.PageOutcome
	if in.Pass == 0 {
		out, err = migrate.CopyPage(ctx, run)
	} else {
		out, err = migrate.RedrivePage(ctx, run, in.Pass)
	}
	stopBeat()
	if err != nil {
		return contract.PageReport{}, a.storeDown(in.Execution, err)
	}
	a.Metrics.storeUp(migrate.SideSource, migrate.SideDest)
	a.Metrics.page(out.Counters)
	rep := contract.PageReport{Execution: in.Execution, Pass: in.Pass, Seq: in.Seq, Item: in.Item, Counters: out.Counters, Redriven: out.Redriven,
		Differences: out.Differences}
	if out.Stopped {
		if run.KeepPartial() {
			rep.Aborted = true
			return rep, temporal.NewCanceledError(rep)
		}
		return contract.PageReport{}, fmt.Errorf("page %d: the worker is stopping after %d objects; another attempt copies the rest", in.Seq, done)
	}
	return rep, nil
}

// pageDifferences is how many differences a page names: a cutover's only.
func pageDifferences(sync *contract.SyncRun) int {
	if sync != nil && sync.Cutover {
		return contract.MaxPageDifferences
	}
	return 0
}

// beat heartbeats within the heartbeat timeout the activity was scheduled
// with (a minute if none) until stopped.
func beat(ctx context.Context) (stop func()) {
	timeout := activity.GetInfo(ctx).HeartbeatTimeout
	if timeout <= 0 {
		timeout = time.Minute
	}
	return heartbeat.Every(ctx, heartbeat.Within(timeout), nil)
}

// DeadPages lists the pages of an execution that hold dead letters.
func (a *Activities) DeadPages(ctx context.Context, in contract.DeadPagesInput) (contract.DeadPagesResult, error) {
	defer beat(ctx)()
	seqs, last, err := a.Jobs.DeadPages(ctx, in.Job, in.Execution, in.After, in.Max)
	return contract.DeadPagesResult{Seqs: seqs, Last: last}, err
}

// FindReports returns the stored outcomes of pages whose reports were lost.
func (a *Activities) FindReports(ctx context.Context, in contract.FindReportsInput) ([]contract.PageReport, error) {
	defer beat(ctx)()
	var out []contract.PageReport
	for _, seq := range in.Seqs {
		o, found, err := migrate.StoredOutcome(ctx, a.Jobs, in.Job, in.Execution, in.Pass, seq)
		if err != nil {
			return nil, err
		}
		if found {
			out = append(out, contract.PageReport{Execution: in.Execution, Pass: in.Pass, Seq: seq, Counters: o.Counters, Redriven: o.Redriven})
		}
	}
	return out, nil
}

// ArchiveJob keeps a finished job's summary (its final Status) in the job
// store, so the starter can answer for the job after Temporal's retention
// has removed its workflow. A retry writes the same document.
func (a *Activities) ArchiveJob(ctx context.Context, st contract.Status) error {
	defer beat(ctx)()
	if st.Sync != nil {
		// A sync run's report goes beside the job's, never over it.
		return a.Jobs.PutSyncSummary(ctx, st.Job, st.Sync.WorkflowID, contract.SyncReportOf(st))
	}
	return a.Jobs.PutSummary(ctx, st.Job, st)
}
