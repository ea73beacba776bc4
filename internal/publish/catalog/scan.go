package catalog

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
)

// entry is one catalog file as read: its package (as far as it decoded)
// and every problem found in the file itself.
type entry struct {
	path     string
	base     string // file name without ".json"
	pkg      Package
	problems []Problem // File left empty; errorsOf and Validate fill it in
	readErr  error
	stray    bool // not at <folder>/<name>.json: reported, never loaded
}

// catalogScan is the whole catalog, read once.
type catalogScan struct {
	dir     string
	entries []*entry          // in path order
	winner  map[string]*entry // library name → the entry that is loaded
}

// scan reads every JSON file under dir (files and folders starting with '.'
// skipped) on all cores, checks each, then decides between files that name
// the same library. The whole real catalog (6,000+ files) takes well under
// a second.
func scan(dir string) (*catalogScan, error) {
	if st, err := os.Stat(dir); err != nil {
		return nil, err
	} else if !st.IsDir() {
		return nil, fmt.Errorf("%s is not a directory", dir)
	}
	c := &catalogScan{dir: dir, winner: map[string]*entry{}}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			c.entries = append(c.entries, &entry{path: path, readErr: err,
				problems: []Problem{{Reason: fmt.Sprintf("cannot read: %v", withoutPath(err))}}})
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
		c.entries = append(c.entries, &entry{path: path})
		return nil
	})
	if err != nil {
		return nil, err
	}

	work := make(chan *entry)
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for e := range work {
				c.check(e)
			}
		}()
	}
	for _, e := range c.entries {
		if e.readErr == nil {
			work <- e
		}
	}
	close(work)
	wg.Wait()
	c.decideDuplicates()
	return c, nil
}

// readEntry reads and checks one file on its own, as Find and LoadFile do.
func readEntry(path string) *entry {
	e := &entry{path: path}
	(&catalogScan{dir: filepath.Dir(filepath.Dir(path))}).check(e)
	return e
}

// check reads one file and records its problems.
func (c *catalogScan) check(e *entry) {
	e.base = strings.TrimSuffix(filepath.Base(e.path), ".json")
	warn := func(field, format string, args ...any) {
		e.problems = append(e.problems, Problem{Field: field, Reason: fmt.Sprintf(format, args...), Severity: Warning})
	}
	// The file's place is checked from its own name so that it is reported
	// even when the content cannot be read.
	rel, _ := filepath.Rel(c.dir, e.path)
	parts := strings.Split(filepath.ToSlash(rel), "/")
	switch {
	case len(parts) != 2:
		e.stray = true
		warn("", "not loaded: catalog entries are <folder>/<name>.json, one folder deep, as %s would be", filepath.Join(c.dir, folderFor(e.base), e.base+".json"))
	case e.base != "" && parts[0] != folderFor(e.base):
		warn("", "filed under %s/, but the folder is the first letter of the file name, lowercased (%s/); loaded all the same", parts[0], folderFor(e.base))
	}

	data, err := os.ReadFile(e.path)
	if err != nil {
		e.readErr = err
		e.problems = append(e.problems, Problem{Reason: fmt.Sprintf("cannot read: %v", withoutPath(err))})
		return
	}
	p, shapeProblems, mistyped, present := decodeFile(data)
	e.problems = append(e.problems, shapeProblems...)
	for _, sp := range shapeProblems {
		if sp.Field == "" && !sp.IsWarning() {
			// Invalid JSON, or not an object: there is no package to check.
			e.readErr = fmt.Errorf("%s", sp.Reason)
			return
		}
	}
	e.pkg = p
	if present["autoupdate"] && p.Autoupdate.IsZero() {
		// "autoupdate": {} is not the same as no block: cdnjs requires its fields.
		p.Autoupdate.FileMap = []FileMapEntry{}
	}
	for _, cp := range validateContent(p, present["autoupdate"]) {
		// A field already reported as mistyped would only be reported again
		// as missing or empty.
		if !coveredBy(cp.Field, mistyped) {
			e.problems = append(e.problems, cp)
		}
	}
	if p.Name != "" && p.Name != e.base && namePattern.MatchString(p.Name) {
		warn("name", "%q differs from the file name %q; the name field decides: the library is published as %s", p.Name, filepath.Base(e.path), p.Name)
	}
}

// decideDuplicates picks, for every name used by more than one loadable
// file, the file that is loaded: the one at the name's own place
// (<folder>/<name>.json), else the first in path order. The others get a
// warning naming the winner. Names that differ only in case both load, with
// a warning: their URLs collide on case-insensitive file systems.
func (c *catalogScan) decideDuplicates() {
	byName := map[string][]*entry{}
	var names []string
	for _, e := range c.entries {
		if e.stray || e.readErr != nil || errorsOf("", e.problems) != nil {
			continue
		}
		if byName[e.pkg.Name] == nil {
			names = append(names, e.pkg.Name)
		}
		byName[e.pkg.Name] = append(byName[e.pkg.Name], e)
	}
	for _, name := range names {
		files := byName[name]
		win, rule := files[0], "it comes first in path order"
		for _, e := range files {
			if e.path == FilePath(c.dir, name) {
				win, rule = e, "it is at the name's own place"
				break
			}
		}
		c.winner[name] = win
		for _, e := range files {
			if e != win {
				e.problems = append(e.problems, Problem{Field: "name", Severity: Warning,
					Reason: fmt.Sprintf("%q is also the name in %s, which wins (%s); this file is not loaded", name, win.path, rule)})
			}
		}
	}
	slices.Sort(names)
	firstOf := map[string]*entry{}
	for _, name := range names {
		e := c.winner[name]
		key := strings.ToLower(name)
		if first, ok := firstOf[key]; ok {
			e.problems = append(e.problems, Problem{Field: "name", Severity: Warning,
				Reason: fmt.Sprintf("%q differs only in case from %q in %s: both are published, but their URLs collide on case-insensitive file systems", name, first.pkg.Name, first.path)})
			continue
		}
		firstOf[key] = e
	}
}

// Validate checks every JSON file under catalog dir and returns every
// problem found, errors and warnings, in path order: invalid JSON, mistyped
// fields, unknown and repeated fields, the content checks of
// ValidatePackage, files placed other than <folder>/<name>.json, and names
// used by more than one file (saying which file wins). Files and folders
// starting with '.' are skipped.
func Validate(dir string) []Problem {
	c, err := scan(dir)
	if err != nil {
		return []Problem{{File: dir, Reason: fmt.Sprintf("cannot read the catalog: %v", withoutPath(err))}}
	}
	var problems []Problem
	for _, e := range c.entries {
		for _, p := range e.problems {
			p.File = e.path
			problems = append(problems, p)
		}
	}
	return problems
}

// Summary counts what a catalog holds, for validate's closing line.
type Summary struct {
	Libraries  int // loaded: one per name
	Updated    int // of those, with an autoupdate block
	Kept       int // of those, kept without autoupdate: never updated
	NotLoaded  int // files with errors, duplicates that lost, stray files
	Files      int
	Errors     int
	Warnings   int
	Duplicates int // files not loaded because another file has their name
}

// Summarize reads the catalog and counts what it holds.
func Summarize(dir string) (Summary, []Problem, error) {
	c, err := scan(dir)
	if err != nil {
		return Summary{}, nil, err
	}
	var s Summary
	var problems []Problem
	for _, e := range c.entries {
		s.Files++
		for _, p := range e.problems {
			p.File = e.path
			problems = append(problems, p)
			if p.IsWarning() {
				s.Warnings++
			} else {
				s.Errors++
			}
		}
		switch {
		case e.stray || e.readErr != nil || errorsOf("", e.problems) != nil:
			s.NotLoaded++
		case c.winner[e.pkg.Name] != e:
			s.NotLoaded++
			s.Duplicates++
		default:
			s.Libraries++
			if e.pkg.Updatable() {
				s.Updated++
			} else {
				s.Kept++
			}
		}
	}
	return s, problems, nil
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
