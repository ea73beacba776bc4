package catalog

import (
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/edgeflow/edgeflow/internal/publish/fileset"
)

// Problem is one thing wrong with a catalog entry. File is empty for a
// package that did not come from a file (ValidatePackage); Field is the
// JSON path of the offending value ("autoupdate.fileMap[0].files[1]"), or
// empty when the problem is with the file as a whole.
type Problem struct {
	File, Field, Reason string
}

// String formats the problem as "file: field: reason", leaving out the
// parts that are empty.
func (p Problem) String() string {
	var parts []string
	for _, s := range []string{p.File, p.Field, p.Reason} {
		if s != "" {
			parts = append(parts, s)
		}
	}
	return strings.Join(parts, ": ")
}

// namePattern is what a library name may be: it is a path segment of every
// URL and object key of the library.
var namePattern = regexp.MustCompile(`^[a-zA-Z0-9._-]+$`)

// npmNamePattern accepts npm package names, optionally scoped, including
// the legacy ones with capital letters that npm still serves.
var npmNamePattern = regexp.MustCompile(`^(?:@[a-zA-Z0-9~-][a-zA-Z0-9._~-]*/)?[a-zA-Z0-9~-][a-zA-Z0-9._~-]*$`)

// npmNameMaxLength is npm's limit on package name length.
const npmNameMaxLength = 214

// gitOwnerRepoPattern is the GitHub shorthand for a git target.
var gitOwnerRepoPattern = regexp.MustCompile(`^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$`)

// ValidatePackage checks one package's content and returns every problem
// found (File left empty). The pipeline calls it before each update check
// and for packages sent by a starter, so a bad entry never reaches a
// registry or the buckets.
func ValidatePackage(p Package) []Problem {
	var problems []Problem
	add := func(field, format string, args ...any) {
		problems = append(problems, Problem{Field: field, Reason: fmt.Sprintf(format, args...)})
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
		add("homepage", "%q is not an http(s) URL", p.Homepage)
	}
	if p.Repository != nil && p.Repository.URL != "" && !isHTTPURL(p.Repository.URL) {
		add("repository.url", "%q is not an http(s) URL", p.Repository.URL)
	}
	if p.Filename == "" {
		add("filename", "missing: the default file of the library must be named")
	}

	au := p.Autoupdate
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
	case au.Source == SourceGit && !isHTTPURL(au.Target) && !gitOwnerRepoPattern.MatchString(au.Target):
		add("autoupdate.target", "%q is neither an http(s) URL nor owner/repo", au.Target)
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
			if reason := globProblem(glob); reason != "" {
				add(fmt.Sprintf("%s.files[%d]", entryField, j), "%s", reason)
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

// Validate checks every JSON file under catalog dir and returns every
// problem found, in file order: invalid JSON, unknown, repeated or mistyped
// fields, the content checks of ValidatePackage, a file named or placed
// other than <first letter>/<name>.json, and names used by more than one
// file (compared without case, as URLs on case-insensitive stores would
// collide). Files and folders starting with '.' are skipped.
func Validate(dir string) []Problem {
	var problems []Problem
	firstFileOf := map[string]string{} // lowercased name → first file using it

	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			problems = append(problems, Problem{File: path, Reason: fmt.Sprintf("cannot read: %v", withoutPath(err))})
			return nil
		}
		if path != dir && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() || filepath.Ext(path) != ".json" {
			return nil
		}
		problems = append(problems, validateFile(dir, path, firstFileOf)...)
		return nil
	})
	if err != nil {
		problems = append(problems, Problem{File: dir, Reason: fmt.Sprintf("cannot walk the catalog: %v", err)})
	}
	return problems
}

// validateFile checks one catalog file at path under dir, recording its name
// in firstFileOf to find duplicates.
func validateFile(dir, path string, firstFileOf map[string]string) []Problem {
	var problems []Problem
	add := func(field, format string, args ...any) {
		problems = append(problems, Problem{File: path, Field: field, Reason: fmt.Sprintf(format, args...)})
	}

	// The file's place is checked from its own name so that it is reported
	// even when the content cannot be read.
	base := strings.TrimSuffix(filepath.Base(path), ".json")
	rel, _ := filepath.Rel(dir, path)
	if want := filepath.Join(folderFor(base), base+".json"); base != "" && filepath.ToSlash(rel) != filepath.ToSlash(want) {
		add("", "belongs at %s (folder = first letter of the name, lowercased)", filepath.Join(dir, want))
	}

	data, err := os.ReadFile(path)
	if err != nil {
		add("", "cannot read: %v", withoutPath(err))
		return problems
	}
	p, shapeProblems, mistyped := decodeFile(data)
	for _, sp := range shapeProblems {
		add(sp.Field, "%s", sp.Reason)
	}
	for _, sp := range shapeProblems {
		if sp.Field == "" {
			// Invalid JSON, or not an object: there is no package to check.
			return problems
		}
	}

	for _, cp := range ValidatePackage(p) {
		// A field already reported as mistyped would only be reported again
		// as missing or empty.
		if !coveredBy(cp.Field, mistyped) {
			add(cp.Field, "%s", cp.Reason)
		}
	}

	if p.Name != "" {
		if p.Name != base {
			add("name", "%q does not match the file name %q", p.Name, filepath.Base(path))
		}
		key := strings.ToLower(p.Name)
		if first, ok := firstFileOf[key]; ok {
			add("name", "%q is already used by %s", p.Name, first)
		} else {
			firstFileOf[key] = path
		}
	}
	return problems
}

// withoutPath drops the path from a file system error; the problem names
// the file already.
func withoutPath(err error) error {
	var pathErr *fs.PathError
	if errors.As(err, &pathErr) {
		return pathErr.Err
	}
	return err
}

// coveredBy reports whether field is, or lies inside, one of fields.
func coveredBy(field string, fields []string) bool {
	for _, f := range fields {
		if field == f || strings.HasPrefix(field, f+".") || strings.HasPrefix(field, f+"[") {
			return true
		}
	}
	return false
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
