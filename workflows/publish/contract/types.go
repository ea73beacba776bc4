package contract

import "github.com/edgeflow/edgeflow/internal/publish/catalog"

// The types below are recorded as JSON in histories: fields may be added
// (with omitempty), never renamed or retyped.

// ---- update checks (PackageUpdates, ListCatalog, CheckPackages) ----------------

// UpdatesInput configures one check of the catalog. All fields are optional:
// the Schedule starts it with none. Names/Cursor/Stats carry progress across
// continue-as-new.
type UpdatesInput struct {
	// Only restricts the check to these packages.
	Only []string `json:"only,omitempty"`
	// Packages are catalog entries sent by a starter instead of read from the
	// workers' catalog.
	Packages []catalog.Package `json:"packages,omitempty"`
	// CheckBatch is how many packages one check activity handles.
	CheckBatch int `json:"checkBatch,omitempty"`
	// Wait makes the check wait until every version it handed to a lane has
	// ended, and count how (the publish starter waits; the Schedule does not).
	Wait bool `json:"wait,omitempty"`

	Names  []string     `json:"names,omitempty"`
	Cursor int          `json:"cursor,omitempty"`
	Stats  UpdatesStats `json:"stats"`
	// Awaiting are the versions (name@version) a waiting check has handed to
	// lanes and has no outcome for yet.
	Awaiting []string `json:"awaiting,omitempty"`
}

// UpdatesStats is what a check found and did.
type UpdatesStats struct {
	Packages    int `json:"packages"`
	Checked     int `json:"checked"`
	NotModified int `json:"notModified"`
	NewVersions int `json:"newVersions"`
	Queued      int `json:"queued,omitempty"` // handed to their packages' lanes
	// Outcomes of the versions handed over, counted when the check waits.
	Outcomes
	Problems []string `json:"problems,omitempty"` // first few, for the summary
}

// PackageRef names a package and, when a starter sent it, carries its
// catalog entry (otherwise the workers' catalog is read).
type PackageRef struct {
	Name    string           `json:"name"`
	Package *catalog.Package `json:"package,omitempty"`
}

// Dist is where a release's archive is and the digest it must match.
type Dist struct {
	Tarball   string
	Integrity string // SRI of the archive (npm's dist.integrity)
	Shasum    string // hex sha1, when the registry has no integrity
}

// NewVersion is one version to publish.
type NewVersion struct {
	Version string `json:"version"`
	Dist    *Dist  `json:"dist,omitempty"`
}

// PackageCheck is the result of checking one package for new versions.
type PackageCheck struct {
	Name        string       `json:"name"`
	NewVersions []NewVersion `json:"newVersions,omitempty"`
	NotModified bool         `json:"notModified,omitempty"`
	// Problem says why the package could not be checked (an invalid
	// catalog entry, an unreachable registry, a broken marker).
	Problem string `json:"problem,omitempty"`
}

// ---- one version (PublishVersion, StageVersion, Commit, Materialize) --------------

// VersionRef names one version to publish.
type VersionRef struct {
	PackageRef
	Version string `json:"version"`
	Dist    *Dist  `json:"dist,omitempty"`
	// BatchLimits overrides the worker's batch sizing for this version.
	BatchLimits *BatchLimits `json:"batchLimits,omitempty"`
}

// BatchLimits bound one batch of files.
type BatchLimits struct {
	MaxBytes int64
	MaxFiles int
}

// ProcessingOptions select which minified twins a version's files get, and
// the library's size limit (0: the default), above which a file is stored
// as is.
type ProcessingOptions struct {
	MinifyJS, MinifyCSS bool
	MaxFileSize         int64 `json:",omitempty"`
}

// PlanSummary is what StageVersion reports: the counts of a version's plan.
// The plan itself (every file) is in the bucket, never in history.
type PlanSummary struct {
	AlreadyPublished bool              `json:"alreadyPublished,omitempty"`
	Batches          int               `json:"batches"`
	SourceFiles      int               `json:"sourceFiles"`
	ToProcess        int               `json:"toProcess"`
	Reused           int               `json:"reused"`
	SameContent      int               `json:"sameContent"`
	Skipped          int               `json:"skipped"`
	Bytes            int64             `json:"bytes"`
	Options          ProcessingOptions `json:"options"`
	// Fingerprint is the processing fingerprint the plan's reuse decisions
	// assumed; batches check that their worker matches it.
	Fingerprint string `json:"fingerprint,omitempty"`
	// SkipReason is set, with nothing staged, for a version that can never
	// publish as the catalog stands (the fileMap selects none of its
	// files): the version is skipped, not failed, and later checks skip it
	// until the fileMap changes.
	SkipReason string `json:"skipReason,omitempty"`
	// Repair is set, with AlreadyPublished, for a version listed (committed)
	// whose commit stopped part way: the run finishes its last steps.
	Repair bool `json:"repair,omitempty"`
}

// PackageVersion names a staged or committed version (Commit, Materialize).
type PackageVersion struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// CommitResult is what a committed version reports.
type CommitResult struct {
	Files       int     `json:"files"`
	Bytes       int64   `json:"bytes"`
	Latest      string  `json:"latest"`
	Reused      int     `json:"reused"`
	SourceFiles int     `json:"sourceFiles"`
	ReuseRate   float64 `json:"reuseRate"`
	Copies      int     `json:"copies"` // objects Materialize copies afterwards
}

// PublishInput asks for one version; Resume carries state across continue-as-new.
type PublishInput struct {
	VersionRef
	// MaxPendingBatches bounds children in flight (at most 500, well under
	// Temporal's 2,000 pending children per workflow); zero means two, so a
	// big version leaves the compress pool room for the next release.
	MaxPendingBatches int `json:"maxPendingBatches,omitempty"`
	// HistoryBudget is the event count after which the run continues as
	// new; zero means the workflow's default.
	HistoryBudget int           `json:"historyBudget,omitempty"`
	Resume        *PublishState `json:"resume,omitempty"`
}

// PublishState is the part of a version's progress that must survive
// continue-as-new: the plan summary and the completion count the batch
// children signal (the Durable Object counter of Cloudflare's "Dogfooding at
// scale: migrating cdnjs to Cloudflare's Developer Platform").
type PublishState struct {
	Plan    PlanSummary  `json:"plan"`
	Started int          `json:"started"`
	Done    []uint64     `json:"done"` // bitset by batch index
	Totals  BatchSummary `json:"totals"`
	Runs    int          `json:"runs"`
}

// NewPublishState is the state of a version whose plan is staged.
func NewPublishState(plan PlanSummary) *PublishState {
	return &PublishState{Plan: plan, Done: make([]uint64, (plan.Batches+63)/64)}
}

// IsDone reports whether batch b reported.
func (s *PublishState) IsDone(b int) bool { return s.Done[b/64]&(1<<(b%64)) != 0 }

// MarkDone records that batch b reported.
func (s *PublishState) MarkDone(b int) { s.Done[b/64] |= 1 << (b % 64) }

// DoneCount counts the batches that reported.
func (s *PublishState) DoneCount() int {
	n := 0
	for _, w := range s.Done {
		for ; w != 0; w &= w - 1 {
			n++
		}
	}
	return n
}

// PublishProgress answers ProgressQuery on a PublishVersion run.
type PublishProgress struct {
	Stage          string `json:"stage"`
	Batches        int    `json:"batches"`
	BatchesDone    int    `json:"batchesDone"`
	Files          int    `json:"files"`
	FilesDone      int    `json:"filesDone"`
	Reused         int    `json:"reused"`
	ContinuedAsNew int    `json:"continuedAsNew"`
}

// PublishOutput is a version's result.
type PublishOutput struct {
	AlreadyPublished bool          `json:"alreadyPublished,omitempty"`
	SkipReason       string        `json:"skipReason,omitempty"` // skipped, not published (see PlanSummary)
	Plan             PlanSummary   `json:"plan"`
	Processing       BatchSummary  `json:"processing"`
	Result           *CommitResult `json:"result,omitempty"`
}

// ---- one batch (ProcessBatch, CompressBatch, FindBatchResults) --------------------

// BatchInput names one staged batch.
type BatchInput struct {
	Name    string            `json:"name"`
	Version string            `json:"version"`
	Batch   int               `json:"batch"`
	Options ProcessingOptions `json:"options"`
	// Fingerprint, when set, is what the plan assumed this worker produces.
	Fingerprint string `json:"fingerprint,omitempty"`
	// Execution identifies the version's execution that started the batch
	// (its first run ID), echoed in the batch's report.
	Execution string `json:"execution,omitempty"`
}

// BatchSummary is what a processed batch reports to its version.
type BatchSummary struct {
	Files        int      `json:"files"`
	Twins        int      `json:"twins"`
	MinifyFailed int      `json:"minifyFailed"`
	BytesIn      int64    `json:"bytesIn"`
	BytesOut     int64    `json:"bytesOut"`
	CPUMillis    int64    `json:"cpuMillis"`
	Warnings     []string `json:"warnings,omitempty"` // first few, for the run's summary
}

// BatchDone is the payload of BatchDoneSignal.
type BatchDone struct {
	Batch int `json:"batch"`
	// Execution is the first run ID of the version execution that started
	// the batch: a child left running by an earlier, failed or terminated
	// execution of the same version must not count for the next one.
	Execution string        `json:"execution,omitempty"`
	Summary   *BatchSummary `json:"summary,omitempty"`
	Error     string        `json:"error,omitempty"`
}

// BatchResultsInput asks which batches of a version left results.
type BatchResultsInput struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	Batches []int  `json:"batches"`
}

// FoundBatch is a batch whose results are in the bucket.
type FoundBatch struct {
	Batch int `json:"batch"`
	Files int `json:"files"`
}

// RebuildInput asks the publish pool to write the metadata of every version
// in the files bucket that has none (files imported from another CDN).
type RebuildInput struct {
	// Import names the import, for logs.
	Import string `json:"import,omitempty"`
}

// RebuildResult counts what a metadata rebuild wrote.
type RebuildResult struct {
	Packages         int      `json:"packages"`
	Versions         int      `json:"versions"`
	Files            int      `json:"files"`
	Bytes            int64    `json:"bytes"`
	AlreadyPublished int      `json:"alreadyPublished"`
	Skipped          []string `json:"skipped,omitempty"`
}
