// Package contract is Migrate's contract: its task queue, workflow IDs,
// signal, update and query names, search attributes, and every type that
// crosses the boundary between the workflows, the activities, the worker and
// the starter. It holds no Temporal worker or client code and does no I/O.
package contract

import (
	"fmt"
	"strconv"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/edgeflow/edgeflow/internal/migrate"
	"github.com/edgeflow/edgeflow/internal/objectstore"
	"github.com/edgeflow/edgeflow/internal/product"
)

// TaskQueue is the queue of the migrate worker pool: listing, transfers,
// and the job, page and account workflows.
const TaskQueue = "migrate"

// Workflow type names (registered explicitly, so renaming a Go function
// never breaks histories).
const (
	WorkflowTypeMigration              = "Migration"
	WorkflowTypeMigrationPage          = "MigrationPage"
	WorkflowTypeMigrationAccount       = "MigrationAccount"
	WorkflowTypeMigrationCatalogImport = "MigrationCatalogImport"
	// WorkflowTypeMigrationSync is a sync run of a job: the Migration
	// workflow's code, under a type of its own so that `migrate list` and
	// the Web UI tell a job's runs from its syncs.
	WorkflowTypeMigrationSync = "MigrationSync"
)

// MigrationSyncScheduleID is the Schedule of a job's syncs (migrate sync
// --every); its runs' workflow IDs are this ID followed by "-" and the
// time they were due, as Temporal names a Schedule's runs.
func MigrationSyncScheduleID(job string) string { return "migrate-sync/" + job }

// MigrationSyncWorkflowID is the workflow ID of a sync run started at t
// (not by the Schedule): the Schedule's form, to the millisecond.
func MigrationSyncWorkflowID(job string, t time.Time) string {
	return MigrationSyncScheduleID(job) + "-" + t.UTC().Format("2006-01-02T15:04:05.000Z")
}

// SyncPageWorkflowID names the child that copies one page of a sync run
// (syncID its workflow ID): a run's own ID, since runs of one job follow
// each other closely.
func SyncPageWorkflowID(syncID string, pass, seq int) string {
	id := syncID
	if pass > 0 {
		id += "/redrive-" + strconv.Itoa(pass)
	}
	return id + "/page-" + strconv.Itoa(seq)
}

// MigrationCatalogImportWorkflowID is the workflow ID of a catalog import.
func MigrationCatalogImportWorkflowID(importID string) string { return "migrate-import/" + importID }

// Activity types of the migrate pool (TaskQueue), registered under these
// names by activities/migrate.Register and scheduled by them.
const (
	PrecheckActivity     = "Precheck"
	ListPageActivity     = "ListPage"
	TransferPageActivity = "TransferPage"
	DeadPagesActivity    = "DeadPages"
	FindReportsActivity  = "FindReports"
	RequestSlotActivity  = "RequestSlot"
	StillRunningActivity = "StillRunning"
	// ProbeStoreActivity asks whether a store that went down is back.
	ProbeStoreActivity = "ProbeStore"
	// ArchiveJobActivity (a Status) keeps a finished job's summary in the
	// job store, where the starter reads it once the workflow is gone.
	ArchiveJobActivity = "ArchiveJob"
)

// Publish's side of a catalog import: the queue and name of the activity
// that rebuilds its metadata (see workflows/publish/contract).
const (
	PublishTaskQueue        = "publish"
	RebuildMetadataActivity = "RebuildMetadata"
)

// MigrationWorkflowID is the workflow ID of a job: one run of a job at a time.
func MigrationWorkflowID(job string) string { return "migrate/" + job }

// MigrationPageWorkflowID names the child that copies one page of a job execution.
// Pass 0 is the copy; pass n > 0 is the n-th redrive of dead letters.
func MigrationPageWorkflowID(job, execution string, pass, seq int) string {
	id := MigrationWorkflowID(job) + "/" + shortExecution(execution)
	if pass > 0 {
		id += "/redrive-" + strconv.Itoa(pass)
	}
	return id + "/page-" + strconv.Itoa(seq)
}

func shortExecution(e string) string {
	if len(e) > 8 {
		return e[:8]
	}
	return e
}

// MigrationAccountWorkflowID is the workflow that admits an account's jobs.
func MigrationAccountWorkflowID(account string) string { return "migrate-account/" + account }

// Signals.
const (
	// PageDoneSignal carries a PageReport from a page child to its job.
	PageDoneSignal = "page-done"
	// AcquireSignal (a SlotRequest) asks an account for a slot; ReleaseSignal
	// (a SlotRequest) gives it back.
	AcquireSignal = "acquire"
	ReleaseSignal = "release"
	// SlotGrantedSignal tells a waiting job it may run.
	SlotGrantedSignal = "slot-granted"
	// StoreDownSignal (a StoreDown) tells a job that a page stopped because
	// a store is down; StoreUpSignal tells the waiting pages it is back.
	StoreDownSignal = "store-down"
	StoreUpSignal   = "store-up"
)

// Updates of a job (pause, resume, abort, redrive) return its Status; of an
// account (set-limit) its Queue.
const (
	PauseUpdate    = "pause"
	ResumeUpdate   = "resume"
	AbortUpdate    = "abort"
	RedriveUpdate  = "redrive"
	SetLimitUpdate = "set-limit"
)

// Queries: StatusQuery answers a job's Status, QueueQuery an account's
// Queue, SourceUsersQuery a job's SourceUsers (its pages ask it).
const (
	StatusQuery      = "status"
	QueueQuery       = "queue"
	SourceUsersQuery = "source-users"
)

// Search attributes (Keyword) every job and page is findable by.
var (
	JobKey          = temporal.NewSearchAttributeKeyKeyword("MigrationJob")
	SourceBucketKey = temporal.NewSearchAttributeKeyKeyword("MigrationSourceBucket")
	DestBucketKey   = temporal.NewSearchAttributeKeyKeyword("MigrationDestBucket")
)

// SearchAttributes lists Migrate's search attributes for registration.
var SearchAttributes = []temporal.SearchAttributeKey{JobKey, SourceBucketKey, DestBucketKey}

// Product is what shared tooling (make run, the dev server, deploy/) reads
// of this contract.
var Product = product.Contract{Name: "migrate", TaskQueues: []string{TaskQueue}, SearchAttributes: SearchAttributes}

// Memo keys a job keeps current, for `migrate list`.
const (
	MemoState   = "state"
	MemoAccount = "account"
	MemoSummary = "summary"
	// MemoSync is a sync run's SyncReport, set as it ends: the sync
	// history the console lists without asking each run.
	MemoSync = "sync"
)

// The states of a job.
const (
	StateQueued    = "queued" // waiting in its account's line
	StateRunning   = "running"
	StatePaused    = "paused"
	StateAborted   = "aborted"
	StateCompleted = "completed" // every object has an outcome (some may have failed)
	StateFailed    = "failed"    // the job itself failed: precheck, listing, a store gone
)

// Ended reports whether a state is final.
func Ended(state string) bool {
	return state == StateAborted || state == StateCompleted || state == StateFailed
}

// Endpoint is one side of a job.
type Endpoint struct {
	Endpoint string `json:"endpoint"` // host:port
	Secure   bool   `json:"secure,omitempty"`
	Region   string `json:"region,omitempty"`
	// Pinned are the addresses the endpoint's host resolved to when a job
	// started over the API was checked against the allowed endpoints: the
	// workers dial only these (empty: by name, as a starter's job does).
	Pinned []string `json:"pinned,omitempty"`
	migrate.Location
	Credentials migrate.SealedCredentials `json:"credentials"`
}

// Store is what the side's credentials are sealed to: the store they may
// be sent to.
func (e Endpoint) Store() migrate.StoreBinding {
	b := migrate.StoreBinding{Provider: e.Provider, Bucket: e.Bucket, Prefix: e.Prefix}
	if e.Provider != migrate.ProviderGCS {
		b.Endpoint, b.Secure, b.Pinned = e.Endpoint, e.Secure, e.Pinned
	}
	return b
}

// String is the side's location and endpoint, for people.
func (e Endpoint) String() string {
	if e.Provider == migrate.ProviderGCS {
		return e.Location.String() // the location names the store
	}
	return e.Location.String() + " on " + e.Endpoint
}

// Settings tune a job. Zero fields take the defaults of WithDefaults.
type Settings struct {
	// PageSize is the number of objects per page (one page child each),
	// listed in requests of at most 1,000 keys.
	PageSize int `json:"pageSize,omitempty"`
	// PagesInFlight bounds the page children running at once: a few keep
	// a worker's transfers busy (each page runs up to Concurrency of them)
	// and progress steady; raise it to spread a job over many workers.
	// PageSpan bounds how far ahead of the oldest unfinished page listing
	// may go.
	PagesInFlight int `json:"pagesInFlight,omitempty"`
	PageSpan      int `json:"pageSpan,omitempty"`
	// Concurrency is the most object transfers a worker runs at once for
	// the job; throttling lowers it and success raises it back.
	Concurrency int `json:"concurrency,omitempty"`
	// MultipartCutoff: objects above it stream as parallel parts of
	// PartSize, PartConcurrency at a time (between stores).
	MultipartCutoff int64 `json:"multipartCutoff,omitempty"`
	PartSize        int64 `json:"partSize,omitempty"`
	PartConcurrency int   `json:"partConcurrency,omitempty"`
	// CopyCutoff: objects above it are composed from server-side part
	// copies instead of one copy request (same store; S3 allows 5 GiB).
	CopyCutoff int64 `json:"copyCutoff,omitempty"`
	// HeartbeatTimeout is how soon a transfer on a dead worker is retried.
	HeartbeatTimeout time.Duration `json:"heartbeatTimeout,omitempty"`
	// ClockSkew is how far the stores' clocks may lag Temporal's (see
	// migrate.Decide); below a second only in tests.
	ClockSkew time.Duration `json:"clockSkew,omitempty"`
	// HistoryBudget is the event count after which the job continues as new.
	HistoryBudget int `json:"historyBudget,omitempty"`
	// WatchEvery is how long the job waits without a page report before it
	// looks for pages whose report was lost.
	WatchEvery time.Duration `json:"watchEvery,omitempty"`
	// MaxBandwidth and MaxRequests protect the source: bytes and requests
	// a second read from it by the whole job, on every worker (zero: no
	// limit). Each page in flight gets an equal share (SourceLimits).
	MaxBandwidth int64 `json:"maxBandwidth,omitempty"`
	MaxRequests  int64 `json:"maxRequests,omitempty"`
}

// SourceLimits are the job's limits on its source, divided among the most
// users of the source that run at once: PagesInFlight, because a listing
// starts only while fewer pages than that are in flight (schedule), and a
// redrive reads the job store, not the source, to find its pages.
func (s Settings) SourceLimits() migrate.Limits {
	return migrate.Limits{MaxBandwidth: s.MaxBandwidth, MaxRequests: s.MaxRequests, Shares: max(s.PagesInFlight, 1)}
}

// Defaults.
const (
	DefaultPageSize         = 2000
	DefaultPagesInFlight    = 4
	DefaultPageSpan         = 256
	DefaultConcurrency      = 64
	DefaultMultipartCutoff  = 64 << 20
	DefaultPartSize         = 16 << 20
	DefaultPartConcurrency  = 4
	DefaultCopyCutoff       = 5 << 30
	DefaultHeartbeatTimeout = time.Minute
	// DefaultHistoryBudget is reached after about 45 pages (90,000
	// objects, at 21 events a page): below the ~1,100 events a single run
	// of a 100,000-object job would reach, so a job's largest history is
	// the same at 100,000 objects as at a million (TestMigrateScale), and
	// a worker that lost its cache replays at most this much. Each run
	// carries only the flat JobState. A job keeps the budget it started
	// with (settings records the defaults in its history).
	DefaultHistoryBudget = 1000
	DefaultWatchEvery    = 10 * time.Minute
)

// WithDefaults fills the zero fields.
func (s Settings) WithDefaults() Settings {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def64 := func(v *int64, d int64) {
		if *v <= 0 {
			*v = d
		}
	}
	defDur := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&s.PageSize, DefaultPageSize)
	def(&s.PagesInFlight, DefaultPagesInFlight)
	def(&s.PageSpan, DefaultPageSpan)
	def(&s.Concurrency, DefaultConcurrency)
	def64(&s.MultipartCutoff, DefaultMultipartCutoff)
	def64(&s.PartSize, DefaultPartSize)
	def(&s.PartConcurrency, DefaultPartConcurrency)
	def64(&s.CopyCutoff, DefaultCopyCutoff)
	defDur(&s.HeartbeatTimeout, DefaultHeartbeatTimeout)
	if s.ClockSkew == 0 {
		s.ClockSkew = migrate.ClockSkew
	}
	def(&s.HistoryBudget, DefaultHistoryBudget)
	defDur(&s.WatchEvery, DefaultWatchEvery)
	s.PageSpan = max(s.PageSpan, s.PagesInFlight)
	return s
}

// Check reports settings no store would accept.
func (s Settings) Check() error {
	switch {
	case s.PageSize > 10000:
		return fmt.Errorf("page size %d: at most 10000 objects per page", s.PageSize)
	case s.PartSize < 0 || s.MultipartCutoff < 0 || s.CopyCutoff < 0:
		return fmt.Errorf("part size (--part-size) %d, multipart cutoff (--multipart-cutoff) %d, copy cutoff (--copy-cutoff) %d: sizes are not negative",
			s.PartSize, s.MultipartCutoff, s.CopyCutoff)
	case s.PartSize != 0 && s.PartSize < objectstore.MinPartSize:
		return fmt.Errorf("part size (--part-size) %d: S3 parts are at least 5 MiB", s.PartSize)
	case s.PartSize > objectstore.MaxPartSize:
		return fmt.Errorf("part size (--part-size) %d: S3 parts are at most 5 GiB", s.PartSize)
	case s.MultipartCutoff != 0 && s.PartSize != 0 && s.MultipartCutoff < s.PartSize:
		return fmt.Errorf("multipart cutoff (--multipart-cutoff) %d is below the part size (--part-size) %d", s.MultipartCutoff, s.PartSize)
	case s.CopyCutoff > objectstore.MaxCopySize:
		return fmt.Errorf("copy cutoff (--copy-cutoff) %d: S3 copies at most 5 GiB in one request", s.CopyCutoff)
	case s.MaxBandwidth < 0:
		return fmt.Errorf("max bandwidth (--max-bandwidth) %d: not negative (0: no limit)", s.MaxBandwidth)
	case s.MaxRequests < 0:
		return fmt.Errorf("max requests (--max-requests) %d: not negative (0: no limit)", s.MaxRequests)
	}
	return nil
}

// Error types of Migrate's application errors. Starters tell them apart by
// these types, never by their messages.
const (
	// ErrPrecheck (an activity's, not retried): a side lacks a bucket or a
	// permission.
	ErrPrecheck = "PrecheckFailed"
	// ErrPermanent (an activity's, not retried): retrying cannot help
	// (credentials that do not open, a malformed input).
	ErrPermanent = "PermanentFailure"
	// ErrStoreUnavailable (an activity's, not retried by Temporal): a store
	// is down; its details are a StoreDown, and the job waits for the store.
	ErrStoreUnavailable = "StoreUnavailable"
	// ErrMigrationFailed: a job failed; its details are its Status.
	ErrMigrationFailed = "MigrationFailed"
	// ErrImportIncomplete: a catalog import stopped before writing any
	// metadata, because a copy did not copy every object.
	ErrImportIncomplete = "ImportIncomplete"

	// Refusals of the control updates, by their validators: the request
	// makes no sense in the job's (or account's) current state, and
	// nothing reached the history.

	// ErrNotRunning: only a running job can be paused.
	ErrNotRunning = "JobNotRunning"
	// ErrNotPaused: only a paused job can be resumed.
	ErrNotPaused = "JobNotPaused"
	// ErrJobEnded: the job has ended, or its abort is under way (a redrive
	// of an ended job starts a new run of it instead).
	ErrJobEnded = "JobEnded"
	// ErrNothingToRedrive: a dry run copies nothing, so it has no dead
	// letters.
	ErrNothingToRedrive = "NothingToRedrive"
	// ErrInvalidLimit: an account runs at least one job at a time.
	ErrInvalidLimit = "InvalidLimit"
)
