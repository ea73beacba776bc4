package web

import (
	"cmp"
	"context"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/edgeflow/edgeflow/internal/migrate"
	"github.com/edgeflow/edgeflow/internal/migrate/jobclient"
	"github.com/edgeflow/edgeflow/workflows/migrate/contract"
)

// Migrations are the jobs' pages' functions: the Temporal client and job
// store the API's routes read with jobclient, and the API's own start.
type Migrations struct {
	Temporal client.Client
	JobStore migrate.JobStoreConfig
	// Start is POST /api/v1/migrations's: it checks the options and the
	// credentials (by their MIGRATE_* names; where says where they came
	// from), seals them and starts the job. problems name their fields.
	Start func(ctx context.Context, o jobclient.Options, credentials map[string]string, where string) (job string, problems []string, err error)
}

// jobsPerPage bounds the jobs table: each row is one status query.
const jobsPerPage = 25

// maxSyncRows bounds the sync runs a job's page lists.
const maxSyncRows = 20

// maxDeadLetters bounds the failed keys a job's page lists; the report
// (failed only) has them all.
const maxDeadLetters = 100

func (p *Pages) migrationRoutes() {
	if p.o.Migrations.Start == nil {
		return
	}
	p.mux.HandleFunc("GET /migrations", p.page(p.migrations))
	p.mux.HandleFunc("GET /migrations/table", p.page(p.jobsTable))
	p.mux.HandleFunc("POST /migrations", p.action(true, p.startMigration))
	p.mux.HandleFunc("GET /migrations/{job}", p.page(p.job))
	p.mux.HandleFunc("GET /migrations/{job}/progress", p.page(p.jobProgress))
	p.mux.HandleFunc("GET /migrations/{job}/report", p.page(p.jobReport))
	for _, a := range []string{contract.PauseUpdate, contract.ResumeUpdate, contract.AbortUpdate, contract.RedriveUpdate} {
		p.mux.HandleFunc("POST /migrations/{job}/"+a, p.action(true, p.controlJob(a)))
	}
}

// jobRow is a job in the table: its list row and its status now.
type jobRow struct {
	jobclient.Row
	Status contract.Status
	Err    string
}

type jobsView struct {
	Rows []jobRow
	// Cursor is this page's (empty on the first), Next the next page's
	// (empty on the last).
	Cursor, Next string
	Form         migrationForm
	ReadOnly     bool
}

func (p *Pages) migrations(w http.ResponseWriter, r *http.Request, s *session) {
	p.showMigrations(w, r, s, http.StatusOK, migrationForm{}, nil)
}

func (p *Pages) showMigrations(w http.ResponseWriter, r *http.Request, s *session, status int, form migrationForm, errs []string) {
	v, err := p.jobs(r)
	if err != nil {
		errs = append(errs, "migrations: "+p.jobMessage(r, err))
		if status == http.StatusOK {
			status = jobStatus(err)
		}
	}
	v.Form, v.ReadOnly = form, s.readOnly
	p.render(w, status, "migrations", view{Title: "Migrations", User: s.user, CSRF: s.csrf, Errors: errs,
		WebUI:   p.workflowsURL(`WorkflowType="` + contract.WorkflowTypeMigration + `"`),
		Content: v})
}

// jobsTable is the table alone, for the page's script to refresh.
func (p *Pages) jobsTable(w http.ResponseWriter, r *http.Request, s *session) {
	v, err := p.jobs(r)
	if err != nil {
		w.WriteHeader(jobStatus(err))
		return
	}
	p.render(w, http.StatusOK, "jobs", view{Content: v})
}

// jobs are a page of the API's list (read from the stores a page at a
// time: the table refreshes every few seconds), each with its status (the
// API's GET /api/v1/migrations/{job}).
func (p *Pages) jobs(r *http.Request) (jobsView, error) {
	v := jobsView{Cursor: r.URL.Query().Get("cursor")}
	ctx, cancel := p.ctx(r)
	defer cancel()
	m := p.o.Migrations
	page, err := jobclient.ListPage(ctx, m.Temporal, m.JobStore, jobclient.PageOptions{PerPage: jobsPerPage, Cursor: v.Cursor})
	if err != nil {
		return v, err
	}
	v.Next = page.Next
	v.Rows = make([]jobRow, len(page.Rows))
	var wg sync.WaitGroup
	for i, row := range page.Rows {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v.Rows[i].Row = row
			st, err := jobclient.Status(ctx, m.Temporal, m.JobStore, row.Job)
			if err != nil {
				v.Rows[i].Err = p.jobMessage(r, err)
				return
			}
			v.Rows[i].Status = st
		}()
	}
	wg.Wait()
	return v, nil
}

func (p *Pages) startMigration(w http.ResponseWriter, r *http.Request, s *session) {
	form := migrationForm{Values: r.PostForm}
	o, credentials, problems := form.options()
	// The credentials are in the request's form only: never put back into
	// the page (the form is shown again without them) nor logged.
	for _, name := range credentialFields {
		form.Values.Del(name.Name)
	}
	job := ""
	var err error
	if len(problems) == 0 {
		ctx, cancel := p.ctx(r)
		defer cancel()
		job, problems, err = p.o.Migrations.Start(ctx, o, credentials, "the form")
	}
	clear(credentials)
	if len(problems) > 0 || err != nil {
		form.Errors = fieldProblems(problems)
		status := http.StatusBadRequest
		if err != nil {
			problems, status = append(problems, "start: "+p.jobMessage(r, err)), jobStatus(err)
		}
		p.showMigrations(w, r, s, status, form, problems)
		return
	}
	http.Redirect(w, r, "/migrations/"+url.PathEscape(job)+"?started=1", http.StatusSeeOther)
}

// jobView is a job's page.
type jobView struct {
	Job         string
	Status      contract.Status
	DeadLetters []migrate.ObjectResult
	More        bool // more dead letters than listed
	ReadOnly    bool
	// Syncs are the job's sync runs and its newest cutover's verdict.
	Syncs jobclient.SyncHistory
}

func (p *Pages) job(w http.ResponseWriter, r *http.Request, s *session) {
	notice := ""
	switch q := r.URL.Query(); {
	case q.Get("started") != "":
		notice = "Migration started."
	case q.Get("done") != "":
		notice = "Done: " + q.Get("done") + "."
	}
	p.showJob(w, r, s, http.StatusOK, notice)
}

func (p *Pages) showJob(w http.ResponseWriter, r *http.Request, s *session, status int, notice string, errs ...string) {
	job := r.PathValue("job")
	title := "Migration " + job
	if err := migrate.CheckJobID(job); err != nil {
		p.render(w, http.StatusNotFound, "signin", view{Title: "No such migration", User: s.user, CSRF: s.csrf, Back: true,
			Errors: []string{"job: " + err.Error()}})
		return
	}
	ctx, cancel := p.ctx(r)
	defer cancel()
	m := p.o.Migrations
	st, err := jobclient.Status(ctx, m.Temporal, m.JobStore, job)
	if err != nil {
		p.render(w, jobStatus(err), "signin", view{Title: title, User: s.user, CSRF: s.csrf, Back: true,
			WebUI: p.workflowURL(contract.MigrationWorkflowID(job)), Errors: append(errs, "job: "+p.jobMessage(r, err))})
		return
	}
	v := jobView{Job: job, Status: st, ReadOnly: s.readOnly}
	if st.Failed > 0 {
		v.DeadLetters, v.More, err = deadLetters(ctx, m.JobStore, job, st.Execution)
		if err != nil {
			errs = append(errs, "dead letters: "+p.hide(r, err))
		}
	}
	if v.Syncs, err = jobclient.Syncs(ctx, m.Temporal, job, maxSyncRows); err != nil {
		errs = append(errs, "syncs: "+p.hide(r, err))
	}
	p.render(w, status, "migration", view{Title: title, User: s.user, CSRF: s.csrf, Notice: notice, Errors: errs,
		WebUI: p.workflowURL(contract.MigrationWorkflowID(job)), Content: v})
}

// errEnough stops reading the results once the page has its dead letters.
var errEnough = errors.New("enough")

// deadLetters are the first maxDeadLetters failed objects of the job's
// execution, from the results its report is written from.
func deadLetters(ctx context.Context, cfg migrate.JobStoreConfig, job, execution string) ([]migrate.ObjectResult, bool, error) {
	store, err := cfg.Open()
	if err != nil {
		return nil, false, err
	}
	var out []migrate.ObjectResult
	more := false
	err = store.ForEachResult(ctx, job, execution, func(o migrate.ObjectResult) error {
		if o.Status != migrate.StatusFailed {
			return nil
		}
		if len(out) == maxDeadLetters {
			more = true
			return errEnough
		}
		out = append(out, o)
		return nil
	})
	if errors.Is(err, errEnough) {
		err = nil
	}
	return out, more, err
}

// jobProgress is the job's progress alone, for the page's script.
func (p *Pages) jobProgress(w http.ResponseWriter, r *http.Request, s *session) {
	job := r.PathValue("job")
	if migrate.CheckJobID(job) != nil {
		w.WriteHeader(http.StatusNotFound)
		return
	}
	ctx, cancel := p.ctx(r)
	defer cancel()
	st, err := jobclient.Status(ctx, p.o.Migrations.Temporal, p.o.Migrations.JobStore, job)
	if err != nil {
		w.WriteHeader(jobStatus(err))
		return
	}
	p.render(w, http.StatusOK, "progress", view{Content: st})
}

// jobReport streams the job's report as the API's report route does:
// csv or jsonl, every object or the failed ones.
func (p *Pages) jobReport(w http.ResponseWriter, r *http.Request, s *session) {
	job := r.PathValue("job")
	q := r.URL.Query()
	format := cmp.Or(q.Get("format"), migrate.FormatCSV)
	onlyFailed := q.Get("failed") == "true"
	var problems []string
	if err := migrate.CheckJobID(job); err != nil {
		problems = append(problems, "job: "+err.Error())
	}
	if format != migrate.FormatCSV && format != migrate.FormatJSONLines {
		problems = append(problems, "format: use csv or jsonl, got "+strconv.Quote(format))
	}
	if len(problems) > 0 {
		p.render(w, http.StatusBadRequest, "signin", view{Title: "Report", User: s.user, CSRF: s.csrf, Back: true, Errors: problems})
		return
	}
	ctx, cancel := p.ctx(r)
	m := p.o.Migrations
	st, err := jobclient.Status(ctx, m.Temporal, m.JobStore, job)
	cancel()
	var store migrate.JobStore
	if err == nil {
		store, err = m.JobStore.Open()
	}
	if err != nil {
		p.render(w, jobStatus(err), "signin", view{Title: "Report", User: s.user, CSRF: s.csrf, Back: true, Errors: []string{"job: " + p.jobMessage(r, err)}})
		return
	}
	contentType, ext := "text/csv; charset=utf-8", "csv"
	if format == migrate.FormatJSONLines {
		contentType, ext = "application/x-ndjson", "jsonl"
	}
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("Content-Disposition", `attachment; filename="`+job+"."+ext+`"`)
	if _, err := jobclient.WriteReport(r.Context(), store, job, st.Execution, format, onlyFailed, w); err != nil {
		// After the first bytes an error can only cut the answer short.
		p.o.Log.Error("console report", "job", job, "err", err)
	}
}

// controlJob is pause, resume, abort (the job's updates, which it may
// refuse in its state) and redrive, as the API's routes.
func (p *Pages) controlJob(action string) func(http.ResponseWriter, *http.Request, *session) {
	return func(w http.ResponseWriter, r *http.Request, s *session) {
		job := r.PathValue("job")
		if err := migrate.CheckJobID(job); err != nil {
			p.showJob(w, r, s, http.StatusBadRequest, "")
			return
		}
		ctx, cancel := p.ctx(r)
		defer cancel()
		var err error
		if action == contract.RedriveUpdate {
			_, _, err = jobclient.Redrive(ctx, p.o.Migrations.Temporal, job)
		} else {
			_, err = jobclient.Update(ctx, p.o.Migrations.Temporal, job, action)
		}
		if err != nil {
			p.showJob(w, r, s, jobStatus(err), "", action+": "+p.jobMessage(r, err))
			return
		}
		http.Redirect(w, r, "/migrations/"+url.PathEscape(job)+"?done="+action, http.StatusSeeOther)
	}
}

// jobStatus maps jobclient's errors to statuses, as the API does.
func jobStatus(err error) int {
	var ae *jobclient.ArchiveError
	switch {
	case jobclient.Refused(err):
		return http.StatusConflict
	case errors.As(err, &ae):
		return http.StatusServiceUnavailable
	case jobclient.NotFound(err):
		return http.StatusNotFound
	}
	return http.StatusBadGateway
}

// jobMessage words jobclient's errors as the API does: a refusal is the
// job's reason; a failure of the console's (the job store's, Temporal's)
// is logged and only named (failure.Hide).
func (p *Pages) jobMessage(r *http.Request, err error) string {
	var refused *jobclient.RefusedError
	var app *temporal.ApplicationError
	switch {
	case errors.As(err, &refused):
		return refused.Reason
	case jobclient.Refused(err) && errors.As(err, &app):
		return app.Message()
	case jobclient.NotFound(err):
		return "no such job (or it has ended and cannot take this request)"
	}
	return p.hide(r, err)
}

// fieldProblems files each problem under the field it begins with.
func fieldProblems(problems []string) map[string]string {
	out := map[string]string{}
	for _, p := range problems {
		name, _, _ := strings.Cut(p, " ")
		name = strings.TrimSuffix(name, ":")
		if _, ok := out[name]; !ok {
			out[name] = p
		}
	}
	return out
}
