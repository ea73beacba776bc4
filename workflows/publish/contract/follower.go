package contract

import (
	"strconv"
	"time"
)

// ---- following a registry's changes feed (RegistryFollower, FollowRegistry) ----

// The follower's wire names.
const (
	// WorkflowTypeRegistryFollower follows one registry's changes feed and
	// starts the check of every catalog package that changed (on TaskQueue).
	WorkflowTypeRegistryFollower = "RegistryFollower"
	// FollowRegistryActivity long-polls the feed from a sequence and
	// returns the catalog packages that changed (on TaskQueue).
	FollowRegistryActivity = "FollowRegistry"
	// RegistryNPM is the npm registry's name in the follower's ID.
	RegistryNPM = "npm"
)

// RegistryFollowerWorkflowID is the one follower of a registry: starting it
// again while it runs finds the running one.
func RegistryFollowerWorkflowID(registry string) string { return "registry-follower/" + registry }

// FollowerCheckWorkflowID is the check (a PackageUpdates) the follower of
// registry starts for its n-th burst of changed packages.
func FollowerCheckWorkflowID(registry string, n int) string {
	return RegistryFollowerWorkflowID(registry) + "/check-" + strconv.Itoa(n)
}

// HookCheckWorkflowID is the check (a PackageUpdates of one package) a
// webhook delivery starts: a redelivery finds it instead of checking again.
func HookCheckWorkflowID(name, delivery string) string {
	return "publish-hook/" + name + "/" + delivery
}

// FollowerSummary is the follower's static summary in the Web UI.
func FollowerSummary(registry string) string {
	return "Follows the " + registry + " registry's changes feed and checks the catalog packages that change"
}

// FollowerInput starts a registry's follower, or continues it as new. Only
// Registry is needed; the rest is the state a continue-as-new carries.
type FollowerInput struct {
	Registry string `json:"registry"`
	// Since is the feed's last sequence the follower has taken in (opaque,
	// as the feed wrote it); empty: start from now.
	Since string `json:"since,omitempty"`
	// Dirty are catalog packages that changed while their check ran: each
	// gets one more check once that one ends.
	Dirty []string `json:"dirty,omitempty"`
	// Checks numbers the bursts of checks started so far (their IDs).
	Checks int `json:"checks,omitempty"`
	// CaughtUpAt is when the feed last answered with nothing left behind:
	// every change up to then has been seen.
	CaughtUpAt time.Time     `json:"caughtUpAt,omitzero"`
	Stats      FollowerStats `json:"stats"`

	// PollWait is how long one long-poll waits for a change; 0: 30 s.
	PollWait time.Duration `json:"pollWait,omitempty"`
	// HistoryBudget is the event count after which the follower continues
	// as new; 0: the workflows' default.
	HistoryBudget int `json:"historyBudget,omitempty"`
}

// FollowerStats counts what a follower did, across continue-as-new.
type FollowerStats struct {
	Polls    int `json:"polls"`
	Changes  int `json:"changes"`  // changes read from the feed, any package
	Changed  int `json:"changed"`  // of them, changes of catalog packages
	Checks   int `json:"checks"`   // checks started
	Failures int `json:"failures"` // polls that failed or stalled
	// CheckFailures counts checks that ended in failure (the Schedule's
	// next check covers their packages).
	CheckFailures  int `json:"checkFailures,omitempty"`
	ContinuedAsNew int `json:"continuedAsNew,omitempty"`
}

// FollowInput asks FollowRegistryActivity for the changes after Since.
type FollowInput struct {
	Registry string        `json:"registry"`
	Since    string        `json:"since,omitempty"`
	Wait     time.Duration `json:"wait"`
}

// MaxFollowNames bounds the catalog packages one poll returns: a burst of
// more stops at the change that reached the bound, and the next poll goes on
// from there.
const MaxFollowNames = 100

// FollowResult is what one poll of the feed found.
type FollowResult struct {
	// LastSeq is the sequence to poll from next.
	LastSeq string `json:"lastSeq"`
	// Names are the catalog packages that changed (deduplicated, sorted, at
	// most MaxFollowNames).
	Names []string `json:"names,omitempty"`
	// Changes counts the changes read, of any package.
	Changes int `json:"changes"`
	// CaughtUpAt is set when the feed had nothing more after LastSeq: every
	// change until then is seen.
	CaughtUpAt time.Time `json:"caughtUpAt,omitzero"`
}

// FollowerStatus answers ProgressQuery on a follower.
type FollowerStatus struct {
	Registry   string    `json:"registry"`
	Since      string    `json:"since,omitempty"`
	CaughtUpAt time.Time `json:"caughtUpAt,omitzero"`
	// Checking are the catalog packages whose check runs now; Dirty those
	// that changed again meanwhile.
	Checking []string `json:"checking,omitempty"`
	Dirty    []string `json:"dirty,omitempty"`
	// StalledSince is set while the feed fails or stalls: the follower
	// backs off and retries (until RetryAt), and the Schedule's checks
	// find new versions meanwhile.
	StalledSince time.Time     `json:"stalledSince,omitzero"`
	RetryAt      time.Time     `json:"retryAt,omitzero"`
	LastError    string        `json:"lastError,omitempty"`
	Stats        FollowerStats `json:"stats"`
}
