package catalog

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
)

// FilePath is where the entry of library name belongs under catalog dir:
// <dir>/<first letter of name, lowercased>/<name>.json.
func FilePath(dir, name string) string {
	return filepath.Join(dir, folderFor(name), name+".json")
}

// folderFor is the folder of a library: the first letter of its name,
// lowercased.
func folderFor(name string) string {
	if name == "" {
		return ""
	}
	return strings.ToLower(name[:1])
}

// LoadFile reads one catalog file. Invalid JSON, values of the wrong type
// and content that cdnjs would refuse are errors (all of them joined, each
// naming the file and field); warnings do not stop it. Use Validate to see
// the warnings.
func LoadFile(path string) (Package, error) {
	e := readEntry(path)
	if err := errorsOf(path, e.problems); err != nil {
		return Package{}, err
	}
	return e.pkg, nil
}

// Load reads the catalog: every <dir>/<folder>/<name>.json. A library is
// known by its name field; where several files name the same library, the
// one Validate says wins is loaded. An entry with errors is left out and its
// errors joined into the returned error, so one broken entry does not hide
// the rest; callers that need all or nothing check the error. The packages
// are sorted by name and include the libraries kept without autoupdate.
func Load(dir string) ([]Package, error) {
	c, err := scan(dir)
	if err != nil {
		return nil, err
	}
	var packages []Package
	var errs []error
	for _, e := range c.entries {
		if err := errorsOf(e.path, e.problems); err != nil {
			errs = append(errs, err)
			continue
		}
		if c.winner[e.pkg.Name] == e {
			packages = append(packages, e.pkg)
		}
	}
	slices.SortFunc(packages, func(a, b Package) int { return strings.Compare(a.Name, b.Name) })
	return packages, errors.Join(errs...)
}

// Names lists, sorted, the libraries an update check looks at: every
// loadable library with an autoupdate block, by its name field, and every
// entry that does not load, by its file name, so that the check which
// loads it reports what is wrong instead of it vanishing. Libraries kept
// without autoupdate are not listed: they are never updated.
func Names(dir string) ([]string, error) {
	c, err := scan(dir)
	if err != nil {
		return nil, fmt.Errorf("listing catalog: %w", err)
	}
	var names []string
	for _, e := range c.entries {
		switch {
		case errorsOf(e.path, e.problems) != nil:
			names = append(names, e.base)
		case c.winner[e.pkg.Name] == e && e.pkg.Updatable():
			names = append(names, e.pkg.Name)
		}
	}
	slices.Sort(names)
	return slices.Compact(names), nil
}

// Find loads the entry of library name from catalog dir and checks it with
// ValidatePackage; every error is in the error. The entry is looked for at
// its own place (<folder>/<name>.json) first, then, for entries filed
// under another name, in the whole catalog. The name is checked first: it
// becomes a path.
func Find(dir, name string) (Package, error) {
	if !namePattern.MatchString(name) || name == "." || name == ".." {
		return Package{}, fmt.Errorf("package name %q is not valid", name)
	}
	path := FilePath(dir, name)
	e := readEntry(path)
	switch {
	case e.readErr != nil && !errors.Is(e.readErr, os.ErrNotExist):
		return Package{}, errorsOf(path, e.problems)
	case e.readErr == nil && (e.pkg.Name == name || errorsOf(path, e.problems) != nil):
		// At its own place the entry wins every duplicate (see Validate).
		if err := errorsOf(path, e.problems); err != nil {
			return Package{}, err
		}
		return checked(e.pkg)
	}
	p, err := findElsewhere(dir, name)
	if err != nil {
		return Package{}, err
	}
	return checked(p)
}

func checked(p Package) (Package, error) {
	if err := Check(p); err != nil {
		return Package{}, err
	}
	return p, nil
}

// elsewhere caches, per catalog folder, where the libraries filed under
// another name live, so an update check does not rescan the catalog for
// each of them. A stale answer is noticed (the file no longer names the
// library) and the folder rescanned.
var elsewhere struct {
	sync.Mutex
	paths map[string]map[string]string // dir → name → winning file
}

// ErrNotInCatalog is wrapped by Find's error for a name no entry has.
var ErrNotInCatalog = errors.New("not in the catalog")

// Holder returns the name of the catalog's library that name is, or
// collides with on a case-insensitive file system; ok is false when the
// catalog has none. It rescans the catalog, so it is for rare questions
// (a package sent by a starter), not for every check.
func Holder(dir, name string) (string, bool, error) {
	c, err := scan(dir)
	if err != nil {
		return "", false, err
	}
	for n := range c.winner {
		if strings.EqualFold(n, name) {
			return n, true, nil
		}
	}
	// An entry that does not load still holds its file name.
	for _, e := range c.entries {
		if !e.stray && strings.EqualFold(e.base, name) {
			return e.base, true, nil
		}
	}
	return "", false, nil
}

func findElsewhere(dir, name string) (Package, error) {
	elsewhere.Lock()
	defer elsewhere.Unlock()
	for attempt := 0; attempt < 2; attempt++ {
		index := elsewhere.paths[dir]
		if index == nil || attempt > 0 {
			c, err := scan(dir)
			if err != nil {
				return Package{}, err
			}
			index = map[string]string{}
			for n, e := range c.winner {
				index[n] = e.path
			}
			if elsewhere.paths == nil {
				elsewhere.paths = map[string]map[string]string{}
			}
			elsewhere.paths[dir] = index
		}
		path, ok := index[name]
		if !ok {
			continue
		}
		e := readEntry(path)
		if e.readErr == nil && e.pkg.Name == name {
			if err := errorsOf(path, e.problems); err != nil {
				return Package{}, err
			}
			return e.pkg, nil
		}
	}
	return Package{}, fmt.Errorf("no library named %q in catalog %s: %w", name, dir, ErrNotInCatalog)
}

// Check returns ValidatePackage's errors as one error, nil when there are
// none; warnings do not fail it.
func Check(p Package) error {
	var msgs []string
	for _, pr := range ValidatePackage(p) {
		if !pr.IsWarning() {
			msgs = append(msgs, pr.String())
		}
	}
	if len(msgs) == 0 {
		return nil
	}
	return errors.New("invalid package: " + strings.Join(msgs, "; "))
}
