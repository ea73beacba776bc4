package migrate

import (
	"context"
	"errors"
	"iter"
	"strings"

	"github.com/edgeflow/edgeflow/internal/objectstore"
)

// A finished job's summary (what `migrate status --json` prints of it) is
// kept in the job store, beside its results, so `status`, `report` and
// `list --all` still answer once Temporal's retention has removed the
// job's workflow:
//
//	summaries/<job>.json   the last run's final status
//
// One document per job, not per execution: a redrive runs the job again
// and its end replaces the summary. They have a prefix of their own so
// that listing the archived jobs lists nothing else.

const summaryPrefix = "summaries/"

// SummaryKey is the key of a job's summary.
func SummaryKey(job string) string { return summaryPrefix + job + ".json" }

// PutSummary stores a finished job's summary. Writing the same summary
// again (an activity retried) stores the same document.
func (s JobStore) PutSummary(ctx context.Context, job string, summary any) error {
	if err := CheckJobID(job); err != nil {
		return err
	}
	return objectstore.PutJSON(ctx, s.Store, s.Bucket, SummaryKey(job), summary)
}

// GetSummary reads a job's summary into v; found is false when the job
// store has none (the job never ended, or never existed).
func (s JobStore) GetSummary(ctx context.Context, job string, v any) (found bool, err error) {
	if err := CheckJobID(job); err != nil {
		return false, err
	}
	_, err = objectstore.GetJSON(ctx, s.Store, s.Bucket, SummaryKey(job), v)
	if errors.Is(err, objectstore.ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

// SummaryJobsAfter lists at most max jobs with a stored summary, in key
// order, after the summary key after ("" from the first); last is the key
// to continue after, more whether the listing went on.
func (s JobStore) SummaryJobsAfter(ctx context.Context, after string, max int) (jobs []string, last string, more bool, err error) {
	page, err := s.Store.List(ctx, s.Bucket, objectstore.ListOptions{Prefix: summaryPrefix, StartAfter: after, MaxKeys: max})
	if err != nil {
		return nil, "", false, err
	}
	last = after
	for _, o := range page.Objects {
		last = o.Key
		job, ok := strings.CutSuffix(strings.TrimPrefix(o.Key, summaryPrefix), ".json")
		if ok && CheckJobID(job) == nil {
			jobs = append(jobs, job)
		}
	}
	return jobs, last, page.NextToken != "", nil
}

// SummaryJobs yields the job of every stored summary, in key order.
func (s JobStore) SummaryJobs(ctx context.Context) iter.Seq2[string, error] {
	return func(yield func(string, error) bool) {
		for o, err := range objectstore.Objects(ctx, s.Store, s.Bucket, summaryPrefix) {
			if err != nil {
				yield("", err)
				return
			}
			job, ok := strings.CutSuffix(strings.TrimPrefix(o.Key, summaryPrefix), ".json")
			if !ok || CheckJobID(job) != nil {
				continue // not a summary this code wrote
			}
			if !yield(job, nil) {
				return
			}
		}
	}
}

// A sync run's final report is kept beside its job's summary, one document
// per run, named by the run's workflow ID (which starts with the job's
// sync Schedule's ID and ends with the time it was due):
//
//	syncs/<job>/<run>.json

// SyncSummaryKey is the key of a sync run's report.
func SyncSummaryKey(job, workflowID string) string {
	return "syncs/" + job + "/" + strings.ReplaceAll(workflowID, "/", "_") + ".json"
}

// PutSyncSummary stores a sync run's final report.
func (s JobStore) PutSyncSummary(ctx context.Context, job, workflowID string, report any) error {
	if err := CheckJobID(job); err != nil {
		return err
	}
	return objectstore.PutJSON(ctx, s.Store, s.Bucket, SyncSummaryKey(job, workflowID), report)
}
