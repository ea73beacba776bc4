package jobclient

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/edgeflow/edgeflow/internal/migrate"
	"github.com/edgeflow/edgeflow/workflows/migrate/contract"
)

// maxReads bounds the store reads of one page: with a filter few rows
// match, a page may hold fewer rows than asked, and its Next goes on.
const maxReads = 8

// PageOptions ask for one page of jobs.
type PageOptions struct {
	Account, State string
	PerPage        int    // at most this many rows (at least 1)
	Cursor         string // "" the first page; else a page's Next
}

// Page is one page of jobs: first the jobs with a workflow, newest first,
// read from Temporal's visibility a page at a time; then the jobs known
// only by their archived summary (their workflow's retention ended), in
// job id order, read from the job store's listing a page at a time. Next
// continues it ("" after the last page). Nothing is read beyond the page.
type Page struct {
	Rows []Row
	Next string
}

// cursor is where a page continues: in the workflows (Token, Temporal's
// page token) or, once they are done, in the archived summaries (after
// the summary key After).
type cursor struct {
	Archived bool   `json:"a,omitempty"`
	Token    []byte `json:"t,omitempty"`
	After    string `json:"k,omitempty"`
}

// CursorError is a cursor this code did not make.
type CursorError struct{ Cursor string }

func (e *CursorError) Error() string {
	return "cursor: not a cursor from a previous page (leave it out for the first page)"
}

func (c cursor) encode() string {
	b, _ := json.Marshal(c)
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeCursor(s string) (cursor, error) {
	var c cursor
	if s == "" {
		return c, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || json.Unmarshal(b, &c) != nil || (!c.Archived && c.After != "") || (c.Archived && len(c.Token) > 0) {
		return c, &CursorError{s}
	}
	return c, nil
}

// ListPage reads one page of jobs (see Page), filtered by account and
// state.
func ListPage(ctx context.Context, c client.Client, jobStore migrate.JobStoreConfig, o PageOptions) (Page, error) {
	cur, err := decodeCursor(o.Cursor)
	if err != nil {
		return Page{}, err
	}
	o.PerPage = max(o.PerPage, 1)
	keep := func(r Row) bool {
		return (o.Account == "" || r.Account == o.Account) && (o.State == "" || r.State == o.State)
	}
	var p Page
	reads := 0
	for !cur.Archived && len(p.Rows) < o.PerPage && reads < maxReads {
		reads++
		// Never more than the page still needs, so no row read is left
		// behind the next token.
		resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
			Query: fmt.Sprintf("WorkflowType = '%s'", contract.WorkflowTypeMigration), NextPageToken: cur.Token, PageSize: int32(o.PerPage - len(p.Rows)),
		})
		if err != nil {
			return Page{}, fmt.Errorf("list jobs: %w", err)
		}
		for _, e := range resp.GetExecutions() {
			if r := rowOf(e); keep(r) {
				p.Rows = append(p.Rows, r)
			}
		}
		cur.Token = resp.GetNextPageToken()
		if len(cur.Token) == 0 {
			cur = cursor{Archived: true}
		}
	}
	if !cur.Archived {
		p.Next = cur.encode()
		return p, nil
	}
	store, err := jobStore.Open()
	if err != nil {
		return Page{}, &ArchiveError{fmt.Errorf("job store: %w", err)}
	}
	for len(p.Rows) < o.PerPage && reads < maxReads {
		reads++
		jobs, last, more, err := store.SummaryJobsAfter(ctx, cur.After, o.PerPage-len(p.Rows))
		if err != nil {
			return Page{}, &ArchiveError{fmt.Errorf("list archived jobs: %w", err)}
		}
		gone, err := withoutWorkflow(ctx, c, jobs)
		if err != nil {
			return Page{}, err
		}
		for _, job := range gone {
			var st contract.Status
			found, err := store.GetSummary(ctx, job, &st)
			if err != nil {
				return Page{}, &ArchiveError{fmt.Errorf("read the summary of job %s: %w", job, err)}
			}
			if r := ArchivedRow(st); found && keep(r) {
				p.Rows = append(p.Rows, r)
			}
		}
		cur.After = last
		if !more {
			return p, nil
		}
	}
	p.Next = cur.encode()
	return p, nil
}

// withoutWorkflow are those of jobs that have no workflow (a job that has
// one is listed with its live state): one visibility query for them all.
func withoutWorkflow(ctx context.Context, c client.Client, jobs []string) ([]string, error) {
	if len(jobs) == 0 {
		return nil, nil
	}
	ids := make([]string, len(jobs))
	for i, j := range jobs {
		// Job ids are letters, digits, '.', '_' and '-' (CheckJobID): no quote.
		if err := migrate.CheckJobID(j); err != nil {
			return nil, err
		}
		ids[i] = "'" + contract.MigrationWorkflowID(j) + "'"
	}
	live := map[string]bool{}
	var token []byte
	for {
		resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
			Query:         fmt.Sprintf("WorkflowType = '%s' AND WorkflowId IN (%s)", contract.WorkflowTypeMigration, strings.Join(ids, ",")),
			NextPageToken: token, PageSize: int32(len(ids)),
		})
		if err != nil {
			return nil, fmt.Errorf("list jobs: %w", err)
		}
		for _, e := range resp.GetExecutions() {
			live[strings.TrimPrefix(e.GetExecution().GetWorkflowId(), contract.MigrationWorkflowID(""))] = true
		}
		if token = resp.GetNextPageToken(); len(token) == 0 {
			break
		}
	}
	var gone []string
	for _, j := range jobs {
		if !live[j] {
			gone = append(gone, j)
		}
	}
	return gone, nil
}

// rowOf is a job's row from its workflow's visibility record and memo.
func rowOf(e *workflow.WorkflowExecutionInfo) Row {
	r := Row{Job: strings.TrimPrefix(e.GetExecution().GetWorkflowId(), contract.MigrationWorkflowID("")),
		Started: e.GetStartTime().AsTime(), Closed: e.GetCloseTime() != nil}
	dc := converter.GetDefaultDataConverter()
	fields := e.GetMemo().GetFields()
	_ = dc.FromPayload(fields[contract.MemoState], &r.State)
	_ = dc.FromPayload(fields[contract.MemoAccount], &r.Account)
	_ = dc.FromPayload(fields[contract.MemoSummary], &r.Summary)
	if r.Closed && !contract.Ended(r.State) {
		// Terminated from outside, or reset: no final state recorded.
		r.State = strings.ToLower(strings.TrimPrefix(e.GetStatus().String(), "WORKFLOW_EXECUTION_STATUS_"))
	}
	return r
}

// IsCursorError reports whether err is a cursor this code did not make.
func IsCursorError(err error) bool {
	var c *CursorError
	return errors.As(err, &c)
}
