package pubclient

import (
	"errors"
	"slices"
	"time"

	"github.com/edgeflow/edgeflow/internal/publish/catalog"
	"github.com/edgeflow/edgeflow/internal/publish/metadata"
	"github.com/edgeflow/edgeflow/internal/publish/versions"
	"github.com/edgeflow/edgeflow/workflows/publish/contract"
)

// ErrUnknownLibrary: the catalog has no loadable entry of that name.
var ErrUnknownLibrary = errors.New("no such library in the catalog")

// A library's state, and a version's.
const (
	StatePublished    = "published"     // its versions are served
	StateIncomplete   = "incomplete"    // a commit stopped part way; the next check finishes it
	StatePublishing   = "publishing"    // a run of it is open
	StateNotPublished = "not_published" // no version published yet
	StateRejected     = "rejected"      // a rejection marker holds: never publishes as the catalog stands
	StateFailed       = "failed"        // its latest run failed (while visibility retains it)
	StateSkipped      = "skipped"       // the catalog's ignoreVersions rule leaves it out
)

// Library is a catalog entry as the console lists it.
type Library struct {
	Name          string `json:"name"`
	Source        string `json:"source,omitempty"` // npm or git; empty: kept, never updated
	Target        string `json:"target,omitempty"`
	LatestVersion string `json:"latest_version"`
	// UpdatedAt is when the package document last changed (a commit).
	UpdatedAt *time.Time `json:"updated_at,omitempty"`
	// LastCheck is when an update check last got a new listing from the
	// library's source (a 304 leaves it as it was).
	LastCheck *time.Time `json:"last_check,omitempty"`
	State     string     `json:"state"`
	// WorkflowID is the ID a check of this library runs under.
	WorkflowID string `json:"workflow_id"`
}

// Version is one version of a library and what became of it.
type Version struct {
	Version string     `json:"version"`
	State   string     `json:"state"`
	Type    string     `json:"type,omitempty"`   // rejected: the error type
	Reason  string     `json:"reason,omitempty"` // rejected: the marker's; failed: the run's failure
	Rule    string     `json:"rule,omitempty"`   // skipped: the ignoreVersions glob
	At      *time.Time `json:"at,omitempty"`     // rejected: when; failed: when the run closed
	// The version's run (the latest one visibility retains).
	WorkflowID string `json:"workflow_id,omitempty"`
	RunID      string `json:"run_id,omitempty"`
	// Skipped are the files of a published version whose processing was
	// skipped, with why (its version document's; read for the newest
	// published versions only).
	Skipped []metadata.SkippedFile `json:"skipped,omitempty"`
}

// LibraryDetail is a library with its versions, newest first.
type LibraryDetail struct {
	Library
	Versions []Version `json:"versions"`
}

// Run is one retained PublishVersion run of a library, newest first in the
// lists Libraries reads.
type Run struct {
	Version, WorkflowID, RunID string
	Running, Failed            bool
	Closed                     time.Time
}

// libraryOf is the list's view of an entry: doc may be nil (nothing
// published), running says whether a run of it is open.
func libraryOf(pkg catalog.Package, doc *metadata.Package, lastCheck time.Time, running bool) Library {
	l := Library{Name: pkg.Name, Source: pkg.Autoupdate.Source, Target: pkg.Autoupdate.Target,
		State: StateNotPublished, WorkflowID: contract.PackageUpdatesWorkflowID(pkg.Name)}
	if !lastCheck.IsZero() {
		l.LastCheck = &lastCheck
	}
	if doc != nil {
		l.LatestVersion = doc.Latest
		if !doc.UpdatedAt.IsZero() {
			at := doc.UpdatedAt
			l.UpdatedAt = &at
		}
		switch {
		case len(doc.Incomplete) > 0:
			l.State = StateIncomplete
		case len(doc.Versions) > 0:
			l.State = StatePublished
		}
	}
	if running {
		l.State = StatePublishing
	}
	return l
}

// versionsOf merges what is known of a library's versions, newest first:
// published (the package document) before incomplete, publishing,
// rejected (the markers that hold), failed (the latest retained run
// failed) and skipped (listed by the source, matched by ignoreVersions).
// runs are newest first; listed is the source's last listing.
func versionsOf(pkg catalog.Package, doc *metadata.Package, rejections []metadata.Rejection, runs []Run, listed []string) []Version {
	byVersion := map[string]Version{}
	set := func(v Version) {
		if _, done := byVersion[v.Version]; !done {
			byVersion[v.Version] = v
		}
	}
	latestRun := map[string]Run{}
	for _, r := range runs {
		if _, seen := latestRun[r.Version]; !seen && r.Version != "" {
			latestRun[r.Version] = r
		}
	}
	withRun := func(v Version) Version {
		if r, ok := latestRun[v.Version]; ok {
			v.WorkflowID, v.RunID = r.WorkflowID, r.RunID
		}
		return v
	}
	if doc != nil {
		for _, v := range doc.Versions {
			state := StatePublished
			if slices.Contains(doc.Incomplete, v) {
				state = StateIncomplete
			}
			set(withRun(Version{Version: v, State: state}))
		}
	}
	for _, r := range runs {
		if r.Running && latestRun[r.Version] == r {
			set(withRun(Version{Version: r.Version, State: StatePublishing}))
		}
	}
	for _, m := range rejections {
		at := m.At
		set(withRun(Version{Version: m.Version, State: StateRejected, Type: m.Type, Reason: m.Reason, At: &at}))
	}
	for _, r := range runs {
		if r.Failed && latestRun[r.Version] == r {
			at := r.Closed
			set(withRun(Version{Version: r.Version, State: StateFailed, At: &at}))
		}
	}
	for _, v := range listed {
		if rule, ok := ignoredBy(v, pkg.Autoupdate.IgnoreVersions); ok {
			set(Version{Version: v, State: StateSkipped, Rule: "ignoreVersions: " + rule})
		}
	}
	names := make([]string, 0, len(byVersion))
	for v := range byVersion {
		names = append(names, v)
	}
	versions.Sort(names)
	slices.Reverse(names)
	out := make([]Version, len(names))
	for i, v := range names {
		out[i] = byVersion[v]
	}
	return out
}

// ignoredBy is the ignoreVersions glob that leaves version out, in the
// dialect versions.Ignored matches with.
func ignoredBy(version string, globs []string) (string, bool) {
	for _, g := range globs {
		if versions.Ignored(version, []string{g}) {
			return g, true
		}
	}
	return "", false
}
