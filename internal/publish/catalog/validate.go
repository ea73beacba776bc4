package catalog

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"github.com/edgeflow/edgeflow/internal/publish/fileset"
)

// Severity says whether a problem stops an entry from loading.
type Severity string

const (
	// Error: cdnjs itself would refuse the entry (not JSON, no name, a
	// source that is neither npm nor git, a fileMap that cannot compile…);
	// the entry is not loaded.
	Error Severity = ""
	// Warning: the entry loads, and the warning says which rule decides
	// what happens with the ambiguous or unusual part.
	Warning Severity = "warning"
)

// Problem is one thing wrong with a catalog entry. File is empty for a
// package that did not come from a file (ValidatePackage); Field is the
// JSON path of the offending value ("autoupdate.fileMap[0].files[1]"), or
// empty when the problem is with the file as a whole.
type Problem struct {
	File, Field, Reason string
	Severity            Severity `json:",omitempty"`
}

// String formats the problem as "file: field: reason", with "warning: "
// before the reason of a warning, leaving out the parts that are empty.
func (p Problem) String() string {
	var parts []string
	reason := p.Reason
	if p.Severity == Warning {
		reason = "warning: " + reason
	}
	for _, s := range []string{p.File, p.Field, reason} {
		if s != "" {
			parts = append(parts, s)
		}
	}
	return strings.Join(parts, ": ")
}

// IsWarning reports a problem that does not stop the entry from loading.
func (p Problem) IsWarning() bool { return p.Severity == Warning }

// namePattern is what a library name may be (cdnjs's own rule): it is a
// path segment of every URL and object key of the library.
var namePattern = regexp.MustCompile(`^[a-zA-Z0-9._-]+$`)

// npmNamePattern accepts npm package names, optionally scoped, including
// the legacy ones with capital letters that npm still serves.
var npmNamePattern = regexp.MustCompile(`^(?:@[a-zA-Z0-9~-][a-zA-Z0-9._~-]*/)?[a-zA-Z0-9~-][a-zA-Z0-9._~-]*$`)

// npmNameMaxLength is npm's limit on package name length.
const npmNameMaxLength = 214

// ValidatePackage checks one package's content for publishing and returns
// every problem found (File left empty). A package that is published must
// have an autoupdate block. The pipeline calls it before each update check
// and for packages sent by a starter, so a bad entry never reaches a
// registry or the buckets; Check fails only on errors, not warnings.
func ValidatePackage(p Package) []Problem {
	return validateContent(p, true)
}

// validateContent checks a package's fields; withAutoupdate says whether
// the autoupdate block is checked (it is absent from a kept library).
func validateContent(p Package, withAutoupdate bool) []Problem {
	var problems []Problem
	add := func(field, format string, args ...any) {
		problems = append(problems, Problem{Field: field, Reason: fmt.Sprintf(format, args...)})
	}
	warn := func(field, format string, args ...any) {
		problems = append(problems, Problem{Field: field, Reason: fmt.Sprintf(format, args...), Severity: Warning})
	}

	switch {
	case p.Name == "":
		add("name", "missing")
	case !namePattern.MatchString(p.Name):
		add("name", "%q may contain only letters, digits, '.', '_' and '-'", p.Name)
	case p.Name == "." || p.Name == "..":
		add("name", "%q is not a usable name", p.Name)
	}
	if p.Homepage != "" && !isHTTPURL(p.Homepage) {
		if link := homepageURL(p.Homepage); link != "" {
			warn("homepage", "%q has no scheme; it is linked as %q", p.Homepage, link)
		} else {
			warn("homepage", "%q is not an http(s) URL; it is shown as text, not linked", p.Homepage)
		}
	}
	if p.Repository != nil && p.Repository.URL != "" && p.RepositoryURL() == "" {
		warn("repository.url", "%q is neither an http(s) nor a git URL; it is shown as text, not linked", p.Repository.URL)
	}
	if p.Filename == "" {
		warn("filename", "missing: the library has no default file, so the API's latest and filename are empty")
	}
	if p.MaxFileSize != nil && (*p.MaxFileSize < 1 || *p.MaxFileSize > MaxFileSizeLimit) {
		add("maxFileSize", "%d is not a usable limit: give the largest file to compress, in bytes, from 1 to %d (1 GiB); larger files are stored as is", *p.MaxFileSize, MaxFileSizeLimit)
	}
	if withAutoupdate {
		problems = append(problems, validateAutoupdate(p.Autoupdate)...)
	}
	return problems
}

// validateAutoupdate checks an autoupdate block.
func validateAutoupdate(au Autoupdate) []Problem {
	var problems []Problem
	add := func(field, format string, args ...any) {
		problems = append(problems, Problem{Field: field, Reason: fmt.Sprintf(format, args...)})
	}
	warn := func(field, format string, args ...any) {
		problems = append(problems, Problem{Field: field, Reason: fmt.Sprintf(format, args...), Severity: Warning})
	}
	switch au.Source {
	case "":
		add("autoupdate.source", "missing: must be %q or %q", SourceNPM, SourceGit)
	case SourceNPM, SourceGit:
	default:
		add("autoupdate.source", "%q is not %q or %q", au.Source, SourceNPM, SourceGit)
	}
	switch {
	case au.Target == "":
		add("autoupdate.target", "missing")
	case au.Source == SourceNPM && !isNPMName(au.Target):
		add("autoupdate.target", "%q is not a valid npm package name", au.Target)
	case au.Source == SourceGit:
		r, ok := ParseGitRepo(au.Target)
		switch {
		case !ok:
			add("autoupdate.target", "%q is neither owner/repo nor a git repository URL", au.Target)
		case !r.IsGitHub():
			warn("autoupdate.target", "%q is not on GitHub, the only git host whose tags are listed: the library is never updated", au.Target)
		}
	}

	if len(au.FileMap) == 0 {
		add("autoupdate.fileMap", "empty: no file would be published")
	}
	for i, entry := range au.FileMap {
		entryField := fmt.Sprintf("autoupdate.fileMap[%d]", i)
		if reason := basePathProblem(entry.BasePath); reason != "" {
			add(entryField+".basePath", "%s", reason)
		}
		if len(entry.Files) == 0 {
			add(entryField+".files", "empty: the entry selects no file")
		}
		for j, glob := range entry.Files {
			field := fmt.Sprintf("%s.files[%d]", entryField, j)
			if reason := globProblem(glob); reason != "" {
				add(field, "%s", reason)
				continue
			}
			switch trimmed := strings.TrimSpace(glob); {
			case selectsNothing(glob) && !strings.HasPrefix(trimmed, "/"):
				warn(field, "%q selects nothing: minimatch 3, which cdnjs matches with, turns it into an invalid expression (as it does for three or more !(…) in one path segment)", glob)
			case strings.HasPrefix(trimmed, "/"):
				warn(field, "%q is absolute: node-glob, which cdnjs matches with, looks for it from the file system root, so it selects nothing; write it relative to the basePath", glob)
			case strings.HasPrefix(trimmed, "!") && !strings.HasPrefix(trimmed, "!("):
				warn(field, "%q starts with '!': node-glob reads the '!' as a literal character, so it excludes nothing", glob)
			case strings.HasPrefix(trimmed, "#"):
				warn(field, "%q starts with '#': node-glob reads it as a literal file name, not a comment", glob)
			}
		}
	}
	for i, glob := range au.IgnoreVersions {
		if reason := globProblem(glob); reason != "" {
			add(fmt.Sprintf("autoupdate.ignoreVersions[%d]", i), "%s", reason)
		}
	}
	return problems
}

// globProblem explains why glob does not compile, or returns "".
func globProblem(glob string) string {
	_, err := fileset.Compile(glob)
	if err == nil {
		return ""
	}
	var syntaxErr *fileset.SyntaxError
	if errors.As(err, &syntaxErr) {
		reason := fmt.Sprintf("invalid glob %q: %s", glob, syntaxErr.Problem)
		if syntaxErr.Column > 0 {
			reason += fmt.Sprintf(" at column %d", syntaxErr.Column)
		}
		return reason
	}
	return fmt.Sprintf("invalid glob %q: %v", glob, err)
}

// selectsNothing reports a glob that compiles but can match no path.
func selectsNothing(glob string) bool {
	p, err := fileset.Compile(glob)
	return err == nil && p.SelectsNothing()
}

// basePathProblem explains why a fileMap basePath would leave the package,
// or returns "". The empty basePath is the package root; a leading '/' means
// the same, as cdnjs joins basePath onto the package directory.
func basePathProblem(basePath string) string {
	if strings.Contains(basePath, `\`) {
		return fmt.Sprintf("%q must use '/' separators", basePath)
	}
	for _, part := range strings.Split(basePath, "/") {
		if part == ".." {
			return fmt.Sprintf("%q must stay inside the package", basePath)
		}
	}
	return ""
}

// isHTTPURL reports whether s is an absolute http or https URL with a host.
func isHTTPURL(s string) bool {
	if strings.ContainsAny(s, " \t\r\n") {
		return false
	}
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		return false
	}
	scheme := strings.ToLower(u.Scheme)
	return scheme == "http" || scheme == "https"
}

// isNPMName reports whether s is a name npm can serve.
func isNPMName(s string) bool {
	return len(s) <= npmNameMaxLength && npmNamePattern.MatchString(s) &&
		!strings.HasPrefix(s, ".") && !strings.HasPrefix(s, "_") &&
		s != "node_modules" && s != "favicon.ico"
}

// ValidName reports whether name may be a library's name (namePattern,
// and never a path of its own).
func ValidName(name string) bool {
	return namePattern.MatchString(name) && name != "." && name != ".."
}
