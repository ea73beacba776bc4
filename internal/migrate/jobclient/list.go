package jobclient

import (
	"context"
	"fmt"
	"io"
	"slices"
	"time"

	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/edgeflow/edgeflow/internal/migrate"
	"github.com/edgeflow/edgeflow/workflows/migrate/contract"
)

// Row is a job as `migrate list` lists it.
type Row struct {
	Job     string    `json:"job"`
	State   string    `json:"state"`
	Account string    `json:"account"`
	Summary string    `json:"summary"`
	Started time.Time `json:"started"`
	Closed  bool      `json:"closed"`
	// Archived: the workflow is gone; the row comes from the job store.
	Archived bool `json:"archived,omitempty"`
}

// ListOptions filter and bound List.
type ListOptions struct {
	Account, State string
	Limit          int  // at most this many rows; 0: no bound
	All            bool // also the jobs known only by their archived summary
}

// List lists jobs, newest first, with the state each keeps in its memo;
// with All also the finished jobs whose workflow retention removed (their
// summaries in the job store).
func List(ctx context.Context, c client.Client, jobStore migrate.JobStoreConfig, o ListOptions) ([]Row, error) {
	var rows []Row
	var token []byte
	live := map[string]bool{}
	limited := func() bool { return o.Limit > 0 && len(rows) >= o.Limit }
	// With All every workflow is read, so that a job that has one shows its
	// live state, not its archived summary.
	for o.All || !limited() {
		resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
			Query: fmt.Sprintf("WorkflowType = '%s'", contract.WorkflowTypeMigration), NextPageToken: token, PageSize: 100,
		})
		if err != nil {
			return nil, fmt.Errorf("list jobs: %w", err)
		}
		for _, e := range resp.GetExecutions() {
			r := rowOf(e)
			live[r.Job] = true
			if (o.Account == "" || r.Account == o.Account) && (o.State == "" || r.State == o.State) && (o.All || !limited()) {
				rows = append(rows, r)
			}
		}
		if token = resp.GetNextPageToken(); len(token) == 0 {
			break
		}
	}
	if !o.All {
		return rows, nil
	}
	archived, err := archivedRows(ctx, jobStore, live)
	if err != nil {
		return nil, &ArchiveError{fmt.Errorf("list archived jobs in the job store %s/%s: %w", jobStore.S3.Endpoint, jobStore.Bucket, err)}
	}
	archived = slices.DeleteFunc(archived, func(r Row) bool {
		return (o.Account != "" && r.Account != o.Account) || (o.State != "" && r.State != o.State)
	})
	return MergeRows(rows, archived, o.Limit), nil
}

// ArchivedRow is the row of a job known only by its archived summary.
func ArchivedRow(st contract.Status) Row {
	return Row{Job: st.Job, State: st.State, Account: st.Account, Summary: st.Source + " → " + st.Dest,
		Started: st.Started, Closed: true, Archived: true}
}

// archivedRows reads the summaries of the jobs whose workflow is gone:
// every job in the job store's summaries that is not in live (a job with a
// workflow shows its live state).
func archivedRows(ctx context.Context, jobStore migrate.JobStoreConfig, live map[string]bool) ([]Row, error) {
	store, err := jobStore.Open()
	if err != nil {
		return nil, err
	}
	var rows []Row
	for job, err := range store.SummaryJobs(ctx) {
		if err != nil {
			return nil, err
		}
		if live[job] {
			continue
		}
		var st contract.Status
		found, err := store.GetSummary(ctx, job, &st)
		if err != nil {
			return nil, err
		}
		if found {
			rows = append(rows, ArchivedRow(st))
		}
	}
	return rows, nil
}

// MergeRows lists live and archived jobs together, newest first, at most
// limit of them (0: all). A stable sort keeps the order of jobs started at
// once.
func MergeRows(live, archived []Row, limit int) []Row {
	rows := append(slices.Clone(live), archived...)
	slices.SortStableFunc(rows, func(a, b Row) int { return b.Started.Compare(a.Started) })
	if limit > 0 && len(rows) > limit {
		rows = rows[:limit]
	}
	return rows
}

// WriteReport writes a job's per-object report (key, status, bytes, error,
// reason, attempts, verify) of the job's execution in format (csv or
// jsonl), only the failed objects if onlyFailed, streaming from the job
// store in constant memory. It returns how many objects it wrote.
func WriteReport(ctx context.Context, store migrate.JobStore, job, execution, format string, onlyFailed bool, w io.Writer) (int, error) {
	rw, err := migrate.NewReportWriter(w, format)
	if err != nil {
		return 0, err
	}
	n := 0
	err = store.ForEachResult(ctx, job, execution, func(r migrate.ObjectResult) error {
		if onlyFailed && r.Status != migrate.StatusFailed {
			return nil
		}
		n++
		return rw.Write(r)
	})
	if cerr := rw.Close(); err == nil {
		err = cerr
	}
	return n, err
}
