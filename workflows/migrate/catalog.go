package migrate

import (
	"errors"
	"fmt"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/edgeflow/edgeflow/workflows/migrate/contract"
)

// CatalogImport imports an existing CDN bucket into Publish: a Migration
// job copies it into the files bucket byte for byte (overwriting nothing,
// processing nothing, so every SRI stays what it was), another into the
// mirror bucket when that lives elsewhere, and once both copied every
// object the publish pool writes the metadata of the imported versions from
// the stored bytes, so the edge serves them. A copy that ends with failed
// objects stops the import before any metadata is written: redrive the job
// and start the import again (it copies nothing twice).
func CatalogImport(ctx workflow.Context, in contract.ImportInput) (*contract.ImportResult, error) {
	out := &contract.ImportResult{Import: in.Import}
	workflow.SetCurrentDetails(ctx, fmt.Sprintf("**import %s**: copying %s", in.Import, in.Files.Source))
	files, err := copyJob(ctx, in.Files)
	out.Files = files
	if err != nil {
		return out, err
	}
	if in.Mirror != nil {
		workflow.SetCurrentDetails(ctx, fmt.Sprintf("**import %s**: copying to the mirror %s", in.Import, in.Mirror.Dest))
		mirror, err := copyJob(ctx, *in.Mirror)
		out.Mirror = &mirror
		if err != nil {
			return out, err
		}
	}
	workflow.SetCurrentDetails(ctx, fmt.Sprintf("**import %s**: %d files copied; writing the metadata of the imported versions", in.Import, files.Copied+files.Skipped))
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		TaskQueue: contract.PublishTaskQueue,
		// Hashes every imported file: hours for a large catalog, heartbeating.
		StartToCloseTimeout: 24 * time.Hour, HeartbeatTimeout: 2 * time.Minute,
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: 5 * time.Minute},
	})
	if out.Rebuild, err = rebuildMetadata(actx, contract.RebuildRequest{Import: in.Import}); err != nil {
		return out, fmt.Errorf("rebuild the metadata: %w", err)
	}
	workflow.SetCurrentDetails(ctx, fmt.Sprintf("**import %s** done: %d versions of %d packages published (%d already were)",
		in.Import, out.Rebuild.Versions, out.Rebuild.Packages, out.Rebuild.AlreadyPublished))
	return out, nil
}

// copyJob runs one Migration job as a child and insists that it copied
// every object.
func copyJob(ctx workflow.Context, job contract.JobInput) (contract.Status, error) {
	cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{
		WorkflowID: contract.MigrationWorkflowID(job.Job), TaskQueue: contract.TaskQueue,
		WorkflowIDReusePolicy: enums.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		TypedSearchAttributes: temporal.NewSearchAttributes(contract.JobKey.ValueSet(job.Job),
			contract.SourceBucketKey.ValueSet(job.Source.Bucket), contract.DestBucketKey.ValueSet(job.Dest.Bucket)),
		StaticSummary: "Catalog import: " + job.Source.String() + " → " + job.Dest.String(),
	})
	var st contract.Status
	err := workflow.ExecuteChildWorkflow(cctx, contract.WorkflowTypeMigration, job).Get(ctx, &st)
	var app *temporal.ApplicationError
	if err != nil && errors.As(err, &app) && app.HasDetails() {
		_ = app.Details(&st)
	}
	switch {
	case err != nil:
		return st, fmt.Errorf("copy %s: %w", job.Dest, err)
	case st.State != contract.StateCompleted:
		return st, temporal.NewNonRetryableApplicationError(fmt.Sprintf("copy %s ended %s", job.Dest, st.State), contract.ErrImportIncomplete, nil)
	case st.Failed > 0:
		return st, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("copy %s: %d objects failed; no metadata was written. `migrate redrive %s`, then start the import again", job.Dest, st.Failed, job.Job),
			contract.ErrImportIncomplete, nil)
	}
	return st, nil
}
