package versions

import (
	"fmt"
	"slices"
)

// DefaultFirstImport is how many versions a package new to the catalog
// takes when its settings do not say (the workers' and the edge's
// FIRST_IMPORT).
const DefaultFirstImport = 10

// Rules are what decides which of a package's versions are published
// automatically: its catalog entry's ignoreVersions, the versions whose
// rejection markers hold, the size of a first import and the window a first
// import kept. The update check offers a package's new versions by Offer;
// the edge asks Refusal about one version requested before it is published,
// so both decide by the same code.
type Rules struct {
	// Ignore are the catalog entry's ignoreVersions globs.
	Ignore []string
	// Rejected maps a version whose rejection marker still holds to the
	// marker's reason.
	Rejected map[string]string
	// FirstImport is how many versions a package new to the catalog takes
	// (NewVersions); <= 0 means no limit.
	FirstImport int
	// Window is what the package's first import kept, nil when none was.
	Window *Window
}

// Offer returns the versions of available to publish now, oldest first:
// those not rejected, then as NewVersionsIn decides. decided is the window
// a first import keeps.
func (r Rules) Offer(available []string, published map[string]bool) (out []string, decided *Window) {
	kept := make([]string, 0, len(available))
	for _, v := range available {
		if _, rejected := r.Rejected[v]; !rejected {
			kept = append(kept, v)
		}
	}
	return NewVersionsIn(kept, published, r.Ignore, r.FirstImport, r.Window)
}

// Refusal says why version is not offered among available (what the
// package's source lists) given what is published, or "" when Offer
// offers it. The reason is for people: an API answer, a log line.
func (r Rules) Refusal(version string, available []string, published map[string]bool) string {
	if !slices.Contains(available, version) {
		// First and cheap: what a crawler's invented versions get.
		return "the package's source does not list this version"
	}
	offered, _ := r.Offer(available, published)
	if slices.Contains(offered, version) {
		return ""
	}
	switch {
	case published[version]:
		return "already published"
	case parse(version) == nil:
		return "not a semantic version"
	case Ignored(version, r.Ignore):
		return "ignored by the catalog's ignoreVersions"
	}
	if reason, rejected := r.Rejected[version]; rejected {
		return "rejected: " + reason
	}
	sem := parse(version)
	if r.Window != nil {
		if floor := parse(r.Window.Floor); floor != nil && sem.LessThan(floor) {
			return fmt.Sprintf("older than %s, the oldest version the catalog imported; publish it explicitly", r.Window.Floor)
		}
		if !isStable(parsed{version, sem}) {
			return fmt.Sprintf("a prerelease not newer than %s, the newest version the first import saw; publish it explicitly", r.Window.Seen)
		}
	}
	if oldest := oldestPublished(published); oldest != nil && !sem.GreaterThan(oldest) {
		return fmt.Sprintf("not newer than %s, the oldest version published; publish it explicitly", oldest.Original())
	}
	if len(published) == 0 && r.FirstImport > 0 {
		return fmt.Sprintf("not among the %d newest versions a first import takes (stable ones first); publish it explicitly", r.FirstImport)
	}
	return "not offered by the update check's rules"
}
