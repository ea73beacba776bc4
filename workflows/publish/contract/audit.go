package contract

// ---- the audit (AuditCatalog, ListPublished, AuditPackage) ------------------

// The audit's wire names.
const (
	// WorkflowTypeAuditCatalog audits published packages on both stores and
	// repairs what it can (on TaskQueue).
	WorkflowTypeAuditCatalog = "AuditCatalog"
	// ListPublishedActivity lists the packages with a package document on
	// either metadata store (on TaskQueue).
	ListPublishedActivity = "ListPublished"
	// AuditPackageActivity audits one package: it reads, hashes and
	// decodes, so it runs on CompressTaskQueue.
	AuditPackageActivity = "AuditPackage"
	// FetchOriginalActivity downloads a version's release from its registry,
	// verified against its integrity, into the incoming bucket, for an
	// audit to repair from (on TaskQueue: it holds the registry clients).
	FetchOriginalActivity = "FetchOriginal"
	// AuditScheduleID is the Schedule that starts AuditCatalog.
	AuditScheduleID = "catalog-audit"
)

// AuditCatalogWorkflowID is the workflow ID of an audit started by the
// starter: of the catalog, or of one package.
func AuditCatalogWorkflowID(only string) string {
	if only == "" {
		return "audit/catalog"
	}
	return "audit/" + only
}

// AuditSummary is the static summary of an audit's run in the Web UI.
func AuditSummary(only string, sample float64, repair bool) string {
	what := "Audit of the catalog"
	if only != "" {
		what = "Audit of " + only
	}
	if sample > 0 && sample < 100 {
		what += ", a sample of files"
	}
	if repair {
		what += ", repairing"
	}
	return what
}

// MaxAuditProblems is how many problems an audit's result lists (all are
// counted): a bound on what history holds.
const MaxAuditProblems = 200

// AuditInput configures an audit; Names/Cursor/Stats/Seed carry progress
// across continue-as-new, so a resumed audit goes on where it was.
type AuditInput struct {
	// Only audits these packages; empty audits every published one.
	Only []string `json:"only,omitempty"`
	// SamplePercent audits that share of files, picked at random per run;
	// 0 (or 100) audits every file.
	SamplePercent float64 `json:"samplePercent,omitempty"`
	// Repair writes back the recorded bytes from a good copy.
	Repair bool `json:"repair,omitempty"`
	// WithdrawBroken takes versions left broken out of their package
	// document.
	WithdrawBroken bool `json:"withdrawBroken,omitempty"`
	// Parallel is how many packages are audited at once; 0 means 8.
	Parallel int `json:"parallel,omitempty"`
	// HistoryBudget is the event count after which the audit continues as
	// new; 0 means the workflow's default.
	HistoryBudget int `json:"historyBudget,omitempty"`

	Seed   string     `json:"seed,omitempty"`
	Names  []string   `json:"names,omitempty"`
	Cursor int        `json:"cursor,omitempty"`
	Stats  AuditStats `json:"stats"`
}

// AuditPackageInput is one package's audit.
type AuditPackageInput struct {
	Name           string  `json:"name"`
	SamplePercent  float64 `json:"samplePercent,omitempty"`
	Seed           string  `json:"seed,omitempty"`
	Repair         bool    `json:"repair,omitempty"`
	WithdrawBroken bool    `json:"withdrawBroken,omitempty"`
}

// AuditProblem is one thing an audit found wrong, and what became of it.
type AuditProblem struct {
	Package string `json:"package"`
	Version string `json:"version,omitempty"`
	// File is the published path (with .br or .gz for a twin); empty for
	// a document.
	File   string `json:"file,omitempty"`
	Store  string `json:"store"`
	Kind   string `json:"kind"`
	Detail string `json:"detail,omitempty"`
	// Repaired says the right bytes were written back; otherwise Reason
	// says why not (repair off, no good copy left).
	Repaired bool   `json:"repaired"`
	Reason   string `json:"reason,omitempty"`
	// Withdrawn: the version was taken out of its package document (only
	// with WithdrawBroken).
	Withdrawn bool `json:"withdrawn,omitempty"`
}

// AuditReport is what one package's audit found and did.
type AuditReport struct {
	Package  string `json:"package"`
	Versions int    `json:"versions"`
	Checked  int    `json:"checked"`
	// Problems are the first MaxAuditProblems; ByKind counts them all.
	Problems   []AuditProblem `json:"problems,omitempty"`
	ByKind     map[string]int `json:"byKind,omitempty"`
	Repaired   int            `json:"repaired"`
	Unrepaired int            `json:"unrepaired"`
	Withdrawn  []string       `json:"withdrawn,omitempty"`
	// NeedOriginals are versions only their original release could repair,
	// none kept: the audit fetches each from its registry and audits again.
	NeedOriginals []string `json:"needOriginals,omitempty"`
}

// OriginalRef names the release FetchOriginal downloads.
type OriginalRef struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// MaxOriginalFetches bounds the releases one package's audit downloads.
const MaxOriginalFetches = 10

// AuditStats is what an audit found and did, over every package.
type AuditStats struct {
	Packages int `json:"packages"`
	Audited  int `json:"audited"`
	Versions int `json:"versions"`
	// Checked counts files, each checked on both stores.
	Checked int `json:"checked"`
	// Problems are the first MaxAuditProblems found; ByKind counts all.
	Problems   []AuditProblem `json:"problems"`
	ByKind     map[string]int `json:"byKind,omitempty"`
	Repaired   int            `json:"repaired"`
	Unrepaired int            `json:"unrepaired"`
	Withdrawn  []string       `json:"withdrawn,omitempty"` // name@version, first few
	// Failed are packages whose audit failed (first few, with why):
	// nothing is known of them, so the audit does not pass.
	Failed         []string `json:"failed,omitempty"`
	FailedCount    int      `json:"failedCount,omitempty"`
	ContinuedAsNew int      `json:"continuedAsNew,omitempty"`
}

// Add counts one package's report.
func (s *AuditStats) Add(r AuditReport) {
	s.Audited++
	s.Versions += r.Versions
	s.Checked += r.Checked
	s.Repaired += r.Repaired
	s.Unrepaired += r.Unrepaired
	for _, p := range r.Problems {
		if len(s.Problems) < MaxAuditProblems {
			s.Problems = append(s.Problems, p)
		}
	}
	for k, n := range r.ByKind { // addition commutes: the order does not matter
		if s.ByKind == nil {
			s.ByKind = map[string]int{}
		}
		s.ByKind[k] += n
	}
	for _, v := range r.Withdrawn {
		if len(s.Withdrawn) < MaxListed {
			s.Withdrawn = append(s.Withdrawn, r.Package+"@"+v)
		}
	}
}

// Fail counts a package whose audit failed.
func (s *AuditStats) Fail(name, why string) {
	s.FailedCount++
	if len(s.Failed) < MaxListed {
		s.Failed = append(s.Failed, name+": "+why)
	}
}

// Passed says nothing is left broken: every package was audited and every
// problem found was repaired.
func (s *AuditStats) Passed() bool { return s.Unrepaired == 0 && s.FailedCount == 0 }

// ProblemCount is how many problems were found.
func (s *AuditStats) ProblemCount() int { return s.Repaired + s.Unrepaired }
