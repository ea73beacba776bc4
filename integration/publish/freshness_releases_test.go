package integration

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/edgeflow/edgeflow/internal/publish/benchdata"
	"github.com/edgeflow/edgeflow/internal/publish/catalog"
	"github.com/edgeflow/edgeflow/internal/publish/fileset"
	"github.com/edgeflow/edgeflow/internal/publish/registry/registrytest"
	"github.com/edgeflow/edgeflow/internal/publish/transform"
)

// What BenchmarkFreshness releases: real catalog entries (their fileMaps
// decide which generated files a release has) and releases in the size mix
// of real packages, at seeded random moments.

// freshLibrary is a catalog library the freshness benchmark releases
// versions of; raw is its catalog file as cdnjs has it (nil: synthetic).
type freshLibrary struct {
	pkg catalog.Package
	raw []byte
}

func (l freshLibrary) target() string { return l.pkg.Autoupdate.Target }

// cdnjsSampleDir is the sample of the real cdnjs catalog beside the
// repository (EDGEFLOW_CDNJS_SAMPLE, or ../shared from the repository's
// root or from the folder holding the worktree); "" when absent.
func cdnjsSampleDir() string {
	if dir := os.Getenv("EDGEFLOW_CDNJS_SAMPLE"); dir != "" {
		return dir
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		return ""
	}
	for _, dir := range []string{
		filepath.Join(root, "..", "shared", "cdnjs-catalog-sample"),
		filepath.Join(root, "..", "..", "shared", "cdnjs-catalog-sample"),
	} {
		if st, err := os.Stat(dir); err == nil && st.IsDir() {
			return dir
		}
	}
	return ""
}

// thousandFiles is the file count of the few large releases.
const thousandFiles = 1000

// freshLibraries returns n npm libraries whose fileMap selects thousandFiles
// generated files (so any release size fits): entries of the real cdnjs
// catalog sample in their file order when it is here (read there, written
// only into the test's catalog), else synthetic ones with a dist/ fileMap.
func freshLibraries(b *testing.B, n int) []freshLibrary {
	b.Helper()
	var libs []freshLibrary
	if dir := cdnjsSampleDir(); dir != "" {
		files, err := filepath.Glob(filepath.Join(dir, "*", "*.json"))
		if err != nil {
			b.Fatal(err)
		}
		slices.Sort(files)
		targets := map[string]bool{}
		for _, f := range files {
			if len(libs) == n {
				break
			}
			p, err := catalog.LoadFile(f)
			// The local registry's paths take unscoped names only.
			if err != nil || p.Autoupdate.Source != catalog.SourceNPM || strings.ContainsAny(p.Autoupdate.Target, "@/") || targets[p.Autoupdate.Target] {
				continue
			}
			if len(selectFiles(p.Autoupdate.FileMap, thousandFiles)) < thousandFiles {
				continue
			}
			raw, err := os.ReadFile(f)
			if err != nil {
				b.Fatal(err)
			}
			targets[p.Autoupdate.Target] = true
			libs = append(libs, freshLibrary{pkg: p, raw: raw})
		}
		b.Logf("%d libraries from the cdnjs catalog sample in %s", len(libs), dir)
	}
	for i := len(libs); i < n; i++ {
		name := fmt.Sprintf("fresh-lib-%02d", i)
		libs = append(libs, freshLibrary{pkg: catalog.Package{
			Name: name, Description: "a library released during the freshness benchmark", License: "MIT",
			Keywords: []string{"freshness"}, Filename: name + ".js",
			Autoupdate: catalog.Autoupdate{Source: catalog.SourceNPM, Target: name,
				FileMap: []catalog.FileMapEntry{{BasePath: "dist", Files: []string{"**/*.@(js|css)"}}}},
		}})
	}
	return libs
}

// writeFreshCatalog writes the libraries' catalog files into a new folder.
func writeFreshCatalog(b *testing.B, libs []freshLibrary) string {
	b.Helper()
	dir := b.TempDir()
	for _, l := range libs {
		raw := l.raw
		if raw == nil {
			var err error
			if raw, err = json.MarshalIndent(l.pkg, "", "  "); err != nil {
				b.Fatal(err)
			}
		}
		p := catalog.FilePath(dir, l.pkg.Name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, raw, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	return dir
}

// selectFiles names up to n release files the fileMap publishes, chosen
// from generated JS and CSS paths under each entry's basePath (flat, in a
// lib/ folder, and already minified), sorted by their published path.
func selectFiles(fileMap []catalog.FileMapEntry, n int) []fileset.Selection {
	var candidates []string
	for k, e := range fileMap {
		for i := range n {
			stem := fmt.Sprintf("module-%d-%04d", k, i)
			candidates = append(candidates,
				path.Join(e.BasePath, stem+".js"), path.Join(e.BasePath, stem+".css"),
				path.Join(e.BasePath, "lib", stem+".js"), path.Join(e.BasePath, stem+".min.js"))
		}
	}
	sel, err := fileset.Apply(fileMap, candidates)
	if err != nil {
		return nil
	}
	return sel[:min(n, len(sel))]
}

// freshRelease is one planned release: when (after the phase starts),
// which library, how many files.
type freshRelease struct {
	at    time.Duration
	lib   int
	files int
}

// planReleases draws n releases at seeded random moments within window,
// each of a random library; most have fewer than 50 files (1–49, small
// ones likelier), every 20th in time (the 10th, 30th, 50th…) thousandFiles.
func planReleases(seed uint64, n int, window time.Duration, libs int) []freshRelease {
	r := rand.New(rand.NewPCG(seed, 37))
	plan := make([]freshRelease, n)
	for i := range plan {
		u := r.Float64()
		plan[i] = freshRelease{at: time.Duration(r.Int64N(int64(window))), lib: r.IntN(libs), files: 1 + int(48*u*u)}
	}
	slices.SortFunc(plan, func(a, b freshRelease) int { return int(a.at - b.at) })
	for i := range plan {
		if i%20 == 10 {
			plan[i].files = thousandFiles
		}
	}
	return plan
}

// builtRelease is a release's tarball and the file a poller asks the edge
// for: its published path and the SRI of its bytes.
type builtRelease struct {
	tarball   []byte
	probe     string
	probeSRI  string
	probeBody []byte
}

// buildRelease generates version's n files as lib's fileMap selects them,
// about 10 KiB a file in benchdata's mix of sizes (a few bundles, some
// modules, mostly small files), and picks one of them to poll.
func buildRelease(b testing.TB, lib freshLibrary, version string, n int, seed uint64) builtRelease {
	b.Helper()
	sel := selectFiles(lib.pkg.Autoupdate.FileMap, n)
	if len(sel) < n {
		b.Fatalf("%s's fileMap selects %d generated files, want %d", lib.pkg.Name, len(sel), n)
	}
	sizes := benchdata.Sizes(seed, n, n*10<<10)
	files := map[string][]byte{"package.json": fmt.Appendf(nil, `{"name":%q,"version":%q}`, lib.target(), version)}
	for i, s := range sel {
		body := benchdata.JS(seed*1_000_003+uint64(i), sizes[i])
		if strings.HasSuffix(s.Source, ".css") {
			body = benchdata.CSS(seed*1_000_003+uint64(i), sizes[i])
		}
		files[s.Source] = append(fmt.Appendf(nil, "/*! %s %s */\n", lib.pkg.Name, version), body...)
	}
	probe := sel[rand.New(rand.NewPCG(seed, 5)).IntN(n)]
	body := files[probe.Source]
	return builtRelease{tarball: tarballOf(files), probe: probe.Output, probeSRI: transform.SRI(body), probeBody: body}
}

// smallTarball is a one-file release, for the versions the catalog had
// before the benchmark (never published, only listed).
func smallTarball(lib freshLibrary, version string) []byte {
	return registrytest.NPMTarball(registrytest.Entry{Name: "package.json", Body: fmt.Sprintf(`{"name":%q,"version":%q}`, lib.target(), version)})
}
