package catalog

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestLoadFile(t *testing.T) {
	dir := writeCatalog(t, map[string]string{
		"l/lib.json":    validEntry,
		"s/strict.json": strings.Replace(validEntry, `"license": "MIT",`, `"licence": "MIT", "Filename": "x.js", "keywords": [1],`, 1),
		"w/warned.json": strings.Replace(renamed(validEntry, "warned"), `"license": "MIT",`, `"licence": "MIT",`, 1),
		"b/broken.json": `{"name": `,
	})

	p, err := LoadFile(filepath.Join(dir, "l", "lib.json"))
	if err != nil {
		t.Fatal(err)
	}
	if p.Name != "lib" || p.Filename != "lib.min.js" || p.Autoupdate.Target != "lib" ||
		!slices.Equal(p.Autoupdate.FileMap[0].Files, []string{"*.js", "**/*.css"}) ||
		p.Repository.URL != "https://github.com/acme/lib.git" || p.Authors[0].Name != "Ada" ||
		!p.MinifyJS() || p.MinifyCSS() {
		t.Errorf("LoadFile decoded %+v", p)
	}

	_, err = LoadFile(filepath.Join(dir, "s", "strict.json"))
	if err == nil {
		t.Fatal("a mistyped field was accepted")
	}
	if want := filepath.Join(dir, "s", "strict.json") + `: keywords[0]: a number where a string was expected`; err.Error() != want {
		t.Errorf("LoadFile error %q, want only %q (unknown fields are warnings)", err, want)
	}
	// Unknown fields are warnings: the entry loads.
	if p, err := LoadFile(filepath.Join(dir, "w", "warned.json")); err != nil || p.Name != "warned" {
		t.Errorf("LoadFile with an unknown field = %v, %v", p.Name, err)
	}

	_, err = LoadFile(filepath.Join(dir, "b", "broken.json"))
	if err == nil || !strings.Contains(err.Error(), "broken.json: invalid JSON at line 1:10") {
		t.Errorf("LoadFile of invalid JSON = %v", err)
	}

	_, err = LoadFile(filepath.Join(dir, "m", "missing.json"))
	if err == nil || !strings.Contains(err.Error(), "missing.json") {
		t.Errorf("LoadFile of a missing file = %v", err)
	}
}

func TestLoad(t *testing.T) {
	dir := writeCatalog(t, map[string]string{
		"z/zed.json":     renamed(validEntry, "zed"),
		"a/alpha.json":   renamed(validEntry, "alpha"),
		"l/lib.json":     validEntry,
		"b/broken.json":  `{"name": "broken", "keywords": 1}`,
		"c/cut.json":     `{"name": `,
		"top.json":       renamed(validEntry, "top"), // not <folder>/<name>.json: Validate's business
		".hidden/x.json": validEntry,
		"l/notes.txt":    "ignored",
	})
	packages, err := Load(dir)
	var names []string
	for _, p := range packages {
		names = append(names, p.Name)
	}
	if want := []string{"alpha", "lib", "zed"}; !slices.Equal(names, want) {
		t.Errorf("Load names = %v, want %v", names, want)
	}
	if err == nil {
		t.Fatal("Load hid the broken files")
	}
	for _, want := range []string{"broken.json: keywords: a number where an array was expected", "cut.json: invalid JSON"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Load error %q lacks %q", err, want)
		}
	}

	if _, err := Load(filepath.Join(dir, "absent")); err == nil {
		t.Error("Load of a missing folder gave no error")
	}
}

func TestFilePath(t *testing.T) {
	if got, want := FilePath("catalog", "jQuery"), filepath.Join("catalog", "j", "jQuery.json"); got != want {
		t.Errorf("FilePath = %q, want %q", got, want)
	}
}

func TestDecodeRepeatedAndNested(t *testing.T) {
	_, problems, mistyped, _ := decodeFile([]byte(`{"autoupdate": {"fileMap": [{"files": ["a"], "files": ["b"], "base": ""}]}, "repository": "https://x"}`))
	var got []string
	for _, p := range problems {
		got = append(got, p.String())
	}
	want := []string{
		`autoupdate.fileMap[0].files: warning: repeated field; the last value counts, as JSON parsers read it`,
		`autoupdate.fileMap[0].base: warning: unknown field, ignored`,
		`repository: a string where an object was expected`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("problems = %q, want %q", got, want)
	}
	if !slices.Equal(mistyped, []string{"repository"}) {
		t.Errorf("mistyped = %q", mistyped)
	}
}

func TestNamesListsEntriesThatDoNotLoad(t *testing.T) {
	lib := strings.Replace(validEntry, `"name": "lib"`, `"name": "other"`, 1)
	dir := writeCatalog(t, map[string]string{
		"l/lib.json":     validEntry,
		"o/other.json":   lib,
		"b/broken.json":  `{"name": `,
		".git/x/y.json":  `{}`,
		"o/.hidden.json": `{}`,
	})
	names, err := Names(dir)
	if err != nil || !slices.Equal(names, []string{"broken", "lib", "other"}) {
		t.Errorf("Names = %v, %v; want broken, lib, other", names, err)
	}
	if _, err := Names(filepath.Join(dir, "missing")); err == nil {
		t.Error("Names of a missing directory: no error")
	}
}

func TestFind(t *testing.T) {
	dir := writeCatalog(t, map[string]string{
		"l/lib.json":    validEntry,
		"b/broken.json": `{"name": `,
		"e/empty.json":  `{"name": "empty"}`,
	})
	if p, err := Find(dir, "lib"); err != nil || p.Name != "lib" {
		t.Errorf("Find(lib) = %+v, %v", p.Name, err)
	}
	for name, want := range map[string]string{
		"broken":    "broken.json",
		"empty":     "invalid package: ",
		"missing":   `no library named "missing"`,
		"../etc":    "is not valid",
		"..":        "is not valid",
		"a/b":       "is not valid",
		"":          "is not valid",
		"has space": "is not valid",
	} {
		if _, err := Find(dir, name); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Find(%q) = %v; want an error containing %q", name, err, want)
		}
	}
}

func TestSelectionFollowsTheFileMapOnly(t *testing.T) {
	p, err := LoadFile(filepath.Join(writeCatalog(t, map[string]string{"l/lib.json": validEntry}), "l", "lib.json"))
	if err != nil {
		t.Fatal(err)
	}
	q := p
	q.Description = "changed"
	if p.Selection() != q.Selection() || len(p.Selection()) != 16 {
		t.Errorf("selection %q changed with the description (%q)", p.Selection(), q.Selection())
	}
	q.Autoupdate.FileMap = append(slices.Clone(q.Autoupdate.FileMap), FileMapEntry{Files: []string{"extra.js"}})
	if p.Selection() == q.Selection() {
		t.Error("selection did not change with the fileMap")
	}
}
