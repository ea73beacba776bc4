package console

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/edgeflow/edgeflow/internal/migrate"
	"github.com/edgeflow/edgeflow/internal/migrate/jobclient"
	"github.com/edgeflow/edgeflow/internal/objectstore"
	"github.com/edgeflow/edgeflow/workflows/migrate/contract"
)

// migrationAPI serves /api/v1/migrations on the migrate starter's own
// functions (jobclient): the same option checks, sealing and Temporal calls.
type migrationAPI struct {
	tc       client.Client
	jobStore migrate.JobStoreConfig
	timeout  time.Duration
	// endpoints is what jobs started here may reach; nil: read from the
	// environment (MIGRATE_ALLOWED_ENDPOINTS, MIGRATE_GCS_ADC_BUCKETS) on
	// each start, with the job store's endpoint allowed.
	endpoints *jobclient.EndpointPolicy
	log       *slog.Logger // nil: slog.Default()
}

// policy is the endpoint policy of the jobs started here.
func (a migrationAPI) policy() (*jobclient.EndpointPolicy, error) {
	if a.endpoints != nil {
		return a.endpoints, nil
	}
	return jobclient.PolicyFromEnv(os.Getenv, a.jobStore.S3.Endpoint)
}

func (a migrationAPI) logger() *slog.Logger {
	if a.log != nil {
		return a.log
	}
	return slog.Default()
}

func (a migrationAPI) routes() []route {
	rs := []route{
		{"GET /api/v1/migrations", a.list},
		{"POST /api/v1/migrations", a.start},
		{"PUT /api/v1/migrations/keys/{id}", a.putKeys},
		{"GET /api/v1/migrations/{job}", a.get},
		{"POST /api/v1/migrations/{job}/redrive", a.redrive},
		{"GET /api/v1/migrations/{job}/report", a.report},
	}
	for _, action := range []string{contract.PauseUpdate, contract.ResumeUpdate, contract.AbortUpdate} {
		rs = append(rs, route{"POST /api/v1/migrations/{job}/" + action, a.control(action)})
	}
	return append(rs, a.syncRoutes()...)
}

func (a migrationAPI) ctx(r *http.Request) (context.Context, context.CancelFunc) {
	return context.WithTimeout(r.Context(), a.timeout)
}

func jobName(r *http.Request) (string, error) {
	job := r.PathValue("job")
	if err := migrate.CheckJobID(job); err != nil {
		return "", fail(http.StatusBadRequest, CodeInvalid, "job: %v", err)
	}
	return job, nil
}

// startRequest is POST /api/v1/migrations: the starter's options and the
// credentials by the names the starter reads them from
// (MIGRATE_SOURCE_ACCESS_KEY, …).
type startRequest struct {
	jobclient.Options
	Credentials map[string]string `json:"credentials"`
}

// credentialNames are the names a body's credentials may have: the S3
// keys of both sides, and a GCS source's service-account key itself (a
// key file's path on the starter's machine is never read here).
var credentialNames = []string{migrate.EnvSourceAccessKey, migrate.EnvSourceSecretKey, migrate.EnvSourceSessionToken,
	migrate.EnvDestAccessKey, migrate.EnvDestSecretKey, migrate.EnvDestSessionToken, migrate.EnvSourceGCSKey}

// startedJob is the answer to a start: the job's status and its run.
type startedJob struct {
	contract.Status
	WorkflowID string `json:"workflowId"`
	RunID      string `json:"runId"`
}

func (a migrationAPI) start(w http.ResponseWriter, r *http.Request) (int, any, *ResultInfo, error) {
	body, berr := readBody(w, r)
	if berr != nil {
		return 0, nil, nil, berr
	}
	var req startRequest
	if err := decodeStrict(body, &req); err != nil {
		return 0, nil, nil, err
	}
	ctx, cancel := a.ctx(r)
	defer cancel()
	in, run, problems, err := a.startJob(ctx, req.Options, req.Credentials, "the body's credentials")
	req.Credentials = nil // sealed; nothing keeps them longer
	if len(problems) > 0 {
		return 0, nil, nil, invalid(problems)
	}
	if err != nil {
		return 0, nil, nil, err
	}
	st := contract.Status{Job: in.Job, State: contract.StateQueued, Account: in.Account}
	if s, err := jobclient.QueryStatus(ctx, a.tc, in.Job); err == nil {
		st = s
	}
	w.Header().Set("Location", "/api/v1/migrations/"+in.Job)
	return http.StatusCreated, startedJob{st, run.GetID(), run.GetRunID()}, nil, nil
}

// startJob checks a job's options and credentials (by the names in
// credentialNames; where says where they came from), seals the
// credentials and starts the job: POST /api/v1/migrations and the
// console's form alike. Its endpoints must be allowed (MIGRATE_ALLOWED_ENDPOINTS)
// and are pinned to the addresses they resolve to now; a gs:// source needs
// its key or an allowed bucket. problems name their fields (a 400); err is
// any other failure. No error holds a credential.
func (a migrationAPI) startJob(ctx context.Context, o jobclient.Options, credentials map[string]string, where string) (contract.JobInput, client.WorkflowRun, []string, error) {
	if o.Job == "" {
		o.Job = jobclient.NewJobID()
	}
	if o.Account == "" {
		o.Account = "default"
	}
	in, problems := o.Input(o.Job, jobclient.JSONName)
	if o.Keys != "" {
		key, err := a.keyList(ctx, o.Keys)
		var bad *apiError
		switch {
		case errors.As(err, &bad):
			problems = append(problems, bad.Error())
		case err != nil:
			return in, nil, nil, err // the job store's failure: hidden, not a problem of the request
		}
		in.KeyList = key
	}
	for name := range credentials {
		if !slices.Contains(credentialNames, name) {
			problems = append(problems, fmt.Sprintf("credentials.%s: unknown name (known: %s)", name, strings.Join(credentialNames, ", ")))
		}
	}
	if len(problems) > 0 {
		return in, nil, problems, nil
	}
	src, dst, err := migrate.CredentialsFrom(func(name string) string { return credentials[name] }, where, in.Source.Provider)
	if err != nil {
		return in, nil, []string{err.Error()}, nil
	}
	policy, err := a.policy()
	if err != nil {
		return in, nil, nil, err // the operator's setting is malformed: no job starts
	}
	for _, err := range policy.PinInput(ctx, &in, src.GCSKey != "", jobclient.JSONName) {
		var na *jobclient.NotAllowedError
		if errors.As(err, &na) {
			// The reason (what it resolves to) is the operator's only.
			a.logger().Warn("migration endpoint refused", "job", in.Job, "option", na.Option, "endpoint", na.Endpoint, "reason", na.Detail)
		}
		problems = append(problems, err.Error())
	}
	if len(problems) > 0 {
		return in, nil, problems, nil
	}
	if err := jobclient.CheckArchived(ctx, a.jobStore, in); err != nil {
		return in, nil, nil, err
	}
	if err := jobclient.Seal(&in, src, dst); err != nil {
		return in, nil, nil, err
	}
	run, err := jobclient.Start(ctx, a.tc, in)
	return in, run, nil, err
}

// startForm is startJob for the console's start form.
func (a migrationAPI) startForm(ctx context.Context, o jobclient.Options, credentials map[string]string, where string) (string, []string, error) {
	in, _, problems, err := a.startJob(ctx, o, credentials, where)
	return in.Job, problems, err
}

// decodeStrict decodes a JSON object, refusing unknown fields by name.
func decodeStrict(body []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &syntaxErr):
		// Not the decoder's words: they quote the body, which may hold a key.
		return fail(http.StatusBadRequest, CodeInvalid, "(document): not valid JSON (at byte %d)", syntaxErr.Offset)
	case errors.As(err, &typeErr):
		return fail(http.StatusBadRequest, CodeInvalid, "%s: want %s, got %s", typeErr.Field, typeErr.Type, typeErr.Value)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return fail(http.StatusBadRequest, CodeInvalid, "%s: unknown field", strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`))
	}
	return fail(http.StatusBadRequest, CodeInvalid, "(document): not a JSON object: %v", err)
}

// invalid is a 400 with one error per problem (each names its field).
func invalid(problems []string) *apiError {
	e := &apiError{status: http.StatusBadRequest}
	for _, p := range problems {
		e.errs = append(e.errs, Message{Code: CodeInvalid, Message: p})
	}
	return e
}

// keyListKey is where an uploaded key list is kept in the job store.
func keyListKey(id string) string { return "keylists/" + id + ".txt" }

// keyList is the job store key of an uploaded key list that exists.
func (a migrationAPI) keyList(ctx context.Context, id string) (string, error) {
	if err := checkKeyListID(id); err != nil {
		return "", fail(http.StatusBadRequest, CodeInvalid, "keys: %v", err)
	}
	store, err := a.jobStore.Open()
	if err != nil {
		return "", err
	}
	key := keyListKey(id)
	if _, err := store.Store.Stat(ctx, store.Bucket, key); err != nil {
		if errors.Is(err, objectstore.ErrNotFound) {
			return "", fail(http.StatusBadRequest, CodeInvalid, "keys: no key list %q (PUT /api/v1/migrations/keys/%s uploads it first)", id, id)
		}
		return "", err
	}
	return key, nil
}

// MaxKeyList is the largest key list PUT takes.
const MaxKeyList = 1 << 30

// checkKeyListID applies a key list id's rule: 1 to 64 letters, digits,
// '.', '_' and '-' (a job id's), starting with a letter or digit.
func checkKeyListID(id string) error {
	if err := migrate.CheckJobID(id); err != nil {
		return fmt.Errorf("key list id %q: use 1 to 64 letters, digits, '.', '_' and '-', starting with a letter or digit", id)
	}
	return nil
}

// putKeys streams a key list into the job store, checking it (one key a
// line, each a valid key) as it passes: a list that fails the check is not
// stored. It is the one body larger than MaxBody, and its length must be
// known (Content-Length) and at most MaxKeyList. A key list is written
// once: a job that names it reads the list it was started with, so an id
// that exists is refused (409), never overwritten or removed.
func (a migrationAPI) putKeys(w http.ResponseWriter, r *http.Request) (int, any, *ResultInfo, error) {
	id := r.PathValue("id")
	if err := checkKeyListID(id); err != nil {
		return 0, nil, nil, fail(http.StatusBadRequest, CodeInvalid, "id: %v", err)
	}
	switch {
	case r.ContentLength > MaxKeyList:
		return 0, nil, nil, fail(http.StatusRequestEntityTooLarge, CodeTooLarge, "body: a key list is at most %d bytes", MaxKeyList)
	case r.ContentLength < 0:
		return 0, nil, nil, fail(http.StatusLengthRequired, CodeInvalid, "Content-Length: a key list's length must be given (up to %d bytes)", MaxKeyList)
	}
	// A gibibyte takes longer than the server's read timeout for a body.
	_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(time.Hour))
	store, err := a.jobStore.Open()
	if err != nil {
		return 0, nil, nil, err
	}
	if err := store.Ensure(r.Context()); err != nil {
		return 0, nil, nil, fmt.Errorf("job store %s: %w", a.jobStore.S3.Endpoint, err)
	}
	key := keyListKey(id)
	exists := fail(http.StatusConflict, CodeConflict, "id: key list %q exists; a key list is written once (upload under a new id)", id)
	switch _, err := store.Store.Stat(r.Context(), store.Bucket, key); {
	case err == nil:
		return 0, nil, nil, exists
	case !errors.Is(err, objectstore.ErrNotFound):
		return 0, nil, nil, err
	}
	cw, ok := store.Store.(objectstore.ConditionalWriter)
	if !ok {
		return 0, nil, nil, fmt.Errorf("job store %s: no conditional writes, so a key list could be overwritten", a.jobStore.S3.Endpoint)
	}
	body := http.MaxBytesReader(w, r.Body, MaxKeyList)
	pr, pw := io.Pipe()
	type checked struct {
		n   int
		err error
	}
	done := make(chan checked, 1)
	go func() {
		n, err := migrate.CheckKeyList(pr)
		pr.CloseWithError(fmt.Errorf("key list: %w", errOr(err, io.EOF)))
		done <- checked{n, err}
	}()
	// Only if no list of that id exists, even one another upload of the
	// same id just wrote.
	_, perr := cw.PutIf(r.Context(), store.Bucket, key, io.TeeReader(body, pw), r.ContentLength,
		objectstore.PutOptions{Metadata: objectstore.Metadata{ContentType: "text/plain; charset=utf-8"}}, objectstore.Precondition{IfNoneMatch: "*"})
	pw.Close()
	c := <-done
	var tooBig *http.MaxBytesError
	switch {
	case errors.Is(perr, objectstore.ErrPreconditionFailed):
		return 0, nil, nil, exists
	case errors.As(perr, &tooBig):
		return 0, nil, nil, fail(http.StatusRequestEntityTooLarge, CodeTooLarge, "body: a key list is at most %d bytes", MaxKeyList)
	case c.err != nil:
		if perr == nil {
			// This upload wrote it (the check failed on its last lines):
			// remove what only it wrote.
			_ = store.Store.Delete(context.WithoutCancel(r.Context()), store.Bucket, key)
		}
		return 0, nil, nil, fail(http.StatusBadRequest, CodeInvalid, "body: %v", c.err)
	case perr != nil:
		return 0, nil, nil, perr
	}
	return http.StatusCreated, map[string]any{"id": id, "keys": c.n}, nil, nil
}

func errOr(err, otherwise error) error {
	if err != nil {
		return err
	}
	return otherwise
}

func (a migrationAPI) get(w http.ResponseWriter, r *http.Request) (int, any, *ResultInfo, error) {
	job, err := jobName(r)
	if err != nil {
		return 0, nil, nil, err
	}
	ctx, cancel := a.ctx(r)
	defer cancel()
	st, err := jobclient.Status(ctx, a.tc, a.jobStore, job)
	if err != nil {
		return 0, nil, nil, err
	}
	return http.StatusOK, st, nil, nil
}

// control is pause, resume and abort: an update the job validates (a
// request that makes no sense in its state is a 409 with its reason).
func (a migrationAPI) control(action string) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) (int, any, *ResultInfo, error) {
		job, err := jobName(r)
		if err != nil {
			return 0, nil, nil, err
		}
		ctx, cancel := a.ctx(r)
		defer cancel()
		st, err := jobclient.Update(ctx, a.tc, job, action)
		if err != nil {
			return 0, nil, nil, err
		}
		return http.StatusOK, st, nil, nil
	}
}

func (a migrationAPI) redrive(w http.ResponseWriter, r *http.Request) (int, any, *ResultInfo, error) {
	job, err := jobName(r)
	if err != nil {
		return 0, nil, nil, err
	}
	ctx, cancel := a.ctx(r)
	defer cancel()
	run, _, err := jobclient.Redrive(ctx, a.tc, job)
	if err != nil {
		return 0, nil, nil, err
	}
	st := contract.Status{Job: job, State: contract.StateQueued}
	if s, err := jobclient.QueryStatus(ctx, a.tc, job); err == nil {
		st = s
	}
	return http.StatusOK, startedJob{st, run.GetID(), run.GetRunID()}, nil, nil
}

// report streams a job's per-object report: CSV or JSON lines, every
// object or (failed=true) the dead letters only.
func (a migrationAPI) report(w http.ResponseWriter, r *http.Request) (int, any, *ResultInfo, error) {
	job, err := jobName(r)
	if err != nil {
		return 0, nil, nil, err
	}
	q := r.URL.Query()
	format := q.Get("format")
	if format == "" {
		format = migrate.FormatCSV
	}
	if format != migrate.FormatCSV && format != migrate.FormatJSONLines {
		return 0, nil, nil, fail(http.StatusBadRequest, CodeInvalid, "format: use csv or jsonl, got %q", format)
	}
	onlyFailed := false
	if v := q.Get("failed"); v != "" {
		if onlyFailed, err = strconv.ParseBool(v); err != nil {
			return 0, nil, nil, fail(http.StatusBadRequest, CodeInvalid, "failed: want true or false, got %q", v)
		}
	}
	ctx, cancel := a.ctx(r)
	st, err := jobclient.Status(ctx, a.tc, a.jobStore, job)
	cancel()
	if err != nil {
		return 0, nil, nil, err
	}
	store, err := a.jobStore.Open()
	if err != nil {
		return 0, nil, nil, err
	}
	contentType, ext := "text/csv; charset=utf-8", "csv"
	if format == migrate.FormatJSONLines {
		contentType, ext = "application/x-ndjson", "jsonl"
	}
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("Content-Disposition", fmt.Sprintf(`attachment; filename="%s.%s"`, job, ext))
	// Streamed from the job store in constant memory; an error after the
	// first bytes can only cut the answer short (and is logged).
	if _, err := jobclient.WriteReport(r.Context(), store, job, st.Execution, format, onlyFailed, w); err != nil {
		return 0, nil, nil, &streamError{err}
	}
	return 0, nil, nil, errWritten
}

// streamError is a failure after an answer began: logged, not answered.
type streamError struct{ error }

func (e *streamError) Unwrap() error { return e.error }

// migrationError maps jobclient's errors to the API's; nil for any other
// (an unreachable job store too: failure.Hide answers it without its cause).
func migrationError(err error) *apiError {
	switch {
	case jobclient.IsCursorError(err):
		return fail(http.StatusBadRequest, CodeInvalid, "%v", err)
	case jobclient.Refused(err):
		return fail(http.StatusConflict, CodeConflict, "job: %v", refusal(err))
	case jobclient.NotFound(err):
		return fail(http.StatusNotFound, CodeNotFound, "job: no such job (or it has ended and cannot take this request)")
	}
	return nil
}

// refusal is the job's reason: the refusal's message, without the
// update's wrapping.
func refusal(err error) string {
	var r *jobclient.RefusedError
	if errors.As(err, &r) {
		return r.Reason
	}
	var app *temporal.ApplicationError
	if errors.As(err, &app) {
		return app.Message()
	}
	return err.Error()
}
