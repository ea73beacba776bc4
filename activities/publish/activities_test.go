package publish_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	publishacts "github.com/edgeflow/edgeflow/activities/publish"
	"github.com/edgeflow/edgeflow/internal/objectstore"
	"github.com/edgeflow/edgeflow/internal/publish/catalog"
	"github.com/edgeflow/edgeflow/internal/publish/metadata"
	"github.com/edgeflow/edgeflow/internal/publish/registry"
	"github.com/edgeflow/edgeflow/internal/publish/registry/registrytest"
	"github.com/edgeflow/edgeflow/internal/publish/tarx"
	"github.com/edgeflow/edgeflow/internal/publish/transform"
	"github.com/edgeflow/edgeflow/internal/testenv"
	"github.com/edgeflow/edgeflow/workflows/publish/contract"
)

// Each activity on its own, in Temporal's activity test environment, against
// a real MinIO and a local registry: what the workflows rely on each one to
// leave in the buckets.

var env *testenv.Env

func TestMain(m *testing.M) { testenv.Main(m, testenv.Options{MinIO: true}, &env) }

// pools are both pools' activities over fresh buckets, with a catalog dir
// and a registry of their own.
type pools struct {
	pub      *publishacts.Publish
	compress *publishacts.Compress
	npm      *registrytest.Registry
	catalog  string
	buckets  metadata.Buckets
	acts     *testsuite.TestActivityEnvironment
}

func newPools(t *testing.T, prefix string) *pools {
	t.Helper()
	testenv.Require(t, env)
	b := metadata.Buckets{Files: prefix + "-files", Mirror: prefix + "-mirror", Meta: prefix + "-meta",
		MirrorMeta: prefix + "-mirror-meta", Incoming: prefix + "-incoming"}
	if err := objectstore.EnsureBuckets(context.Background(), env.Store, b.Files, b.Mirror, b.Meta, b.MirrorMeta, b.Incoming); err != nil {
		t.Fatal(err)
	}
	npm := registrytest.New()
	t.Cleanup(npm.Close)
	stores := publishacts.Stores{Primary: env.Store, Mirror: env.Store, Buckets: b, IOParallel: 8}
	p := &pools{
		pub: &publishacts.Publish{Stores: stores, CatalogDir: t.TempDir(),
			NPM: &registry.NPM{BaseURL: npm.URL, Client: http.DefaultClient}, GitHub: &registry.GitHub{BaseURL: npm.URL},
			HTTP: http.DefaultClient, Extract: tarx.DefaultLimits, FirstImport: 10, TempDir: t.TempDir()},
		compress: &publishacts.Compress{Stores: stores, CPU: transform.NewLimiter(2)},
		npm:      npm,
		buckets:  b,
	}
	p.catalog = p.pub.CatalogDir
	var suite testsuite.WorkflowTestSuite
	suite.SetLogger(log.NewStructuredLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError + 1}))))
	p.acts = suite.NewTestActivityEnvironment()
	publishacts.RegisterPublish(p.acts, p.pub)
	publishacts.RegisterCompress(p.acts, p.compress)
	return p
}

func (p *pools) addToCatalog(t *testing.T, name, raw string) {
	t.Helper()
	path := catalog.FilePath(p.catalog, name)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(raw), 0o644); err != nil {
		t.Fatal(err)
	}
}

func entry(name string, files ...string) string {
	pkg := catalog.Package{Name: name, Description: "a test library", License: "MIT", Filename: "lib.min.js",
		Autoupdate: catalog.Autoupdate{Source: "npm", Target: name,
			FileMap: []catalog.FileMapEntry{{BasePath: "dist", Files: files}}}}
	data, _ := json.Marshal(pkg)
	return string(data)
}

// run executes one activity and decodes its result into out.
func run(t *testing.T, p *pools, out any, fn any, args ...any) error {
	t.Helper()
	val, err := p.acts.ExecuteActivity(fn, args...)
	if err == nil && out != nil {
		if derr := val.Get(out); derr != nil {
			t.Fatalf("decode the result of %T: %v", fn, derr)
		}
	}
	return err
}

func release(version, js string) []byte {
	return registrytest.NPMTarball(
		registrytest.Entry{Name: "package.json", Body: `{"version":"` + version + `"}`},
		registrytest.Entry{Name: "dist/lib.js", Body: js},
		registrytest.Entry{Name: "dist/lib.css", Body: ".lib { color: red; }\n"},
		registrytest.Entry{Name: "dist/logo.png", Body: "\x89PNG not really"},
	)
}

func exists(t *testing.T, bucket, key string) bool {
	t.Helper()
	_, err := env.Store.Stat(context.Background(), bucket, key)
	if err != nil && !errors.Is(err, objectstore.ErrNotFound) {
		t.Fatal(err)
	}
	return err == nil
}

// stageAndCompress runs StageVersion and CompressBatch for every batch.
func stageAndCompress(t *testing.T, p *pools, ref contract.VersionRef) contract.PlanSummary {
	t.Helper()
	var plan contract.PlanSummary
	if err := run(t, p, &plan, p.pub.StageVersion, ref); err != nil {
		t.Fatalf("StageVersion %s@%s: %v", ref.Name, ref.Version, err)
	}
	for b := range plan.Batches {
		if !exists(t, p.buckets.Incoming, metadata.BatchKey(ref.Name, ref.Version, b)) {
			t.Errorf("batch %d of %s@%s is not staged", b, ref.Name, ref.Version)
		}
		var sum contract.BatchSummary
		in := contract.BatchInput{Name: ref.Name, Version: ref.Version, Batch: b, Options: plan.Options, Fingerprint: plan.Fingerprint}
		if err := run(t, p, &sum, p.compress.CompressBatch, in); err != nil {
			t.Fatalf("CompressBatch %d: %v", b, err)
		}
		if sum.Files == 0 {
			t.Errorf("batch %d processed no file", b)
		}
	}
	return plan
}

// A version through every activity in turn, then a second one that reuses
// most of it: each leaves in the buckets what the next step and the edge need.
func TestActivitiesPublishAndReuse(t *testing.T) {
	p := newPools(t, "acts")
	p.addToCatalog(t, "lib", entry("lib", "*.@(js|css|png)"))
	p.npm.Add("lib", "1.0.0", release("1.0.0", "export const version = '1.0.0';\n"))

	var names []string
	if err := run(t, p, &names, p.pub.ListCatalog); err != nil || !slices.Equal(names, []string{"lib"}) {
		t.Fatalf("ListCatalog = %v, %v", names, err)
	}
	var checks []contract.PackageCheck
	if err := run(t, p, &checks, p.pub.CheckPackages, []contract.PackageRef{{Name: "lib"}}); err != nil {
		t.Fatal(err)
	}
	if len(checks) != 1 || checks[0].Problem != "" || len(checks[0].NewVersions) != 1 || checks[0].NewVersions[0].Dist == nil {
		t.Fatalf("CheckPackages = %+v; want lib@1.0.0 with its dist", checks)
	}
	ref := contract.VersionRef{PackageRef: contract.PackageRef{Name: "lib"}, Version: "1.0.0", Dist: checks[0].NewVersions[0].Dist}
	plan := stageAndCompress(t, p, ref)
	if plan.SourceFiles != 3 || plan.ToProcess != 3 || plan.Reused != 0 || !plan.Options.MinifyJS {
		t.Errorf("plan %+v; want 3 files to process", plan)
	}
	if !exists(t, p.buckets.Incoming, metadata.TarballKey("lib", "1.0.0")) {
		t.Error("the original archive is not kept")
	}
	var found []contract.FoundBatch
	if err := run(t, p, &found, p.pub.FindBatchResults, contract.BatchResultsInput{Name: "lib", Version: "1.0.0", Batches: []int{0, 7}}); err != nil ||
		len(found) != 1 || found[0].Batch != 0 || found[0].Files == 0 {
		t.Errorf("FindBatchResults = %+v, %v; want batch 0 found and batch 7 not", found, err)
	}
	var res contract.CommitResult
	if err := run(t, p, &res, p.pub.Commit, contract.PackageVersion{Name: "lib", Version: "1.0.0"}); err != nil {
		t.Fatal(err)
	}
	if res.Files != 5 || res.Latest != "1.0.0" || res.Copies != 0 {
		t.Errorf("Commit = %+v; want 5 files (js, min.js, css, min.css, png), latest 1.0.0", res)
	}
	for _, bucket := range []string{p.buckets.Meta, p.buckets.MirrorMeta} {
		// The search index entry is in the library's shard: a commit never
		// rewrites a whole-catalog document.
		for _, key := range []string{metadata.PackageKey("lib"), metadata.VersionKey("lib", "1.0.0"), metadata.SearchShardKey(metadata.SearchShardOf("lib"))} {
			if !exists(t, bucket, key) {
				t.Errorf("%s/%s missing after Commit", bucket, key)
			}
		}
	}
	if left, _ := objectstore.ListAll(context.Background(), env.Store, p.buckets.Incoming, metadata.StagingPrefix("lib", "1.0.0")); len(left) != 0 {
		t.Errorf("staging left after Commit: %v", left)
	}
	// A lost completion: Commit again reports what was committed.
	var again contract.CommitResult
	if err := run(t, p, &again, p.pub.Commit, contract.PackageVersion{Name: "lib", Version: "1.0.0"}); err != nil || again.Files != res.Files {
		t.Errorf("Commit retried = %+v, %v", again, err)
	}

	// 1.1.0 changes the script only: the stylesheet and the image are reused.
	p.npm.Add("lib", "1.1.0", release("1.1.0", "export const version = '1.1.0';\n"))
	checks = nil
	if err := run(t, p, &checks, p.pub.CheckPackages, []contract.PackageRef{{Name: "lib"}}); err != nil ||
		len(checks[0].NewVersions) != 1 || checks[0].NewVersions[0].Version != "1.1.0" {
		t.Fatalf("CheckPackages after 1.0.0 = %+v, %v; want 1.1.0 only", checks, err)
	}
	plan = stageAndCompress(t, p, contract.VersionRef{PackageRef: contract.PackageRef{Name: "lib"}, Version: "1.1.0"})
	if plan.Reused != 2 || plan.ToProcess != 1 {
		t.Errorf("plan of 1.1.0 %+v; want 2 reused, 1 processed", plan)
	}
	if err := run(t, p, &res, p.pub.Commit, contract.PackageVersion{Name: "lib", Version: "1.1.0"}); err != nil || res.Copies == 0 || res.Latest != "1.1.0" {
		t.Fatalf("Commit 1.1.0 = %+v, %v; want copies to make", res, err)
	}
	reused := metadata.FileKey("lib", "1.1.0", "lib.min.css")
	if exists(t, p.buckets.Files, reused) {
		t.Fatal("a reused file has its own key before Materialize")
	}
	var copies int
	if err := run(t, p, &copies, p.pub.Materialize, contract.PackageVersion{Name: "lib", Version: "1.1.0"}); err != nil || copies != res.Copies {
		t.Fatalf("Materialize = %d, %v; want %d", copies, err, res.Copies)
	}
	for _, bucket := range []string{p.buckets.Files, p.buckets.Mirror} {
		for _, key := range []string{reused, reused + metadata.BrotliSuffix, metadata.FileKey("lib", "1.1.0", "logo.png")} {
			if !exists(t, bucket, key) {
				t.Errorf("%s/%s missing after Materialize", bucket, key)
			}
		}
	}
	// Already published: StageVersion says so and stages nothing.
	var plan2 contract.PlanSummary
	if err := run(t, p, &plan2, p.pub.StageVersion, contract.VersionRef{PackageRef: contract.PackageRef{Name: "lib"}, Version: "1.0.0"}); err != nil || !plan2.AlreadyPublished {
		t.Errorf("StageVersion of a published version = %+v, %v", plan2, err)
	}
}

// A broken catalog entry is listed and reported by the check, while the
// other packages are checked.
func TestBrokenCatalogEntryIsReported(t *testing.T) {
	p := newPools(t, "acts-broken")
	p.addToCatalog(t, "good", entry("good", "*.js"))
	p.addToCatalog(t, "bad", `{"name": "bad", "autoupdate": {"source": "npm"`)
	p.npm.Add("good", "1.0.0", release("1.0.0", "1"))
	var names []string
	if err := run(t, p, &names, p.pub.ListCatalog); err != nil || !slices.Equal(names, []string{"bad", "good"}) {
		t.Fatalf("ListCatalog = %v, %v; want the broken entry listed too", names, err)
	}
	var checks []contract.PackageCheck
	if err := run(t, p, &checks, p.pub.CheckPackages, []contract.PackageRef{{Name: "bad"}, {Name: "good"}}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(checks[0].Problem, filepath.Join("b", "bad.json")) || len(checks[0].NewVersions) != 0 {
		t.Errorf("check of the broken entry: %+v; want a problem naming its file", checks[0])
	}
	if checks[1].Problem != "" || len(checks[1].NewVersions) != 1 {
		t.Errorf("check of the good entry: %+v", checks[1])
	}
}

// A hostile archive is rejected for good and later checks skip it; a
// rejection marker that cannot be read is reported, not ignored.
func TestRejectionMarkers(t *testing.T) {
	p := newPools(t, "acts-reject")
	p.addToCatalog(t, "lib", entry("lib", "*.js"))
	p.npm.Add("lib", "1.0.0", registrytest.NPMTarball(registrytest.Entry{Name: "dist/a.js", Body: "a"},
		registrytest.Entry{Name: "dist/evil.js", Link: "../../../etc/passwd"}))
	p.npm.Add("lib", "1.0.1", release("1.0.1", "ok"))
	err := run(t, p, nil, p.pub.StageVersion, contract.VersionRef{PackageRef: contract.PackageRef{Name: "lib"}, Version: "1.0.0"})
	var appErr *temporal.ApplicationError
	if !errors.As(err, &appErr) || appErr.Type() != contract.ErrBadArchive || !appErr.NonRetryable() {
		t.Fatalf("StageVersion of a hostile archive: %v; want a non-retryable %s", err, contract.ErrBadArchive)
	}
	var marker metadata.Rejection
	if _, err := objectstore.GetJSON(context.Background(), env.Store, p.buckets.Meta, metadata.RejectedKey("lib", "1.0.0"), &marker); err != nil ||
		marker.Type != contract.ErrBadArchive || !strings.Contains(marker.Reason, "evil.js") {
		t.Fatalf("rejection marker %+v, %v", marker, err)
	}
	var checks []contract.PackageCheck
	if err := run(t, p, &checks, p.pub.CheckPackages, []contract.PackageRef{{Name: "lib"}}); err != nil ||
		len(checks[0].NewVersions) != 1 || checks[0].NewVersions[0].Version != "1.0.1" {
		t.Fatalf("CheckPackages = %+v, %v; want only 1.0.1", checks, err)
	}
	if err := objectstore.PutBytes(context.Background(), env.Store, p.buckets.Meta, metadata.RejectedKey("lib", "0.9.0"), []byte("{not json"), objectstore.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	checks = nil
	if err := run(t, p, &checks, p.pub.CheckPackages, []contract.PackageRef{{Name: "lib"}}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(checks[0].Problem, metadata.RejectedKey("lib", "0.9.0")) || len(checks[0].NewVersions) != 0 {
		t.Errorf("check with a broken marker: %+v; want a problem naming the marker", checks[0])
	}
}

// TestPermanentFailuresAreRejected: what no retry can fix — a selected file
// whose name no object key can hold, an archive whose digest is not the
// registry's — fails for good with a rejection marker, and later checks
// skip the version instead of redoing it.
func TestPermanentFailuresAreRejected(t *testing.T) {
	p := newPools(t, "acts-permanent")
	p.addToCatalog(t, "lib", entry("lib", "**/*.js"))
	p.npm.Add("lib", "2.0.0", registrytest.NPMTarball(registrytest.Entry{Name: "dist/a.js", Body: "a"},
		registrytest.Entry{Name: "dist/" + strings.Repeat("n", 300) + ".js", Body: "long"}))
	p.npm.Add("lib", "2.0.1", release("2.0.1", "ok"))
	p.npm.Add("lib", "2.0.2", registrytest.NPMTarball(registrytest.Entry{Name: "dist/a.js", Body: "a"},
		registrytest.Entry{Name: "dist/" + strings.Repeat("d/", 100) + "deep.js", Body: "deep"}))
	// Unselected bad names cost nothing: this one publishes.
	p.npm.Add("lib", "2.0.3", registrytest.NPMTarball(registrytest.Entry{Name: "dist/a.js", Body: "a"},
		registrytest.Entry{Name: "docs/" + strings.Repeat("n", 300) + ".md", Body: "long"}))
	ref := func(v string) contract.VersionRef {
		return contract.VersionRef{PackageRef: contract.PackageRef{Name: "lib"}, Version: v}
	}
	// The registry's tarball, but another digest than the one it signed.
	tampered := ref("2.0.1")
	tampered.Dist = &contract.Dist{Tarball: p.npm.URL + "/tarballs/lib/2.0.1.tgz", Integrity: "sha512-" + strings.Repeat("A", 86) + "=="}
	for _, c := range []struct {
		ref     contract.VersionRef
		errType string
		reason  string
	}{
		{ref("2.0.0"), contract.ErrBadName, "255"},
		{tampered, contract.ErrIntegrity, "integrity mismatch"},
		{ref("2.0.2"), contract.ErrBadName, "deep"},
	} {
		err := run(t, p, nil, p.pub.StageVersion, c.ref)
		var appErr *temporal.ApplicationError
		if !errors.As(err, &appErr) || appErr.Type() != c.errType || !appErr.NonRetryable() {
			t.Errorf("StageVersion %s: %v; want a non-retryable %s", c.ref.Version, err, c.errType)
			continue
		}
		var marker metadata.Rejection
		if _, err := objectstore.GetJSON(context.Background(), env.Store, p.buckets.Meta, metadata.RejectedKey("lib", c.ref.Version), &marker); err != nil ||
			marker.Type != c.errType || !strings.Contains(marker.Reason, c.reason) {
			t.Errorf("rejection marker of %s: %+v, %v; want %s mentioning %q", c.ref.Version, marker, err, c.errType, c.reason)
		}
	}
	var plan contract.PlanSummary
	if err := run(t, p, &plan, p.pub.StageVersion, ref("2.0.3")); err != nil || plan.SourceFiles != 1 {
		t.Errorf("a release with an unselected bad name: %+v, %v; want a.js staged", plan, err)
	}
	var checks []contract.PackageCheck
	if err := run(t, p, &checks, p.pub.CheckPackages, []contract.PackageRef{{Name: "lib"}}); err != nil {
		t.Fatal(err)
	}
	var offered []string
	for _, v := range checks[0].NewVersions {
		offered = append(offered, v.Version)
	}
	if strings.Join(offered, " ") != "2.0.3" {
		t.Errorf("the check offers %v; want only 2.0.3 (the others are rejected)", offered)
	}
}

// TestStalledStagingGivesItsSlotBack: a download that stops advancing ends
// the attempt (so Temporal retries it) instead of holding the worker slot
// until the start-to-close timeout.
func TestStalledStagingGivesItsSlotBack(t *testing.T) {
	p := newPools(t, "acts-stall")
	p.addToCatalog(t, "lib", entry("lib", "*.js"))
	release := make(chan struct{})
	defer close(release)
	stalling := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "1000000")
		w.Write([]byte(strings.Repeat("x", 1000)))
		w.(http.Flusher).Flush()
		select { // then nothing more, until the client gives up
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer stalling.Close()
	p.pub.StallTimeout = 300 * time.Millisecond
	ref := contract.VersionRef{PackageRef: contract.PackageRef{Name: "lib"}, Version: "1.0.0", Dist: &contract.Dist{Tarball: stalling.URL + "/lib.tgz"}}
	err := run(t, p, nil, p.pub.StageVersion, ref)
	var appErr *temporal.ApplicationError
	if err == nil || !strings.Contains(err.Error(), "no progress") || (errors.As(err, &appErr) && appErr.NonRetryable()) {
		t.Errorf("StageVersion of a stalled download: %v; want a retryable no-progress failure", err)
	}
}

// TestPanicInProcessingFailsTheBatchNotTheWorker: a minifier or compressor
// that panics on a file fails its batch (retried once), never the worker
// process; the same batch panicking again rejects the version for good.
func TestPanicInProcessingFailsTheBatchNotTheWorker(t *testing.T) {
	p := newPools(t, "acts-panic")
	p.addToCatalog(t, "lib", entry("lib", "*.js"))
	p.npm.Add("lib", "1.0.0", release("1.0.0", "var a = 1;"))
	p.compress.Process = func(path string, data []byte, opts transform.Options, shipped func(string) bool) ([]transform.Output, []string, error) {
		return transform.File(path, data, opts, func(string) bool { panic("minifier bug on " + path) })
	}
	ref := contract.VersionRef{PackageRef: contract.PackageRef{Name: "lib"}, Version: "1.0.0"}
	var plan contract.PlanSummary
	if err := run(t, p, &plan, p.pub.StageVersion, ref); err != nil {
		t.Fatal(err)
	}
	in := contract.BatchInput{Name: "lib", Version: "1.0.0", Batch: 0, Options: plan.Options, Fingerprint: plan.Fingerprint}
	err := run(t, p, nil, p.compress.CompressBatch, in)
	var appErr *temporal.ApplicationError
	if err == nil || !strings.Contains(err.Error(), "panicked") || (errors.As(err, &appErr) && appErr.NonRetryable()) {
		t.Fatalf("first panic: %v; want a retryable failure of the batch", err)
	}
	err = run(t, p, nil, p.compress.CompressBatch, in)
	if !errors.As(err, &appErr) || appErr.Type() != contract.ErrProcessing || !appErr.NonRetryable() {
		t.Fatalf("second panic: %v; want a non-retryable %s", err, contract.ErrProcessing)
	}
	var marker metadata.Rejection
	if _, err := objectstore.GetJSON(context.Background(), env.Store, p.buckets.Meta, metadata.RejectedKey("lib", "1.0.0"), &marker); err != nil ||
		marker.Type != contract.ErrProcessing || !strings.Contains(marker.Reason, "minifier bug") {
		t.Errorf("rejection marker %+v, %v", marker, err)
	}
}

// TestSentPackagesCannotReplaceTheCatalog: a definition sent by a starter
// is refused for a library the workers' catalog reviews (or one whose name
// differs only in case, or under another name), accepted unchanged, and
// free for a library the catalog does not have.
func TestSentPackagesCannotReplaceTheCatalog(t *testing.T) {
	p := newPools(t, "acts-trust")
	p.addToCatalog(t, "lib", entry("lib", "*.js"))
	p.npm.Add("lib", "1.0.0", release("1.0.0", "ok"))
	p.npm.Add("mylib", "1.0.0", release("1.0.0", "mine"))
	var reviewed catalog.Package
	if err := json.Unmarshal([]byte(entry("lib", "*.js")), &reviewed); err != nil {
		t.Fatal(err)
	}
	hostile := reviewed
	hostile.Autoupdate.Target = "evil-lib" // another source for the same URLs
	upper := hostile
	upper.Name = "LIB"
	var mine catalog.Package
	if err := json.Unmarshal([]byte(entry("mylib", "*.js")), &mine); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		ref  contract.PackageRef
		want string // "" accepted
	}{
		{contract.PackageRef{Name: "lib", Package: &hostile}, "cannot replace its reviewed entry"},
		{contract.PackageRef{Name: "LIB", Package: &upper}, "cannot replace its reviewed entry"},
		{contract.PackageRef{Name: "mylib", Package: &hostile}, `named "lib", not "mylib"`},
		{contract.PackageRef{Name: "lib", Package: &reviewed}, ""},
		{contract.PackageRef{Name: "mylib", Package: &mine}, ""},
		{contract.PackageRef{Name: "mylib", Package: &mine}, ""}, // as often as its author likes
	} {
		var checks []contract.PackageCheck
		if err := run(t, p, &checks, p.pub.CheckPackages, []contract.PackageRef{c.ref}); err != nil {
			t.Fatal(err)
		}
		if got := checks[0].Problem; (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("check of %s sent as %s: problem %q, want %q", c.ref.Package.Name, c.ref.Name, got, c.want)
		}
		if c.want != "" {
			err := run(t, p, nil, p.pub.StageVersion, contract.VersionRef{PackageRef: c.ref, Version: "1.0.0"})
			var appErr *temporal.ApplicationError
			if !errors.As(err, &appErr) || appErr.Type() != contract.ErrInvalidPackage || !strings.Contains(err.Error(), c.want) {
				t.Errorf("StageVersion of %s sent as %s: %v", c.ref.Package.Name, c.ref.Name, err)
			}
		}
	}
}

// TestVersionTheFileMapSelectsNothingFromIsSkipped: StageVersion reports
// the version skipped with its reason (no error), and leaves a marker so
