package jobclient

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"

	"github.com/edgeflow/edgeflow/internal/cli"
	"github.com/edgeflow/edgeflow/internal/migrate"
	"github.com/edgeflow/edgeflow/internal/payloadcodec"
	"github.com/edgeflow/edgeflow/workflows/migrate/contract"
)

// NewJobID is a new job's id: its start time and a random suffix.
func NewJobID() string {
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	return "m-" + time.Now().UTC().Format("20060102-150405") + "-" + hex.EncodeToString(b)
}

// Start starts a job's workflow; a running job with the same id is
// followed instead, an ended one runs again. A job id names one pair of
// stores for good: a job whose id exists (running or ended) with other
// stores is refused (a RefusedError), so an input sealed for one job never
// runs as that job against other stores.
func Start(ctx context.Context, c client.Client, in contract.JobInput) (client.WorkflowRun, error) {
	id := contract.MigrationWorkflowID(in.Job)
	if err := sameStores(ctx, c, id, "", in); err != nil {
		return nil, err
	}
	run, err := start(ctx, c, in)
	if err != nil {
		return nil, err
	}
	// Two starts of a new id at once: the later one follows the earlier's
	// run, which must be for the same stores.
	if err := sameStores(ctx, c, id, run.GetRunID(), in); err != nil {
		return nil, err
	}
	return run, nil
}

// sameStores refuses in if the job's run (runID; "" the latest) exists
// with other stores.
func sameStores(ctx context.Context, c client.Client, id, runID string, in contract.JobInput) error {
	prev, err := LastInput(ctx, c, id, runID)
	if NotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read the input of job %s: %w", in.Job, err)
	}
	return SameStores(in.Job, prev.Source.String(), prev.Dest.String(), prev.Source.Store(), prev.Dest.Store(), in)
}

// SameStores refuses in if the job it names had other stores: source and
// dest as people read them (Endpoint.String), and, when known, the
// stores' bindings (scheme included).
func SameStores(job, source, dest string, src, dst migrate.StoreBinding, in contract.JobInput) error {
	same := func(a migrate.StoreBinding, b contract.Endpoint) bool {
		s := b.Store()
		return a.Provider == s.Provider && a.Endpoint == s.Endpoint && a.Secure == s.Secure && a.Bucket == s.Bucket && a.Prefix == s.Prefix
	}
	if source != in.Source.String() || dest != in.Dest.String() || src.Bucket != "" && (!same(src, in.Source) || !same(dst, in.Dest)) {
		return &RefusedError{fmt.Sprintf("job %s exists with other stores: a job id names one copy between two stores for good; choose another id", job)}
	}
	return nil
}

func start(ctx context.Context, c client.Client, in contract.JobInput) (client.WorkflowRun, error) {
	return c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                       contract.MigrationWorkflowID(in.Job),
		TaskQueue:                contract.TaskQueue,
		WorkflowIDConflictPolicy: enums.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		WorkflowIDReusePolicy:    enums.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		TypedSearchAttributes: temporal.NewSearchAttributes(contract.JobKey.ValueSet(in.Job),
			contract.SourceBucketKey.ValueSet(in.Source.Bucket), contract.DestBucketKey.ValueSet(in.Dest.Bucket)),
		Memo:          map[string]any{contract.MemoState: contract.StateQueued, contract.MemoAccount: in.Account, contract.MemoSummary: summary(in)},
		StaticSummary: "Migrate " + summary(in),
		StaticDetails: staticDetails(in),
	}, contract.WorkflowTypeMigration, in)
}

func summary(in contract.JobInput) string {
	s := in.Source.String() + " → " + in.Dest.String()
	if in.DryRun {
		s += " (dry run)"
	}
	return s
}

func staticDetails(in contract.JobInput) string {
	var b strings.Builder
	fmt.Fprintf(&b, "**Job** %s (account %s)\n\n", in.Job, in.Account)
	fmt.Fprintf(&b, "- source: %s\n- destination: %s\n- overwrite: %s\n", in.Source, in.Dest, in.Overwrite)
	if in.KeyList != "" {
		b.WriteString("- keys: from a key list\n")
	}
	if !in.Range.IsZero() {
		fmt.Fprintf(&b, "- range: %s\n", in.Range)
	}
	if in.Verify {
		b.WriteString("- verify: every copy is compared with its source\n")
	}
	if in.DryRun {
		b.WriteString("- dry run: nothing is written\n")
	}
	b.WriteString("\nCredentials are sealed; only the migrate workers open them.")
	return b.String()
}

// Result waits for a job run and returns its status, also when it failed
// (the failure carries the status).
func Result(ctx context.Context, run client.WorkflowRun) (contract.Status, error) {
	var st contract.Status
	err := run.Get(ctx, &st)
	if err == nil {
		return st, nil
	}
	var app *temporal.ApplicationError
	if errors.As(err, &app) && app.HasDetails() && app.Details(&st) == nil {
		return st, nil
	}
	return contract.Status{}, err
}

// QueryStatus asks a running job (or reads an ended job's result).
func QueryStatus(ctx context.Context, c client.Client, job string) (contract.Status, error) {
	return QueryRun(ctx, c, job, contract.MigrationWorkflowID(job))
}

// QueryRun asks a running run of a job (its workflow id: the job's, or a
// sync run's), or reads an ended one's result.
func QueryRun(ctx context.Context, c client.Client, job, id string) (contract.Status, error) {
	d, err := c.DescribeWorkflow(ctx, id, "")
	if err != nil {
		return contract.Status{}, err
	}
	if d.WorkflowCloseTime != nil {
		return Result(ctx, c.GetWorkflow(ctx, id, ""))
	}
	v, err := c.QueryWorkflow(ctx, id, "", contract.StatusQuery)
	if err != nil {
		return contract.Status{}, fmt.Errorf("job %s is running but did not answer (is a migrate worker up?): %w", job, err)
	}
	var st contract.Status
	return st, v.Get(&st)
}

// Update sends a control update (pause, resume, abort, redrive) the job
// validates, and returns its status after.
func Update(ctx context.Context, c client.Client, job, name string) (contract.Status, error) {
	var st contract.Status
	err := cli.Update(ctx, c, client.UpdateWorkflowOptions{WorkflowID: contract.MigrationWorkflowID(job), UpdateName: name}, &st)
	return st, err
}

// RefusedError is a request that makes no sense in the job's state.
type RefusedError struct{ Reason string }

func (e *RefusedError) Error() string { return e.Reason }

// Refused reports whether err is a request the job (or its account)
// refused, told by the refusal's contract type (never its words), or one
// Redrive refused before asking.
func Refused(err error) bool {
	var app *temporal.ApplicationError
	if errors.As(err, &app) {
		switch app.Type() {
		case contract.ErrNotRunning, contract.ErrNotPaused, contract.ErrJobEnded, contract.ErrNothingToRedrive, contract.ErrInvalidLimit:
			return true
		}
	}
	var r *RefusedError
	return errors.As(err, &r)
}

// NotFound reports whether Temporal said the job (its workflow) is gone.
func NotFound(err error) bool {
	var nf *serviceerror.NotFound
	return errors.As(err, &nf)
}

// Redrive retries a job's dead letters: a running job takes them up after
// its copy (an update); an ended job runs again, on its own data, for them
// only. running says which it was.
func Redrive(ctx context.Context, c client.Client, job string) (run client.WorkflowRun, running bool, err error) {
	id := contract.MigrationWorkflowID(job)
	d, err := c.DescribeWorkflow(ctx, id, "")
	if err != nil {
		return nil, false, err
	}
	if d.WorkflowCloseTime == nil {
		if _, err := Update(ctx, c, job, contract.RedriveUpdate); err != nil {
			return nil, true, err
		}
		return c.GetWorkflow(ctx, id, ""), true, nil
	}
	prev, err := Result(ctx, c.GetWorkflow(ctx, id, ""))
	if err != nil {
		return nil, false, fmt.Errorf("job %s ended without a status to redrive from: %w", job, err)
	}
	if prev.DryRun {
		return nil, false, &RefusedError{fmt.Sprintf("job %s was a dry run: it copied nothing and has nothing to redrive", job)}
	}
	if prev.Failed == 0 {
		return nil, false, &RefusedError{fmt.Sprintf("job %s has no dead letters (failed 0)", job)}
	}
	in, err := LastInput(ctx, c, id, d.WorkflowExecution.RunID)
	if err != nil {
		return nil, false, fmt.Errorf("read the input of job %s: %w", job, err)
	}
	in.Resume = nil
	in.Redrive = &contract.RedriveFrom{Execution: prev.Execution, Started: prev.Started, Passes: prev.RedrivePasses, Counters: prev.Counters}
	run, err = Start(ctx, c, in)
	if err != nil {
		return nil, false, fmt.Errorf("start the redrive of job %s: %w", job, err)
	}
	return run, false, nil
}

// LastInput reads the input a run of a job was started with (its sealed
// credentials included, which stay sealed).
func LastInput(ctx context.Context, c client.Client, id, runID string) (contract.JobInput, error) {
	it := c.GetWorkflowHistory(ctx, id, runID, false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	if !it.HasNext() {
		return contract.JobInput{}, fmt.Errorf("empty history")
	}
	ev, err := it.Next()
	if err != nil {
		return contract.JobInput{}, err
	}
	var in contract.JobInput
	attrs := ev.GetWorkflowExecutionStartedEventAttributes()
	if attrs == nil {
		return in, fmt.Errorf("the history does not start with the job's start")
	}
	return in, decodePayloads(attrs.GetInput(), &in)
}

// decodePayloads decodes payloads read raw (a history's, a Schedule's
// action): with the payload codec on (PAYLOAD_CODEC, as the client was
// dialled), they are opened here the same way.
func decodePayloads(p *commonpb.Payloads, v ...any) error {
	dc := converter.GetDefaultDataConverter()
	codec, err := payloadcodec.FromEnv()
	if err != nil {
		return err
	}
	if codec != nil {
		dc = codec.DataConverter()
	}
	return dc.FromPayloads(p, v...)
}

// Status is a job's status from its workflow, or from its archived summary
// in the job store once the namespace's retention removed the workflow.
func Status(ctx context.Context, c client.Client, jobStore migrate.JobStoreConfig, job string) (contract.Status, error) {
	st, err := QueryStatus(ctx, c, job)
	if !NotFound(err) {
		return st, err
	}
	store, serr := jobStore.Open()
	if serr != nil {
		return st, fmt.Errorf("%w (and the job store, where a finished job's summary stays, cannot be opened: %v)", err, serr)
	}
	found, serr := store.GetSummary(ctx, job, &st)
	switch {
	case serr != nil:
		return st, &ArchiveError{fmt.Errorf("job %s has no workflow, and its summary could not be read from the job store %s/%s: %w",
			job, jobStore.S3.Endpoint, jobStore.Bucket, serr)}
	case !found:
		return st, fmt.Errorf("%w (nor a summary in the job store %s/%s)", err, jobStore.S3.Endpoint, jobStore.Bucket)
	}
	return st, nil
}

// CheckArchived refuses in if the job store keeps the summary of an ended
// job of the same id with other stores (its workflow may be gone; Start
// checks a workflow that is not).
func CheckArchived(ctx context.Context, jobStore migrate.JobStoreConfig, in contract.JobInput) error {
	store, err := jobStore.Open()
	if err != nil {
		return &ArchiveError{fmt.Errorf("job store: %w", err)}
	}
	var st contract.Status
	found, err := store.GetSummary(ctx, in.Job, &st)
	switch {
	case err != nil:
		return &ArchiveError{fmt.Errorf("read the summary of job %s: %w", in.Job, err)}
	case !found:
		return nil
	}
	return SameStores(in.Job, st.Source, st.Dest, migrate.StoreBinding{}, migrate.StoreBinding{}, in)
}

// ArchiveError is a job store that did not answer: the job may exist, so
// callers say the store is unavailable, not that the job is unknown.
type ArchiveError struct{ error }

func (e *ArchiveError) Unwrap() error { return e.error }
