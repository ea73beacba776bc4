// Package versions orders, filters and resolves library version strings by
// semantic versioning. The pipeline uses it to decide which versions to
// publish; the edge uses it to resolve a requested version or range.
//
// Parsing is lenient (a leading "v" and missing minor or patch parts are
// accepted, so git tags like "v2" or "1.4" take part); strings that do not
// parse at all are called unparsable and are never published or resolved.
package versions

import (
	"slices"
	"strings"

	"github.com/Masterminds/semver/v3"

	"github.com/edgeflow/edgeflow/internal/publish/fileset"
)

// parsed pairs a version string with its semantic version.
type parsed struct {
	raw string
	sem *semver.Version
}

// parse returns the semantic version of v, or nil when v is unparsable.
func parse(v string) *semver.Version {
	if strings.TrimSpace(v) != v || v == "" {
		return nil
	}
	sem, err := semver.NewVersion(v)
	if err != nil {
		return nil
	}
	return sem
}

// parseAll returns the parsable versions, dropping the rest.
func parseAll(versions []string) []parsed {
	out := make([]parsed, 0, len(versions))
	for _, v := range versions {
		if sem := parse(v); sem != nil {
			out = append(out, parsed{raw: v, sem: sem})
		}
	}
	return out
}

// compareParsed orders by semantic version, then by string so that two
// spellings of one version ("1.0" and "1.0.0") still sort deterministically.
func compareParsed(a, b parsed) int {
	if c := a.sem.Compare(b.sem); c != 0 {
		return c
	}
	return strings.Compare(a.raw, b.raw)
}

func isStable(p parsed) bool { return p.sem.Prerelease() == "" }

// Latest returns the highest stable version, or the highest prerelease when
// no version is stable, or "" when none parses.
func Latest(versions []string) string {
	var best, bestPre *parsed
	for _, p := range parseAll(versions) {
		target := &best
		if !isStable(p) {
			target = &bestPre
		}
		if *target == nil || compareParsed(p, **target) > 0 {
			*target = &p
		}
	}
	switch {
	case best != nil:
		return best.raw
	case bestPre != nil:
		return bestPre.raw
	}
	return ""
}

// Sort orders versions ascending by semantic version in place; unparsable
// strings go last, in lexical order.
func Sort(versions []string) {
	keys := make(map[string]*semver.Version, len(versions))
	for _, v := range versions {
		keys[v] = parse(v)
	}
	slices.SortStableFunc(versions, func(a, b string) int {
		sa, sb := keys[a], keys[b]
		switch {
		case sa == nil && sb == nil:
			return strings.Compare(a, b)
		case sa == nil:
			return 1
		case sb == nil:
			return -1
		}
		return compareParsed(parsed{a, sa}, parsed{b, sb})
	})
}

// NewVersions returns the versions of available to publish now, ascending.
//
// When some version of the package is already published, that is every
// parsable available version (prereleases included) newer than the oldest
// published one that is neither published nor ignored: all of them, oldest
// first, so a burst of releases between two checks (backports included) is
// never skipped and the latest is committed last. History older than what
// was imported stays out, as at the first import; publish it explicitly.
//
// When nothing is published yet (the package is new to the catalog), only the
// firstImport newest stable versions are taken, so adding a library with a
// long history does not flood the pipeline; older versions can be backfilled
// by publishing them explicitly. If the package has no stable version at all,
// the firstImport newest prereleases are taken instead so it still appears.
// firstImport <= 0 means no limit.
func NewVersions(available []string, published map[string]bool, ignore []string, firstImport int) []string {
	out, _ := NewVersionsIn(available, published, ignore, firstImport, nil)
	return out
}

// Window is what a package's first import decided, kept so that later
// checks honour it: Floor is the oldest version it took, Seen the newest
// version the source listed then (prereleases included).
type Window struct {
	Floor string `json:"floor"`
	Seen  string `json:"seen"`
}

// NewVersionsIn is NewVersions under the package's import window w (nil
// when none was kept). With a window, a version is offered when it is not
// older than the window's floor (nor the oldest published version) and is
// either stable — so a first-import version that failed transiently is
// retried, never lost below the "oldest published" floor — or newer than
// everything the first import saw: the prereleases the first import left
// out (older ones, or ones among what it took) are never offered later.
// Without a window and with nothing published, this is the first import,
// and decided is the window to keep.
func NewVersionsIn(available []string, published map[string]bool, ignore []string, firstImport int, w *Window) (out []string, decided *Window) {
	if w == nil || parse(w.Floor) == nil {
		out = newVersions(available, published, ignore, firstImport)
		if len(published) == 0 && len(out) > 0 {
			decided = &Window{Floor: out[0], Seen: newest(available)}
		}
		return out, decided
	}
	floor := parse(w.Floor)
	if p := oldestPublished(published); p != nil && p.Compare(floor) < 0 {
		floor = p
	}
	seen := parse(w.Seen)
	seenSet := make(map[string]bool, len(available))
	for _, p := range parseAll(available) {
		if seenSet[p.raw] || published[p.raw] || Ignored(p.raw, ignore) || p.sem.Compare(floor) < 0 {
			continue
		}
		if !isStable(p) && seen != nil && p.sem.Compare(seen) <= 0 {
			continue
		}
		seenSet[p.raw] = true
		out = append(out, p.raw)
	}
	Sort(out)
	return out, nil
}

// newest is the highest parsable version, prereleases included, or "".
func newest(versions []string) string {
	var best *parsed
	for _, p := range parseAll(versions) {
		if best == nil || compareParsed(p, *best) > 0 {
			best = &p
		}
	}
	if best == nil {
		return ""
	}
	return best.raw
}

func newVersions(available []string, published map[string]bool, ignore []string, firstImport int) []string {
	seen := make(map[string]bool, len(available))
	var candidates []parsed
	for _, p := range parseAll(available) {
		if seen[p.raw] || published[p.raw] || Ignored(p.raw, ignore) {
			continue
		}
		seen[p.raw] = true
		candidates = append(candidates, p)
	}
	slices.SortFunc(candidates, compareParsed)

	if floor := oldestPublished(published); floor != nil {
		candidates = slices.DeleteFunc(candidates, func(p parsed) bool { return p.sem.Compare(floor) <= 0 })
	} else {
		stable := slices.DeleteFunc(slices.Clone(candidates), func(p parsed) bool { return !isStable(p) })
		if len(stable) > 0 {
			candidates = stable
		}
		if firstImport > 0 && len(candidates) > firstImport {
			candidates = candidates[len(candidates)-firstImport:]
		}
	}

	out := make([]string, len(candidates))
	for i, p := range candidates {
		out[i] = p.raw
	}
	return out
}

// oldestPublished is the lowest parsable published version, or nil.
func oldestPublished(published map[string]bool) *semver.Version {
	var oldest *semver.Version
	for v, ok := range published {
		if !ok {
			continue
		}
		if p := parse(v); p != nil && (oldest == nil || p.Compare(oldest) < 0) {
			oldest = p
		}
	}
	return oldest
}

// Resolve picks the version of versions that spec asks for:
//   - "latest" (or "") gives Latest(versions);
//   - a string equal to one of versions gives itself, prereleases included;
//   - a partial version or range ("3", "3.1", "^3.1", "~2.0.1", ">=1 <2",
//     "1.x", "1 - 2") gives the highest matching stable version, or the
//     highest matching prerelease when the range itself names a prerelease.
//
// The bool is false when nothing matches or spec is neither of these.
func Resolve(versions []string, spec string) (string, bool) {
	spec = strings.TrimSpace(spec)
	if spec == "" || spec == "latest" {
		latest := Latest(versions)
		return latest, latest != ""
	}
	if slices.Contains(versions, spec) {
		return spec, true
	}
	constraint, err := semver.NewConstraint(spec)
	if err != nil {
		return "", false
	}
	var best *parsed
	for _, p := range parseAll(versions) {
		if !constraint.Check(p.sem) {
			continue
		}
		if best == nil || compareParsed(p, *best) > 0 {
			best = &p
		}
	}
	if best == nil {
		return "", false
	}
	return best.raw, true
}

// Ignored reports whether version matches one of the ignoreVersions globs.
// An invalid glob matches nothing; catalog validation reports it.
func Ignored(version string, ignoreGlobs []string) bool {
	return slices.ContainsFunc(ignoreGlobs, func(glob string) bool { return matchGlob(glob, version) })
}

// matchGlob uses the catalog's glob dialect, the one ValidatePackage checks
// ignoreVersions with, so a glob that validates matches as written.
func matchGlob(glob, version string) bool {
	pattern, err := fileset.Compile(glob)
	return err == nil && pattern.Match(version)
}
