package contract

// ---- a package's lane (PackageLane) ------------------------------------------------

// LaneInput starts a package's lane, or continues it as new.
type LaneInput struct {
	Name string `json:"name"`
	// Queue are the versions waiting, in the order they run; the first is
	// the one running when the lane continued as new (it runs again: its ID
	// makes that safe).
	Queue []LaneEntry `json:"queue"`
	Stats LaneStats   `json:"stats"`
	// HistoryBudget is the event count after which the lane continues as
	// new; zero means the workflow's default.
	HistoryBudget int `json:"historyBudget,omitempty"`
}

// LaneEntry is one version waiting in a lane and the checks that wait for it.
type LaneEntry struct {
	VersionRef
	ReplyTo []string `json:"replyTo,omitempty"`
}

// LaneVersions is the payload of LaneVersionsSignal: versions to add, oldest
// first, and the workflow ID of the check waiting for their outcomes, if any.
type LaneVersions struct {
	Versions []VersionRef `json:"versions"`
	ReplyTo  string       `json:"replyTo,omitempty"`
}

// How a version handed to a lane ended.
const (
	OutcomePublished        = "published"
	OutcomeAlreadyPublished = "alreadyPublished"
	OutcomeInProgress       = "inProgress" // running elsewhere, or asked for twice
	OutcomeFailed           = "failed"
	// OutcomeSkipped: the version can never publish as the catalog stands
	// (its fileMap selects nothing from it); cdnjs skips such versions.
	OutcomeSkipped = "skipped"
)

// VersionOutcome is the payload of VersionDoneSignal.
type VersionOutcome struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	Outcome string `json:"outcome"`
	Error   string `json:"error,omitempty"`
}

// Outcomes counts how versions handed to lanes ended. A lane and a check
// that waits for its versions count them the same way, here; embedded, its
// fields encode as the embedding struct's own.
type Outcomes struct {
	Published        int      `json:"published"`
	AlreadyPublished int      `json:"alreadyPublished"`
	InProgress       int      `json:"inProgress"`
	Failed           int      `json:"failed"`
	Failures         []string `json:"failures,omitempty"` // first few
	// Skipped counts versions the fileMap selects nothing from: skipped
	// with their reason (Skips, first few), not failed.
	Skipped int      `json:"skipped,omitempty"`
	Skips   []string `json:"skips,omitempty"`
}

// MaxListed is how many failures, skips or problems a summary lists.
const MaxListed = 20

// Count adds one outcome; an unknown outcome counts as a failure.
func (c *Outcomes) Count(o VersionOutcome) {
	switch o.Outcome {
	case OutcomePublished:
		c.Published++
	case OutcomeAlreadyPublished:
		c.AlreadyPublished++
	case OutcomeInProgress:
		c.InProgress++
	case OutcomeSkipped:
		c.Skipped++
		if len(c.Skips) < MaxListed {
			c.Skips = append(c.Skips, o.Name+"@"+o.Version+": "+o.Error)
		}
	default:
		c.Failed++
		if len(c.Failures) < MaxListed {
			c.Failures = append(c.Failures, o.Error)
		}
	}
}

// LaneStats counts what a lane ran.
type LaneStats struct {
	Outcomes
	ContinuedAsNew int `json:"continuedAsNew,omitempty"`
}

// LaneProgress answers ProgressQuery on a lane.
type LaneProgress struct {
	Running string    `json:"running,omitempty"` // the version publishing now
	Waiting []string  `json:"waiting,omitempty"` // in order
	Stats   LaneStats `json:"stats"`
}
