package fileset

import (
	"context"
	"errors"
	"fmt"
	"path"
	"sort"
	"strings"
)

// ErrEmptyFileMap is returned by Apply for a fileMap with no entries: like
// cdnjs, a library that names no files publishes nothing, and saying so
// beats publishing an empty version.
var ErrEmptyFileMap = errors.New("fileMap is empty: no files are selected for publishing")

// Selection is one file to publish: Source is its path in the release,
// Output its path in the published version (Source without the BasePath).
type Selection struct {
	Source string
	Output string
}

// ConflictError reports two or more different release files that the
// fileMap would publish under the same name.
type ConflictError struct {
	Output  string
	Sources []string // sorted, at least two
}

func (e *ConflictError) Error() string {
	quoted := make([]string, len(e.Sources))
	for i, s := range e.Sources {
		quoted[i] = fmt.Sprintf("%q", s)
	}
	return fmt.Sprintf("fileMap publishes %q from %d different files: %s", e.Output, len(e.Sources), strings.Join(quoted, ", "))
}

// FileMapEntry is the shape of catalog.FileMapEntry, which satisfies it.
// catalog imports fileset to validate globs, so fileset cannot import
// catalog; this constraint lets Apply take the catalog's own slice anyway.
type FileMapEntry interface {
	~struct {
		BasePath string   `json:"basePath"`
		Files    []string `json:"files"`
	}
}

// Apply is ApplyContext without a deadline.
func Apply[E FileMapEntry](fileMap []E, paths []string) ([]Selection, error) {
	return ApplyContext(context.Background(), fileMap, paths)
}

// ApplyContext selects, from the release's file paths, those the fileMap
// publishes; fileMap is a []catalog.FileMapEntry. Each entry matches its
// globs against paths relative to its BasePath. The result is sorted by
// Output, with repeats of the same source-to-output mapping removed. Each
// pattern may spend DefaultBudget steps over the whole release; one that
// needs more fails the call with an error wrapping ErrTooExpensive, and so
// does the end of ctx (with ctx's error).
func ApplyContext[E FileMapEntry](ctx context.Context, fileMap []E, paths []string) ([]Selection, error) {
	return applyBudget(ctx, fileMap, paths, DefaultBudget)
}

func applyBudget[E FileMapEntry](ctx context.Context, fileMap []E, paths []string, steps int64) ([]Selection, error) {
	if len(fileMap) == 0 {
		return nil, ErrEmptyFileMap
	}
	type compiledEntry struct {
		base     string
		patterns []*Pattern
		budgets  []*Budget
	}
	entries := make([]compiledEntry, len(fileMap))
	for i, e := range fileMap {
		entry := struct {
			BasePath string   `json:"basePath"`
			Files    []string `json:"files"`
		}(e)
		base, err := cleanBasePath(entry.BasePath)
		if err != nil {
			return nil, fmt.Errorf("fileMap[%d]: %w", i, err)
		}
		entries[i].base = base
		for _, glob := range entry.Files {
			p, err := Compile(glob)
			if err != nil {
				return nil, fmt.Errorf("fileMap[%d]: invalid glob %q: %w", i, glob, err)
			}
			entries[i].patterns = append(entries[i].patterns, p)
			entries[i].budgets = append(entries[i].budgets, NewBudget(ctx, steps))
		}
	}

	var selected []Selection
	for _, source := range paths {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := checkReleasePath(source); err != nil {
			return nil, err
		}
		for _, entry := range entries {
			rel, ok := underBase(source, entry.base)
			if !ok {
				continue
			}
			for j, p := range entry.patterns {
				ok, err := p.MatchBudget(rel, entry.budgets[j])
				if err != nil {
					if errors.Is(err, ErrTooExpensive) {
						return nil, fmt.Errorf("fileMap glob %q: %w", p.String(), err)
					}
					return nil, err
				}
				if ok {
					selected = append(selected, Selection{Source: source, Output: rel})
					break
				}
			}
		}
	}

	sort.Slice(selected, func(i, j int) bool {
		if selected[i].Output != selected[j].Output {
			return selected[i].Output < selected[j].Output
		}
		return selected[i].Source < selected[j].Source
	})
	out := selected[:0]
	for i, s := range selected {
		if i > 0 && s == selected[i-1] {
			continue
		}
		if len(out) > 0 && out[len(out)-1].Output == s.Output {
			return nil, conflictAt(selected, s.Output)
		}
		out = append(out, s)
	}
	return out, nil
}

// conflictAt gathers every distinct source selected for output.
func conflictAt(selected []Selection, output string) *ConflictError {
	e := &ConflictError{Output: output}
	for _, s := range selected {
		if s.Output == output && (len(e.Sources) == 0 || e.Sources[len(e.Sources)-1] != s.Source) {
			e.Sources = append(e.Sources, s.Source)
		}
	}
	return e
}

// cleanBasePath turns a catalog basePath into "" (the release root) or a
// clean relative directory. A leading '/' or "./" and trailing slashes are
// tolerated, as cdnjs joins the basePath onto the package directory.
func cleanBasePath(base string) (string, error) {
	for _, part := range strings.Split(base, "/") {
		if part == ".." {
			return "", fmt.Errorf("basePath %q leaves the package", base)
		}
	}
	cleaned := strings.TrimPrefix(path.Clean("/"+base), "/")
	return cleaned, nil
}

// underBase returns source relative to base, if it lies beneath it.
func underBase(source, base string) (string, bool) {
	if base == "" {
		return source, true
	}
	rel, ok := strings.CutPrefix(source, base+"/")
	return rel, ok && rel != ""
}

// checkReleasePath rejects paths that are not clean relative file paths;
// they would make BasePath stripping and matching ambiguous.
func checkReleasePath(p string) error {
	if p == "" || path.IsAbs(p) || path.Clean(p) != p || p == ".." || strings.HasPrefix(p, "../") {
		return fmt.Errorf("release path %q is not a clean relative file path", p)
	}
	return nil
}
