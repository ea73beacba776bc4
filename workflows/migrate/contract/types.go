package contract

import (
	"fmt"
	"time"

	"github.com/edgeflow/edgeflow/internal/migrate"
)

// JobInput starts a job (or continues one: Resume).
type JobInput struct {
	Job     string   `json:"job"`
	Account string   `json:"account"`
	Source  Endpoint `json:"source"`
	Dest    Endpoint `json:"dest"`
	// KeyList is the job-store key of an uploaded key list (--keys); empty
	// means the source is listed.
	KeyList string `json:"keyList,omitempty"`
	// Range limits the listing to a key range (a split job).
	Range migrate.KeyRange `json:"range,omitzero"`
	// Filter leaves objects out of the listing (--include, --exclude,
	// sizes, times); a sync of the job takes it too.
	Filter            *migrate.Filter   `json:"filter,omitempty"`
	StripSourcePrefix bool              `json:"stripSourcePrefix,omitempty"`
	Overwrite         migrate.Overwrite `json:"overwrite"`
	Verify            bool              `json:"verify,omitempty"`
	DryRun            bool              `json:"dryRun,omitempty"`
	Settings          Settings          `json:"settings,omitzero"`
	// Redrive starts a run that retries the dead letters of an ended job
	// execution (Redrive.Execution) instead of copying anew.
	Redrive *RedriveFrom `json:"redrive,omitempty"`
	// Resume carries the state across continue-as-new.
	Resume *JobState `json:"resume,omitempty"`
	// Sync makes the run a sync of the job (workflow type MigrationSync):
	// see SyncInput.
	Sync *SyncRun `json:"sync,omitempty"`
}

// SyncRun is what a sync run does beyond copying what is new or changed.
type SyncRun struct {
	// DeleteExtraneous deletes at the destination what the source does not
	// have; without it they are counted (extraneous) and left.
	DeleteExtraneous bool `json:"deleteExtraneous,omitempty"`
	// Cutover: the last sync before a cutover, which verifies every
	// object (size and checksum) and ends with a verdict: identical or
	// the differences.
	Cutover bool `json:"cutover,omitempty"`
}

// SyncInput is the input of a sync run of the job whose input job is (read
// from its history: its stores, pinned addresses and sealed credentials are
// the job's, never a caller's). A sync copies what is new or changed, so
// it overwrites if different whatever the job's policy; a cutover verifies
// every object.
func SyncInput(job JobInput, run SyncRun) JobInput {
	in := job
	in.Resume, in.Redrive = nil, nil
	in.Overwrite = migrate.OverwriteIfDifferent
	in.Verify = job.Verify || run.Cutover
	in.Sync = &run
	return in
}

// Check reports what no job may ask for, whoever started it: the starter
// checks its flags with it, and the job its input before it queues, so a
// job started by other means fails at once with the reason.
func (in JobInput) Check() error {
	if err := in.Settings.Check(); err != nil {
		return err
	}
	if in.Filter != nil {
		if err := in.Filter.Check(); err != nil {
			return err
		}
		if in.KeyList != "" && in.Filter.OnObjects() {
			return fmt.Errorf("a key list (--keys) has no sizes or times before it is copied: --min-size, --max-size, --modified-after and --modified-before need a listed source")
		}
	}
	if in.Sync != nil && in.Sync.Cutover && in.DryRun {
		return fmt.Errorf("job %s is a dry run: it copied nothing, so there is nothing to cut over to", in.Job)
	}
	if in.KeyList != "" && in.Source.Prefix != "" && in.Redrive == nil {
		// A key list names whole source keys; a prefix as well would leave
		// open whether it is prepended, so it is refused.
		return fmt.Errorf("source %s has a prefix: a key list (--keys) names whole source keys; give the source as s3://%s",
			in.Source.Location, in.Source.Bucket)
	}
	return nil
}

// KeyMap is where the job puts each key.
func (in JobInput) KeyMap() migrate.KeyMap {
	return migrate.KeyMap{SourcePrefix: in.Source.Prefix, DestPrefix: in.Dest.Prefix, StripSourcePrefix: in.StripSourcePrefix}
}

// RedriveFrom names the ended execution whose dead letters a new run retries.
type RedriveFrom struct {
	Execution string    `json:"execution"`
	Started   time.Time `json:"started"`
	Passes    int       `json:"passes"` // redrive passes it already ran
	// Counters are the ended run's totals, which the redrive corrects.
	Counters migrate.Counters `json:"counters"`
}

// JobState is a job's progress, carried across continue-as-new.
type JobState struct {
	State string `json:"state"`
	// Execution names this execution's data in the job store and its page
	// children; it stays the same across continue-as-new and redrive runs.
	Execution string    `json:"execution"`
	Started   time.Time `json:"started"`
	// Listing is the copy's listing; Pages its pages' completion.
	Listing migrate.Cursor `json:"listing"`
	Pages   migrate.Pages  `json:"pages"`
	// Restarts counts, per unfinished page, how often it was started again
	// after its report went missing.
	Restarts map[int]int `json:"restarts,omitempty"`
	// Redrive is the redrive pass in progress, if any; Passes counts them.
	Redrive          *RedrivePass      `json:"redrive,omitempty"`
	Passes           int               `json:"passes,omitempty"`
	RedriveRequested bool              `json:"redriveRequested,omitempty"`
	Counters         migrate.Counters  `json:"counters"`
	Rate             migrate.RateMeter `json:"rate"`
	Error            string            `json:"error,omitempty"`
	Runs             int               `json:"runs,omitempty"`
	// Waiting is the store the job waits for, nil while none is down;
	// Waited is the time it waited in all.
	Waiting *StoreWait    `json:"waiting,omitempty"`
	Waited  time.Duration `json:"waited,omitempty"`
	// ListedThrough is a sync's last listed source key: the next page's
	// destination span starts after it.
	ListedThrough string `json:"listedThrough,omitempty"`
	// Differences are the first MaxDifferences objects a cutover found
	// different.
	Differences []migrate.Difference `json:"differences,omitempty"`
}

// MaxDifferences bounds the differences a cutover names (all of them are in
// its report); MaxPageDifferences those one page reports.
const (
	MaxDifferences     = 100
	MaxPageDifferences = 20
)

// StoreWait is a job waiting for a store that went down: no new transfer
// starts, and the store is probed with backoff until it passes.
type StoreWait struct {
	Side   string    `json:"side"`
	Since  time.Time `json:"since"`
	Reason string    `json:"reason"`
	// Probes counts the probes that failed; the next waits
	// migrate.ProbeDelay(Probes).
	Probes int `json:"probes,omitempty"`
}

// StoreDown is a page's (or listing's) word that a store is down: the
// StoreDownSignal's payload and an ErrStoreUnavailable's details.
type StoreDown struct {
	Execution string `json:"execution,omitempty"`
	Side      string `json:"side"`
	Reason    string `json:"reason"`
}

// ProbeInput asks whether one side of a job is usable again.
type ProbeInput struct {
	Job      string   `json:"job"`
	Side     string   `json:"side"`
	Endpoint Endpoint `json:"endpoint"`
}

// RedrivePass walks the pages that have dead letters.
type RedrivePass struct {
	Pass int `json:"pass"`
	// Listing pages through the dead-letter pages; its token is the last
	// page seen. Items are numbered in the order they are found.
	Listing migrate.Cursor `json:"listing"`
	Items   migrate.Pages  `json:"items"`
	// Seqs maps the unfinished items to their page numbers.
	Seqs map[int]int `json:"seqs,omitempty"`
}

// Status is what `migrate status` shows and what a job returns.
type Status struct {
	Job       string `json:"job"`
	State     string `json:"state"`
	Account   string `json:"account"`
	Execution string `json:"execution,omitempty"`
	Source    string `json:"source"`
	Dest      string `json:"dest"`
	DryRun    bool   `json:"dryRun,omitempty"`
	Verify    bool   `json:"verify,omitempty"`
	// Filter is what the job leaves out; Counters.Filtered counts the keys.
	Filter *migrate.Filter `json:"filter,omitempty"`
	// Limits are the job's on its source (--max-bandwidth, --max-requests),
	// divided into Shares; absent without any.
	Limits *migrate.Limits `json:"limits,omitempty"`
	migrate.Counters
	// ObjectsPerSecond and BytesPerSecond are zero until measured.
	ObjectsPerSecond float64 `json:"objectsPerSecond"`
	BytesPerSecond   float64 `json:"bytesPerSecond"`
	// ETASeconds is set once the listing is done and a rate is measured.
	ETASeconds  *float64 `json:"etaSeconds,omitempty"`
	ListingDone bool     `json:"listingDone"`
	// PagesInFlight are pages being copied; paused jobs finish them.
	PagesInFlight int        `json:"pagesInFlight"`
	Redriving     bool       `json:"redriving,omitempty"`
	RedrivePasses int        `json:"redrivePasses,omitempty"`
	Started       time.Time  `json:"started,omitzero"`
	Ended         *time.Time `json:"ended,omitempty"`
	Error         string     `json:"error,omitempty"`
	// ContinuedAsNew counts the runs the job's history was split into.
	ContinuedAsNew int `json:"continuedAsNew,omitempty"`
	// WaitingFor is the side ("source" or "destination") the running job
	// waits for, since WaitingSince, for WaitingReason; empty while both
	// stores work. WaitedSeconds is the time it waited in all.
	WaitingFor    string     `json:"waiting_for,omitempty"`
	WaitingSince  *time.Time `json:"waiting_since,omitempty"`
	WaitingReason string     `json:"waiting_reason,omitempty"`
	WaitedSeconds float64    `json:"waitedSeconds,omitempty"`
	// Sync is set on a sync run: what it was asked to do.
	Sync *SyncInfo `json:"sync,omitempty"`
	// LagSeconds (a sync run that ended) is how long it ran from its start:
	// the destination holds every change the source had when the run
	// started, so it trails the source by at most this much as it ends.
	LagSeconds *float64 `json:"lagSeconds,omitempty"`
	// Identical (a cutover that ended) says whether every object is the
	// same on both sides; DifferenceCount counts those that are not and
	// Differences names the first MaxDifferences.
	Identical       *bool                `json:"identical,omitempty"`
	DifferenceCount int64                `json:"differenceCount,omitempty"`
	Differences     []migrate.Difference `json:"differences,omitempty"`
}

// SyncInfo is a sync run's request and workflow.
type SyncInfo struct {
	WorkflowID string `json:"workflowId"`
	SyncRun
}

// SyncReport is a sync run's status as `migrate sync --json` prints it:
// its counts at the top, zeros included.
type SyncReport struct {
	Status
	Changed    int64 `json:"changed"`
	Unchanged  int64 `json:"unchanged"`
	Extraneous int64 `json:"extraneous"`
	Deleted    int64 `json:"deleted"`
}

// SyncReportOf is st as a SyncReport.
func SyncReportOf(st Status) SyncReport {
	return SyncReport{Status: st, Changed: st.Changed, Unchanged: st.Unchanged, Extraneous: st.Extraneous, Deleted: st.Deleted}
}

// PageInput asks a page child to copy one page (pass 0) or to retry one
// page's dead letters (pass > 0).
type PageInput struct {
	Job       string         `json:"job"`
	Execution string         `json:"execution"`
	Pass      int            `json:"pass,omitempty"`
	Seq       int            `json:"seq"`
	Item      int            `json:"item"` // the redrive item (pass > 0); Seq otherwise
	Source    Endpoint       `json:"source"`
	Dest      Endpoint       `json:"dest"`
	Map       migrate.KeyMap `json:"map"`
	// Filter is the job's: a sync's page leaves the destination keys it
	// leaves out where they are.
	Filter    *migrate.Filter   `json:"filter,omitempty"`
	Overwrite migrate.Overwrite `json:"overwrite"`
	Verify    bool              `json:"verify,omitempty"`
	DryRun    bool              `json:"dryRun,omitempty"`
	// Sync: the page is a sync run's (its extraneous objects are deleted
	// with DeleteExtraneous; a cutover names its differences).
	Sync *SyncRun `json:"sync,omitempty"`
	// KeysOnly: the page has keys without sizes (a key list, dead letters);
	// each object is looked up at the source first.
	KeysOnly bool      `json:"keysOnly,omitempty"`
	Started  time.Time `json:"started"`
	// Restart counts the times the job started this page again; above zero,
	// objects may have been copied by an earlier, unreported run.
	Restart  int      `json:"restart,omitempty"`
	Settings Settings `json:"settings"`
	// Account is the job's (empty: default), whose budget on the source
	// (the workers' MIGRATE_ACCOUNT_MAX_*) may lower the job's limits.
	Account string `json:"account,omitempty"`
	// JobWorkflowID is the workflow of the job (or sync run) the page is
	// of, which its transfer asks how many users share the limits
	// (SourceUsersQuery); the page sets it from its parent. Empty: the
	// transfer keeps its static share.
	JobWorkflowID string `json:"jobWorkflowId,omitempty"`
}

// PageReport is a page's outcome, signalled to its job and returned.
type PageReport struct {
	Execution string           `json:"execution"`
	Pass      int              `json:"pass,omitempty"`
	Seq       int              `json:"seq"`
	Item      int              `json:"item"`
	Counters  migrate.Counters `json:"counters"`
	// Redriven is how many dead letters a redrive page took; the job's
	// failed count drops by it and rises by Counters.Failed.
	Redriven int `json:"redriven,omitempty"`
	// Differences (a cutover's page) name the first objects it left different.
	Differences []migrate.Difference `json:"differences,omitempty"`
	// Aborted: the page stopped early (the job was aborted).
	Aborted bool   `json:"aborted,omitempty"`
	Error   string `json:"error,omitempty"`
}

// PrecheckInput asks for a precheck of both sides.
type PrecheckInput struct {
	Job     string   `json:"job"`
	Source  Endpoint `json:"source"`
	Dest    Endpoint `json:"dest"`
	KeyList string   `json:"keyList,omitempty"`
}

// ListInput asks for page Seq of the source, from Token.
type ListInput struct {
	Job       string           `json:"job"`
	Execution string           `json:"execution"`
	Seq       int              `json:"seq"`
	Token     string           `json:"token,omitempty"`
	Source    Endpoint         `json:"source"`
	KeyList   string           `json:"keyList,omitempty"`
	Range     migrate.KeyRange `json:"range,omitzero"`
	PageSize  int              `json:"pageSize"`
	// Filter leaves objects out of the page; they count in
	// ListResult.Filtered, and a bounded page keeps their keys.
	Filter *migrate.Filter `json:"filter,omitempty"`
	// Bounded (a sync's listing): the page is stored bounded (see
	// migrate.Page), after After, the previous page's last key; the last
	// page is stored even when empty.
	Bounded bool   `json:"bounded,omitempty"`
	After   string `json:"after,omitempty"`
	// Limits are the job's on its source, the listing taking one share;
	// Account is the job's (empty: default), whose own budget may lower them.
	Limits  migrate.Limits `json:"limits,omitzero"`
	Account string         `json:"account,omitempty"`
}

// ListResult is one listed page, stored in the job store for its child.
type ListResult struct {
	Seq   int `json:"seq"`
	Count int `json:"count"`
	// Filtered counts the keys listed that the filters left out (not in Count).
	Filtered int    `json:"filtered,omitempty"`
	Bytes    int64  `json:"bytes"`
	Next     string `json:"next,omitempty"`
	Last     bool   `json:"last,omitempty"`
	// LastKey (a bounded page) is its last key; Stored says a page was
	// stored for a child, even an empty one.
	LastKey string `json:"lastKey,omitempty"`
	Stored  bool   `json:"stored,omitempty"`
}

// DeadPagesInput asks which pages of an execution hold dead letters, after
// page After (-1: from the start), at most Max of them.
type DeadPagesInput struct {
	Job       string `json:"job"`
	Execution string `json:"execution"`
	After     int    `json:"after"`
	Max       int    `json:"max"`
}

// DeadPagesResult lists them in order; Last says there are no more.
type DeadPagesResult struct {
	Seqs []int `json:"seqs,omitempty"`
	Last bool  `json:"last"`
}

// FindReportsInput asks for the stored outcomes of pages whose reports
// never arrived.
type FindReportsInput struct {
	Job       string `json:"job"`
	Execution string `json:"execution"`
	Pass      int    `json:"pass,omitempty"`
	Seqs      []int  `json:"seqs"`
}

// SlotRequest is the payload of AcquireSignal and ReleaseSignal.
type SlotRequest struct {
	Job        string `json:"job"`
	WorkflowID string `json:"workflowId"`
}

// AccountInput starts (or continues) an account's workflow.
type AccountInput struct {
	Account string           `json:"account"`
	Queue   migrate.JobQueue `json:"queue"`
	// Holders maps a job to the workflow to signal when it may run.
	Holders map[string]string `json:"holders,omitempty"`
}

// SourceUsers is how many users of a job's source its limits are divided
// among now (migrate.SourceUsers), as SourceUsersQuery answers it; a page
// of another execution of the job keeps its share.
type SourceUsers struct {
	Execution string `json:"execution"`
	Users     int    `json:"users"`
}

// Queue is an account's line, as QueueQuery answers it.
type Queue struct {
	Account string   `json:"account"`
	Limit   int      `json:"limit"`
	Running []string `json:"running"`
	Waiting []string `json:"waiting"`
}

// RunningInput asks which of these workflows still run (the account's check
// for jobs that ended without releasing their slot).
type RunningInput struct {
	WorkflowIDs []string `json:"workflowIds"`
}

// ImportInput imports an existing CDN bucket into Publish: Files (and, when
// the mirror is elsewhere, Mirror) are Migration jobs copying it byte for
// byte, never overwriting; then the publish pool writes the metadata of the
// imported versions from the stored bytes.
type ImportInput struct {
	Import string    `json:"import"`
	Files  JobInput  `json:"files"`
	Mirror *JobInput `json:"mirror,omitempty"`
}

// ImportResult is what an import did.
type ImportResult struct {
	Import string  `json:"import"`
	Files  Status  `json:"files"`
	Mirror *Status `json:"mirror,omitempty"`
	// Rebuild counts the documents written (publish contract RebuildResult).
	Rebuild RebuildCounts `json:"rebuild"`
}

// RebuildRequest and RebuildCounts are Publish's RebuildInput and
// RebuildResult as this contract sees them (it imports no other product's
// contract); a test holds their JSON equal.
type RebuildRequest struct {
	Import string `json:"import,omitempty"`
}

// RebuildCounts: see RebuildRequest.
type RebuildCounts struct {
	Packages         int      `json:"packages"`
	Versions         int      `json:"versions"`
	Files            int      `json:"files"`
	Bytes            int64    `json:"bytes"`
	AlreadyPublished int      `json:"alreadyPublished"`
	Skipped          []string `json:"skipped,omitempty"`
}
