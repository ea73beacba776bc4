package catalog

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"
)

// realSampleDir is the sample of the real cdnjs catalog (every tenth file)
// beside the repository: ../shared from the repository root, or from the
// folder that holds the worktree.
func realSampleDir(t *testing.T) string {
	t.Helper()
	if dir := os.Getenv("EDGEFLOW_CDNJS_SAMPLE"); dir != "" {
		return dir
	}
	root, err := filepath.Abs(filepath.Join("..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{
		filepath.Join(root, "..", "shared", "cdnjs-catalog-sample"),
		filepath.Join(root, "..", "..", "shared", "cdnjs-catalog-sample"),
	} {
		if st, err := os.Stat(dir); err == nil && st.IsDir() {
			return dir
		}
	}
	t.Skip("the real cdnjs catalog sample (../shared/cdnjs-catalog-sample) is not here")
	return ""
}

// knownWarnings are the rules a real entry may be warned by; a warning of
// any other kind is a rule that needs a look.
var knownWarnings = []*regexp.Regexp{
	regexp.MustCompile(`^".*" differs from the file name ".*"; the name field decides`),
	regexp.MustCompile(`^".*" is also the name in .*, which wins \(`),
	regexp.MustCompile(`^".*" differs only in case from`),
	regexp.MustCompile(`^missing: the library has no default file`),
	regexp.MustCompile(`^".*" has no scheme; it is linked as "https://`),
	regexp.MustCompile(`^".*" is not an http\(s\) URL; it is shown as text`),
	regexp.MustCompile(`^".*" is absolute: node-glob`),
	regexp.MustCompile(`^".*" selects nothing: minimatch 3`),
	regexp.MustCompile(`^repeated field; the last value counts`),
}

// TestRealCatalogSample loads 620 real cdnjs entries: none has an error,
// each warning is one of the known rules, and what the entries say is read.
func TestRealCatalogSample(t *testing.T) {
	dir := realSampleDir(t)
	summary, problems, err := Summarize(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		if !p.IsWarning() {
			t.Errorf("error on a real entry: %s", p)
			continue
		}
		known := false
		for _, re := range knownWarnings {
			known = known || re.MatchString(p.Reason)
		}
		if !known {
			t.Errorf("warning of an unknown kind: %s", p)
		}
	}
	if summary.Files != 620 || summary.Libraries+summary.NotLoaded != 620 || summary.Libraries < 615 {
		t.Errorf("summary %+v: want 620 files, nearly all loaded", summary)
	}
	if summary.Kept == 0 || summary.Updated < 580 {
		t.Errorf("summary %+v: want the libraries without autoupdate kept and the rest updated", summary)
	}
	packages, err := Load(dir)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	names, err := Names(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(names) != summary.Updated {
		t.Errorf("Names lists %d libraries, want the %d with autoupdate", len(names), summary.Updated)
	}
	for _, p := range packages {
		if p.Autoupdate.Source == SourceGit {
			if _, ok := p.Autoupdate.GitHubTarget(); !ok {
				t.Errorf("%s: git target %q not read as a GitHub repository", p.Name, p.Autoupdate.Target)
			}
		}
		if p.Repository != nil && p.Repository.URL != "" && p.RepositoryURL() == "" {
			t.Errorf("%s: repository %q not read as a link", p.Name, p.Repository.URL)
		}
		if p.Updatable() != slices.Contains(names, p.Name) {
			t.Errorf("%s: updatable %v but listed by Names %v", p.Name, p.Updatable(), !p.Updatable())
		}
	}
	checkTestdataForms(t, dir)
}

// TestCopiedRealEntries runs on the few real entries kept in testdata, so
// the forms are checked even where the sample is absent.
func TestCopiedRealEntries(t *testing.T) {
	dir := filepath.Join("testdata", "cdnjs")
	for _, p := range Validate(dir) {
		if !p.IsWarning() {
			t.Errorf("error on a real entry: %s", p)
		}
	}
	checkTestdataForms(t, dir)
}

// checkTestdataForms checks the entries copied into testdata, each showing
// one form of the real catalog, in dir (the sample or testdata).
func checkTestdataForms(t *testing.T, dir string) {
	t.Helper()
	// The name field decides: buttercms.json is the library ButterCMS.
	if p, err := Find(dir, "ButterCMS"); err != nil || p.Autoupdate.Target != "buttercms" {
		t.Errorf("Find(ButterCMS) = %+v, %v", p.Name, err)
	}
	if _, err := Find(dir, "buttercms"); err == nil {
		t.Error("Find(buttercms) found a library by its file name")
	}
	// A library without autoupdate is kept and never updated.
	packages, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]Package{}
	for _, p := range packages {
		byName[p.Name] = p
	}
	if _, ok := byName["css3pie"]; !ok {
		t.Error("pie.json did not load as css3pie")
	}
	if p, ok := byName["angular-ui"]; !ok || p.Updatable() {
		t.Errorf("angular-ui (no autoupdate) loaded %v, updatable %v", ok, p.Updatable())
	}
	if names, _ := Names(dir); slices.Contains(names, "angular-ui") {
		t.Error("Names lists angular-ui, which has no autoupdate")
	}
	if _, err := Find(dir, "angular-ui"); err == nil {
		t.Error("Find(angular-ui) offered a library without autoupdate for publishing")
	}
	if p := byName["fontsource-abel"]; !p.Autoupdate.ExcludeFromSearch {
		t.Error("fontsource-abel: excludeFromSearch not read")
	}
	if p := byName["docsify-copy-code"]; p.MinifyJS() || !p.MinifyCSS() {
		t.Errorf("docsify-copy-code: optimization {js: false} read as js %v css %v", p.MinifyJS(), p.MinifyCSS())
	}
	if p := byName["jos-animation"]; p.HomepageURL() != "https://jos-animation.vercel.app" {
		t.Errorf("jos-animation: homepage link %q", p.HomepageURL())
	}
	if p := byName["ButterCMS"]; p.RepositoryURL() != "https://github.com/buttercms/buttercms-js" {
		t.Errorf("ButterCMS: repository link %q", p.RepositoryURL())
	}
	if p := byName["1000hz-bootstrap-validator"]; func() string { s, _ := p.Autoupdate.GitHubTarget(); return s }() != "1000hz/bootstrap-validator" {
		t.Errorf("1000hz-bootstrap-validator: git:// target %q not read", p.Autoupdate.Target)
	}
	if _, ok := byName["primevue"]; !ok {
		t.Error("primevue (no filename) did not load")
	}
}
