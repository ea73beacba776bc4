package catalog

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
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

// LoadFile reads one catalog file strictly: invalid JSON, unknown or
// repeated fields and values of the wrong type are errors (all of them
// joined, each naming the file and field). It does not validate the
// package's content; see ValidatePackage.
func LoadFile(path string) (Package, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Package{}, fmt.Errorf("reading catalog file: %w", err)
	}
	p, problems, _ := decodeFile(data)
	if len(problems) > 0 {
		return Package{}, strictDecodeError(path, problems)
	}
	return p, nil
}

// Load reads every catalog file <dir>/<folder>/<name>.json and returns the
// packages sorted by name. A file that cannot be read strictly is left out
// and its error joined into the returned error, so one broken entry does not
// hide the rest; callers that need all or nothing check the error. Files
// elsewhere in the tree are not loaded; Validate reports them.
func Load(dir string) ([]Package, error) {
	if _, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("loading catalog: %w", err)
	}
	paths, err := filepath.Glob(filepath.Join(dir, "*", "*.json"))
	if err != nil {
		return nil, fmt.Errorf("loading catalog %s: %w", dir, err)
	}
	var packages []Package
	var errs []error
	for _, path := range paths {
		if isHidden(path, dir) {
			continue
		}
		p, err := LoadFile(path)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		packages = append(packages, p)
	}
	slices.SortFunc(packages, func(a, b Package) int { return strings.Compare(a.Name, b.Name) })
	return packages, errors.Join(errs...)
}

// isHidden reports whether path, below dir, has a component starting with
// '.' (editor and VCS files are not catalog entries).
func isHidden(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	if err != nil {
		return false
	}
	for _, part := range strings.Split(filepath.ToSlash(rel), "/") {
		if strings.HasPrefix(part, ".") && part != "." {
			return true
		}
	}
	return false
}

// Names lists the names of the catalog's entries, sorted, from their file
// names (<dir>/<folder>/<name>.json; hidden files skipped) without reading
// them. An entry that does not load is still listed, so that the check
// which loads it reports what is wrong with it instead of it vanishing.
func Names(dir string) ([]string, error) {
	if _, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("listing catalog: %w", err)
	}
	paths, err := filepath.Glob(filepath.Join(dir, "*", "*.json"))
	if err != nil {
		return nil, fmt.Errorf("listing catalog %s: %w", dir, err)
	}
	var names []string
	for _, path := range paths {
		if !isHidden(path, dir) {
			names = append(names, strings.TrimSuffix(filepath.Base(path), ".json"))
		}
	}
	slices.Sort(names)
	return slices.Compact(names), nil
}

// Find loads the entry of library name from catalog dir and checks it with
// ValidatePackage; every problem is in the error. The name is checked first:
// it becomes a path.
func Find(dir, name string) (Package, error) {
	if !namePattern.MatchString(name) || name == "." || name == ".." {
		return Package{}, fmt.Errorf("package name %q is not valid", name)
	}
	p, err := LoadFile(FilePath(dir, name))
	if err != nil {
		return Package{}, err
	}
	if err := Check(p); err != nil {
		return Package{}, err
	}
	return p, nil
}

// Check returns ValidatePackage's problems as one error, nil when there are none.
func Check(p Package) error {
	problems := ValidatePackage(p)
	if len(problems) == 0 {
		return nil
	}
	msgs := make([]string, len(problems))
	for i, pr := range problems {
		msgs[i] = pr.String()
	}
	return errors.New("invalid package: " + strings.Join(msgs, "; "))
}
