package main

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/edgeflow/edgeflow/internal/cli"
	"github.com/edgeflow/edgeflow/internal/migrate"
	"github.com/edgeflow/edgeflow/workflows/migrate/contract"
)

// A finished job's workflow is removed after the namespace's retention;
// its summary stays in the job store (the job wrote it as it ended), so
// status, report and list --all read it there once Temporal says NotFound.
// The starter finds the job store as the worker does: the -s3-endpoint and
// -bucket-migrate flags, or S3_ENDPOINT, S3_ACCESS_KEY, S3_SECRET_KEY and
// BUCKET_MIGRATE.

// jobStatus is a job's status from its workflow, or from its archived
// summary once the workflow is gone.
func jobStatus(tc client.Client, jobStore migrate.JobStoreConfig, job string) (contract.Status, error) {
	st, err := queryStatus(tc, job)
	var notFound *serviceerror.NotFound
	if !errors.As(err, &notFound) {
		return st, err
	}
	store, serr := jobStore.Open()
	if serr != nil {
		return st, fmt.Errorf("%w (and the job store, where a finished job's summary stays, cannot be opened: %v)", err, serr)
	}
	found, serr := store.GetSummary(background, job, &st)
	switch {
	case serr != nil:
		return st, &archiveError{fmt.Errorf("job %s has no workflow, and its summary could not be read from the job store %s/%s: %w",
			job, jobStore.S3.Endpoint, jobStore.Bucket, serr)}
	case !found:
		return st, fmt.Errorf("%w (nor a summary in the job store %s/%s)", err, jobStore.S3.Endpoint, jobStore.Bucket)
	}
	return st, nil
}

// archiveError is a job store that did not answer: the job may exist, so
// the starter says the store is unavailable, not that the job is unknown.
type archiveError struct{ error }

func (e *archiveError) Unwrap() error { return e.error }

// statusCode is the exit code of an error of jobStatus.
func statusCode(err error) int {
	var ae *archiveError
	if errors.As(err, &ae) {
		return cli.ExitUnavailable
	}
	return temporalCode(err)
}

// listRow is a job as `migrate list` prints it.
type listRow struct {
	Job     string    `json:"job"`
	State   string    `json:"state"`
	Account string    `json:"account"`
	Summary string    `json:"summary"`
	Started time.Time `json:"started"`
	Closed  bool      `json:"closed"`
	// Archived: the workflow is gone; the row comes from the job store.
	Archived bool `json:"archived,omitempty"`
}

// archivedRow is the row of a job known only by its archived summary.
func archivedRow(st contract.Status) listRow {
	return listRow{Job: st.Job, State: st.State, Account: st.Account, Summary: st.Source + " → " + st.Dest,
		Started: st.Started, Closed: true, Archived: true}
}

// archivedRows reads the summaries of the jobs whose workflow is gone:
// every job in the job store's summaries that is not in live (a job with a
// workflow shows its live state).
func archivedRows(jobStore migrate.JobStoreConfig, live map[string]bool) ([]listRow, error) {
	store, err := jobStore.Open()
	if err != nil {
		return nil, err
	}
	var rows []listRow
	for job, err := range store.SummaryJobs(background) {
		if err != nil {
			return nil, err
		}
		if live[job] {
			continue
		}
		var st contract.Status
		found, err := store.GetSummary(background, job, &st)
		if err != nil {
			return nil, err
		}
		if found {
			rows = append(rows, archivedRow(st))
		}
	}
	return rows, nil
}

// mergeRows lists live and archived jobs together, newest first, at most
// limit of them. A stable sort keeps the order of jobs started at once.
func mergeRows(live, archived []listRow, limit int) []listRow {
	rows := append(slices.Clone(live), archived...)
	slices.SortStableFunc(rows, func(a, b listRow) int { return b.Started.Compare(a.Started) })
	if len(rows) > limit {
		rows = rows[:limit]
	}
	return rows
}
