package catalog

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// validEntry is a correct catalog file for "lib", to break one piece at a time.
const validEntry = `{
  "name": "lib",
  "description": "A library",
  "license": "MIT",
  "homepage": "https://lib.example",
  "repository": {"type": "git", "url": "https://github.com/acme/lib.git"},
  "authors": [{"name": "Ada", "url": "https://ada.example"}],
  "filename": "lib.min.js",
  "autoupdate": {
    "source": "npm",
    "target": "lib",
    "fileMap": [{"basePath": "dist", "files": ["*.js", "**/*.css"]}],
    "ignoreVersions": ["*-beta*"]
  },
  "optimization": {"js": true, "css": false}
}`

// writeCatalog lays files (path relative to the catalog → content) out in a
// fresh catalog folder and returns it.
func writeCatalog(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "catalog")
	for rel, content := range files {
		path := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// problemStrings renders problems with the temporary folder shown as "catalog".
func problemStrings(dir string, problems []Problem) []string {
	out := make([]string, len(problems))
	for i, p := range problems {
		out[i] = strings.ReplaceAll(p.String(), dir, "catalog")
	}
	return out
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		want  []string
	}{
		{
			name:  "valid entry",
			files: map[string]string{"l/lib.json": validEntry, "README.md": "not an entry", ".git/x.json": "{"},
			want:  nil,
		},
		{
			name:  "invalid JSON with line and column",
			files: map[string]string{"l/lib.json": "{\n  \"name\": \"lib\",\n  \"filename\" \"lib.js\"\n}"},
			want:  []string{`catalog/l/lib.json: invalid JSON at line 3:14: invalid character '"' after object key`},
		},
		{
			name:  "truncated JSON",
			files: map[string]string{"l/lib.json": "{\n  \"name\": \"lib\","},
			want:  []string{`catalog/l/lib.json: invalid JSON at line 2:17: unexpected end of JSON input`},
		},
		{
			name:  "not an object",
			files: map[string]string{"l/lib.json": `["lib"]`},
			want:  []string{`catalog/l/lib.json: an array where an object was expected`},
		},
		{
			name: "every problem in one file is reported",
			files: map[string]string{"l/lib.json": `{
  "name": "lib",
  "homepage": "ftp://lib.example",
  "repository": {"type": "git", "url": "git://github.com/acme/lib.git"},
  "colour": "blue",
  "autoupdate": {
    "source": "npm",
    "target": "Not A Name",
    "fileMaps": [],
    "fileMap": [
      {"basePath": "../up", "files": ["dist/{a", "*.js", ""]},
      {"basePath": "dist", "files": []}
    ],
    "ignoreVersions": ["1.*", "[abc"]
  }
}`},
			want: []string{
				`catalog/l/lib.json: colour: warning: unknown field, ignored`,
				`catalog/l/lib.json: autoupdate.fileMaps: warning: unknown field, ignored (did you mean "fileMap"?)`,
				`catalog/l/lib.json: homepage: warning: "ftp://lib.example" is not an http(s) URL; it is shown as text, not linked`,
				`catalog/l/lib.json: filename: warning: missing: the library has no default file, so the API's latest and filename are empty`,
				`catalog/l/lib.json: autoupdate.target: "Not A Name" is not a valid npm package name`,
				`catalog/l/lib.json: autoupdate.fileMap[0].basePath: "../up" must stay inside the package`,
				`catalog/l/lib.json: autoupdate.fileMap[0].files[0]: invalid glob "dist/{a": unclosed '{' at column 6`,
				`catalog/l/lib.json: autoupdate.fileMap[0].files[2]: invalid glob "": empty pattern`,
				`catalog/l/lib.json: autoupdate.fileMap[1].files: empty: the entry selects no file`,
				`catalog/l/lib.json: autoupdate.ignoreVersions[1]: invalid glob "[abc": unclosed '[' at column 1`,
			},
		},
		{
			name: "wrong types; no autoupdate is a kept library, not a problem",
			files: map[string]string{"l/lib.json": `{
  "name": "lib",
  "keywords": "one, two",
  "authors": [{"name": 5}, "Ada"],
  "filename": 7,
  "optimization": {"js": "yes"}
}`},
			want: []string{
				`catalog/l/lib.json: keywords: a string where an array was expected`,
				`catalog/l/lib.json: authors[0].name: a number where a string was expected`,
				`catalog/l/lib.json: authors[1]: a string where an object was expected`,
				`catalog/l/lib.json: filename: a number where a string was expected`,
				`catalog/l/lib.json: optimization.js: a string where a boolean was expected`,
			},
		},
		{
			name:  "an empty autoupdate block is not a kept library",
			files: map[string]string{"l/lib.json": `{"name": "lib", "filename": "lib.js", "autoupdate": {}}`},
			want: []string{
				`catalog/l/lib.json: autoupdate.source: missing: must be "npm" or "git"`,
				`catalog/l/lib.json: autoupdate.target: missing`,
				`catalog/l/lib.json: autoupdate.fileMap: empty: no file would be published`,
			},
		},
		{
			name: "bad source, bad name, misplaced file",
			files: map[string]string{"x/bad name.json": strings.NewReplacer(
				`"name": "lib"`, `"name": "bad name", "name": "bad name"`,
				`"source": "npm"`, `"source": "svn"`,
			).Replace(validEntry)},
			want: []string{
				`catalog/x/bad name.json: warning: filed under x/, but the folder is the first letter of the file name, lowercased (b/); loaded all the same`,
				`catalog/x/bad name.json: name: warning: repeated field; the last value counts, as JSON parsers read it`,
				`catalog/x/bad name.json: name: "bad name" may contain only letters, digits, '.', '_' and '-'`,
				`catalog/x/bad name.json: autoupdate.source: "svn" is not "npm" or "git"`,
			},
		},
		{
			name: "git targets in every form the real catalog writes",
			files: map[string]string{
				"a/a.json": gitEntry("a", "acme/a"),
				"b/b.json": gitEntry("b", "https://gitlab.example/acme/b.git"),
				"c/c.json": gitEntry("c", "git@github.com:acme/c.git"),
				"d/d.json": gitEntry("d", "acme"),
				"e/e.json": gitEntry("e", "git://github.com/acme/e.git"),
				"f/f.json": gitEntry("f", "git+https://github.com/acme/f.git"),
				"g/g.json": strings.Replace(gitEntry("g", "acme/g"), `https://github.com/acme/lib.git`, `git+ssh://git@github.com/acme/g.git`, 1),
			},
			want: []string{
				`catalog/b/b.json: autoupdate.target: warning: "https://gitlab.example/acme/b.git" is not on GitHub, the only git host whose tags are listed: the library is never updated`,
				`catalog/d/d.json: autoupdate.target: "acme" is neither owner/repo nor a git repository URL`,
			},
		},
		{
			name: "file name, folder and duplicates: the name field decides, the file at the name's place wins",
			files: map[string]string{
				"j/jquery.json":  renamed(validEntry, "jquery"),
				"j/jquery2.json": renamed(validEntry, "jQuery"),
				"J/jQuery.json":  renamed(validEntry, "jQuery"),
				"p/pie.json":     renamed(validEntry, "css3pie"),
				"c/css3pie.json": renamed(validEntry, "css3pie"),
				"top.json":       renamed(validEntry, "top"),
			},
			want: []string{
				`catalog/J/jQuery.json: warning: filed under J/, but the folder is the first letter of the file name, lowercased (j/); loaded all the same`,
				`catalog/j/jquery.json: name: warning: "jquery" differs only in case from "jQuery" in catalog/J/jQuery.json: both are published, but their URLs collide on case-insensitive file systems`,
				`catalog/j/jquery2.json: name: warning: "jQuery" differs from the file name "jquery2.json"; the name field decides: the library is published as jQuery`,
				`catalog/j/jquery2.json: name: warning: "jQuery" is also the name in catalog/J/jQuery.json, which wins (it comes first in path order); this file is not loaded`,
				`catalog/p/pie.json: name: warning: "css3pie" differs from the file name "pie.json"; the name field decides: the library is published as css3pie`,
				`catalog/p/pie.json: name: warning: "css3pie" is also the name in catalog/c/css3pie.json, which wins (it is at the name's own place); this file is not loaded`,
				`catalog/top.json: warning: not loaded: catalog entries are <folder>/<name>.json, one folder deep, as catalog/t/top.json would be`,
			},
		},
		{
			name: "scoped npm target and http homepage are fine",
			files: map[string]string{"v/vue-router.json": strings.NewReplacer(
				`"name": "lib"`, `"name": "vue-router"`,
				`"target": "lib"`, `"target": "@vue/router"`,
				`"https://lib.example"`, `"http://lib.example/docs?x=1"`,
			).Replace(validEntry)},
			want: nil,
		},
		{
			name:  "a library's own size limit",
			files: map[string]string{"l/lib.json": strings.Replace(validEntry, `"name": "lib",`, `"name": "lib", "maxFileSize": 1073741824,`, 1)},
		},
		{
			name: "a size limit that is no size",
			files: map[string]string{
				"a/a.json": strings.Replace(renamed(validEntry, "a"), `"name": "a",`, `"name": "a", "maxFileSize": 0,`, 1),
				"b/b.json": strings.Replace(renamed(validEntry, "b"), `"name": "b",`, `"name": "b", "maxFileSize": 2147483648,`, 1),
				"c/c.json": strings.Replace(renamed(validEntry, "c"), `"name": "c",`, `"name": "c", "maxFileSize": 1.5e6,`, 1),
				"d/d.json": strings.Replace(renamed(validEntry, "d"), `"name": "d",`, `"name": "d", "maxFileSize": "512MiB",`, 1),
				"e/e.json": strings.Replace(renamed(validEntry, "e"), `"name": "e",`, `"name": "e", "maxFilesize": 1000,`, 1),
			},
			want: []string{
				`catalog/a/a.json: maxFileSize: 0 is not a usable limit: give the largest file to compress, in bytes, from 1 to 1073741824 (1 GiB); larger files are stored as is`,
				`catalog/b/b.json: maxFileSize: 2147483648 is not a usable limit: give the largest file to compress, in bytes, from 1 to 1073741824 (1 GiB); larger files are stored as is`,
				`catalog/c/c.json: maxFileSize: the number 1.5e6 where a whole number was expected`,
				`catalog/d/d.json: maxFileSize: a string where a number was expected`,
				`catalog/e/e.json: maxFilesize: warning: unknown field, ignored (did you mean "maxFileSize"?)`,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := writeCatalog(t, tt.files)
			got := problemStrings(dir, Validate(dir))
			if !slices.Equal(got, tt.want) {
				t.Errorf("Validate problems:\n got  %s\n want %s", strings.Join(got, "\n      "), strings.Join(tt.want, "\n      "))
			}
		})
	}
}

func renamed(entry, name string) string {
	return strings.Replace(entry, `"name": "lib"`, `"name": "`+name+`"`, 1)
}

func gitEntry(name, target string) string {
	return strings.NewReplacer(
		`"name": "lib"`, `"name": "`+name+`"`,
		`"source": "npm"`, `"source": "git"`,
		`"target": "lib"`, `"target": "`+target+`"`,
	).Replace(validEntry)
}

func TestValidateMissingFolder(t *testing.T) {
	problems := Validate(filepath.Join(t.TempDir(), "nowhere"))
	if len(problems) != 1 || !strings.Contains(problems[0].String(), "no such file or directory") {
		t.Errorf("Validate of a missing folder = %v", problems)
	}
}

func TestValidatePackage(t *testing.T) {
	tests := []struct {
		name string
		pkg  Package
		want []string
	}{
		{
			name: "valid",
			pkg: Package{Name: "lib", Filename: "lib.js", Autoupdate: Autoupdate{
				Source: SourceGit, Target: "https://github.com/acme/lib",
				FileMap: []FileMapEntry{{BasePath: "", Files: []string{"lib.js"}}},
			}},
		},
		{
			name: "empty package",
			pkg:  Package{},
			want: []string{
				`name: missing`,
				`filename: warning: missing: the library has no default file, so the API's latest and filename are empty`,
				`autoupdate.source: missing: must be "npm" or "git"`,
				`autoupdate.target: missing`,
				`autoupdate.fileMap: empty: no file would be published`,
			},
		},
		{
			name: "names that would escape their folder",
			pkg: Package{Name: "..", Filename: "x.js", Repository: &Repository{URL: "https://"}, Autoupdate: Autoupdate{
				Source: SourceNPM, Target: ".hidden",
				FileMap: []FileMapEntry{{BasePath: `dist\js`, Files: []string{"!x.js", "/abs.js", "!(a)!(b)!(c).js"}}},
			}},
			want: []string{
				`name: ".." is not a usable name`,
				`repository.url: warning: "https://" is neither an http(s) nor a git URL; it is shown as text, not linked`,
				`autoupdate.target: ".hidden" is not a valid npm package name`,
				`autoupdate.fileMap[0].basePath: "dist\\js" must use '/' separators`,
				`autoupdate.fileMap[0].files[0]: warning: "!x.js" starts with '!': node-glob reads the '!' as a literal character, so it excludes nothing`,
				`autoupdate.fileMap[0].files[1]: warning: "/abs.js" is absolute: node-glob, which cdnjs matches with, looks for it from the file system root, so it selects nothing; write it relative to the basePath`,
				`autoupdate.fileMap[0].files[2]: warning: "!(a)!(b)!(c).js" selects nothing: minimatch 3, which cdnjs matches with, turns it into an invalid expression (as it does for three or more !(…) in one path segment)`,
			},
		},
		{
			name: "npm name too long",
			pkg: Package{Name: "lib", Filename: "lib.js", Autoupdate: Autoupdate{
				Source: SourceNPM, Target: strings.Repeat("a", 215),
				FileMap: []FileMapEntry{{Files: []string{"lib.js"}}},
			}},
			want: []string{`autoupdate.target: "` + strings.Repeat("a", 215) + `" is not a valid npm package name`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, p := range ValidatePackage(tt.pkg) {
				if p.File != "" {
					t.Errorf("problem %v names a file", p)
				}
				got = append(got, p.String())
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("ValidatePackage problems:\n got  %s\n want %s", strings.Join(got, "\n      "), strings.Join(tt.want, "\n      "))
			}
		})
	}
}

func TestProblemString(t *testing.T) {
	tests := []struct {
		p    Problem
		want string
	}{
		{Problem{"catalog/j/jquery.json", "autoupdate.fileMap[0].files[1]", `invalid glob "dist/{a": unclosed '{' at column 6`, Error},
			`catalog/j/jquery.json: autoupdate.fileMap[0].files[1]: invalid glob "dist/{a": unclosed '{' at column 6`},
		{Problem{"catalog/j/jquery.json", "", "invalid JSON at line 1:2: x", Error}, "catalog/j/jquery.json: invalid JSON at line 1:2: x"},
		{Problem{"", "name", "missing", Error}, "name: missing"},
		{Problem{"c/x.json", "filename", "missing", Warning}, "c/x.json: filename: warning: missing"},
	}
	for _, tt := range tests {
		if got := tt.p.String(); got != tt.want {
			t.Errorf("String() = %q, want %q", got, tt.want)
		}
	}
}

// TestSampleCatalog keeps the demo catalog shipped with the repository valid.
func TestSampleCatalog(t *testing.T) {
	dir := filepath.Join("..", "..", "..", "catalog")
	for _, p := range Validate(dir) {
		t.Errorf("sample catalog: %s", p)
	}
	packages, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range packages {
		names = append(names, p.Name)
	}
	want := []string{"js-cookie", "mitt", "normalize", "nprogress", "tiny-emitter"}
	if !slices.Equal(names, want) {
		t.Errorf("sample catalog packages = %v, want %v", names, want)
	}
}
