// Package contract is Publish's contract: its task queues, workflow and
// activity type names, workflow IDs, signal and query names, search
// attributes, and every type that crosses the workflow/activity boundary.
// Workflows, activities, workers, starters, `make run` and the deployment
// checks import it; it holds no Temporal client or worker code and no I/O.
//
// The type names below are recorded in every run's history: changing one
// breaks the replay of runs in flight, so they stay as they are even where a
// Go name changed (e.g. the activity StageVersion is registered as
// "Download").
package contract

import (
	"strconv"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"

	"github.com/edgeflow/edgeflow/internal/product"
)

// Task queues, one per worker pool.
const (
	// TaskQueue runs the publish workflows and their network-bound
	// activities (update checks, downloads, commits).
	TaskQueue = "publish"
	// CompressTaskQueue runs the CPU-bound per-file work; scale it alone.
	CompressTaskQueue = "compress"
)

// Workflow types.
const (
	WorkflowTypePackageUpdates = "PackageUpdates"
	WorkflowTypePackageLane    = "PackageLane"
	WorkflowTypePublishVersion = "PublishVersion"
	WorkflowTypeProcessBatch   = "ProcessBatch"
)

// Activity types.
const (
	ListCatalogActivity      = "ListCatalog"
	CheckPackagesActivity    = "CheckPackages"
	StageVersionActivity     = "Download" // the Go method is StageVersion
	CommitActivity           = "Commit"
	MaterializeActivity      = "Materialize"
	FindBatchResultsActivity = "FindBatchResults"
	CompressBatchActivity    = "ProcessBatch" // on CompressTaskQueue; the Go method is CompressBatch
	// RebuildMetadataActivity writes the documents of files imported byte
	// for byte (Migrate's catalog import starts it).
	RebuildMetadataActivity = "RebuildMetadata"
)

// Signals and queries.
const (
	// BatchDoneSignal is what a batch child sends its version when it ends.
	BatchDoneSignal = "batch-done"
	// ProgressQuery answers UpdatesStats (PackageUpdates), PublishProgress
	// (PublishVersion) or LaneProgress (PackageLane).
	ProgressQuery = "progress"
	// LaneVersionsSignal adds versions (LaneVersions) to a package's lane.
	LaneVersionsSignal = "versions"
	// VersionDoneSignal is what a lane sends a check that waits (ReplyTo)
	// when one of its versions ends (a VersionOutcome).
	VersionDoneSignal = "version-done"
)

// Search attributes every run is findable by in the Web UI.
var (
	PackageKey = temporal.NewSearchAttributeKeyKeyword("Package")
	VersionKey = temporal.NewSearchAttributeKeyKeyword("Version")
)

// Product is what shared tooling reads: the queues to run pools for and the
// search attributes to register.
var Product = product.Contract{
	Name:             "publish",
	TaskQueues:       []string{TaskQueue, CompressTaskQueue},
	SearchAttributes: []temporal.SearchAttributeKey{PackageKey, VersionKey},
}

// PublishVersionWorkflowID is the workflow ID of a version's PublishVersion run, derived
// from the version so one version is never processed twice at once and a
// published one is never redone.
func PublishVersionWorkflowID(name, version string) string { return "publish/" + name + "@" + version }

// ProcessBatchWorkflowID names the child that processes one batch of a version.
func ProcessBatchWorkflowID(name, version string, batch int) string {
	return PublishVersionWorkflowID(name, version) + "/batch-" + strconv.Itoa(batch)
}

// PackageLaneWorkflowID is the workflow ID of a package's lane, the one place where the
// package's versions wait their turn once the check that found them has
// moved on.
func PackageLaneWorkflowID(name string) string { return "publish-lane/" + name }

// PackageUpdatesWorkflowID is the workflow ID the publish starter gives a check of
// one package.
func PackageUpdatesWorkflowID(name string) string { return "publish-package/" + name }

// UpdatesScheduleID is the Schedule that starts PackageUpdates.
const UpdatesScheduleID = "package-updates"

// PublishIDReusePolicy lets a version run again after any earlier run has
// ended: a failed one, a skipped one whose fileMap has since changed, or a
// committed one the check finds incomplete. A published version is never
// redone all the same: StageVersion finds it listed and ends the run at
// once. Two runs of one version never overlap (the ID is taken while one
// runs).
const PublishIDReusePolicy = enums.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE

// VersionAttributes are the search attributes of a version's runs.
func VersionAttributes(name, version string) temporal.SearchAttributes {
	return temporal.NewSearchAttributes(PackageKey.ValueSet(name), VersionKey.ValueSet(version))
}

// PublishSummary is the static summary of a version's run in the Web UI.
func PublishSummary(name, version string) string { return "Publish " + name + "@" + version }

// Error types of failures no retry can fix; workflows report them as the
// reason a version failed.
const (
	ErrInvalidPackage  = "InvalidPackage"
	ErrVersionNotFound = "VersionNotFound"
	ErrBadArchive      = "BadArchive"
	ErrNoFiles         = "NoFilesSelected"
	ErrFileMapConflict = "FileMapConflict"
	// ErrBadName: a selected file whose name no object key can hold (a
	// name over 255 bytes, not UTF-8, a key over 1,024 bytes).
	ErrBadName = "UnpublishableName"
	// ErrIntegrity: the registry serves other bytes than its digest says.
	ErrIntegrity = "IntegrityMismatch"
	// ErrTooLarge: the release archive is over the download bound.
	ErrTooLarge = "ArchiveTooLarge"
	// ErrProcessing: processing a file panicked again on retry (a minifier
	// or compressor bug that this release triggers).
	ErrProcessing = "ProcessingFailed"
	// ErrStoredAt: a document names a file's storedAt outside its
	// package's own tree (metadata.CheckStoredAt); nothing is copied.
	ErrStoredAt = "StoredAtRefused"
)
