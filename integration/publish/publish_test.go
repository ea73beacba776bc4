package integration

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/andybalholm/brotli"
	"go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/edgeflow/edgeflow/internal/objectstore"
	"github.com/edgeflow/edgeflow/internal/publish/catalog"
	"github.com/edgeflow/edgeflow/internal/publish/metadata"
	"github.com/edgeflow/edgeflow/internal/publish/registry/registrytest"
	"github.com/edgeflow/edgeflow/internal/publish/transform"
	"github.com/edgeflow/edgeflow/workflows/publish"
	"github.com/edgeflow/edgeflow/workflows/publish/contract"
)

func demoPackage(name string) catalog.Package {
	return catalog.Package{
		Name: name, Description: "a demo library", License: "MIT", Filename: "demo.min.js",
		Keywords: []string{"demo"},
		Autoupdate: catalog.Autoupdate{Source: "npm", Target: name,
			FileMap: []catalog.FileMapEntry{{BasePath: "dist", Files: []string{"**/*.@(js|css|png)"}}}},
	}
}

const modernJS = `/*! demo v%s | MIT */
export class Counter {
  #count = 0;
  increment(step) { this.#count += step ?? 1; return this.#count; }
  get value() { return this.#count; }
}
export const read = (obj) => obj?.deeply?.nested ?? "default value for version %s";
export async function load(url) { const r = await fetch(url); return r.json(); }
`

func demoTarball(version string, cssBody string) []byte {
	return registrytest.NPMTarball(
		registrytest.Entry{Name: "package.json", Body: `{"name":"demo","version":"` + version + `"}`},
		registrytest.Entry{Name: "README.md", Body: "# demo"},
		registrytest.Entry{Name: "dist/demo.js", Body: fmt.Sprintf(modernJS, version, version)},
		registrytest.Entry{Name: "dist/demo.css", Body: cssBody},
		registrytest.Entry{Name: "dist/img/logo.png", Body: "\x89PNG\r\n\x1a\nnot really a png but stored as is"},
	)
}

const demoCSS = ".demo { color: red; padding: 0px 0px 0px 0px; }\n.demo:hover { color: blue; }\n"

func runPublish(t *testing.T, ref contract.VersionRef, mutate func(*contract.PublishInput)) (client.WorkflowRun, contract.PublishOutput, error) {
	t.Helper()
	in := contract.PublishInput{VersionRef: ref}
	if mutate != nil {
		mutate(&in)
	}
	run, err := env.Client.ExecuteWorkflow(testContext(t), versionStart(ref.Name, ref.Version), contract.WorkflowTypePublishVersion, in)
	if err != nil {
		t.Fatal(err)
	}
	var out contract.PublishOutput
	err = run.Get(testContext(t), &out)
	return run, out, err
}

// runUpdates runs a check that waits for its versions, as the publish
// starter's does.
func runUpdates(t *testing.T, id string, in contract.UpdatesInput) contract.UpdatesStats {
	t.Helper()
	in.Wait = true
	run, err := env.Client.ExecuteWorkflow(testContext(t), client.StartWorkflowOptions{ID: id, TaskQueue: contract.TaskQueue}, contract.WorkflowTypePackageUpdates, in)
	if err != nil {
		t.Fatal(err)
	}
	var stats contract.UpdatesStats
	if err := run.Get(testContext(t), &stats); err != nil {
		t.Fatalf("PackageUpdates: %v", err)
	}
	return stats
}

func getVersion(t *testing.T, name, version string) metadata.Version {
	t.Helper()
	var v metadata.Version
	if _, err := objectstore.GetJSON(testContext(t), env.Store, buckets.Meta, metadata.VersionKey(name, version), &v); err != nil {
		t.Fatalf("version document %s@%s: %v", name, version, err)
	}
	return v
}

func TestPublishEndToEnd(t *testing.T) {
	startWorkers(t)
	ctx := testContext(t)
	pkg := demoPackage("demo")
	npm.Add("demo", "1.0.0", demoTarball("1.0.0", demoCSS))

	// The first version alone, so the second can reuse its outputs.
	run, out, err := runPublish(t, contract.VersionRef{PackageRef: contract.PackageRef{Name: "demo", Package: &pkg}, Version: "1.0.0"}, nil)
	if err != nil {
		t.Fatalf("publish 1.0.0: %v", err)
	}
	if out.Result == nil || out.Result.Files != 5 {
		t.Fatalf("1.0.0 published %+v, want 5 files (js, min.js, css, min.css, png)", out.Result)
	}
	replay(t, run)

	v1 := getVersion(t, "demo", "1.0.0")
	wantPaths := []string{"demo.css", "demo.js", "demo.min.css", "demo.min.js", "img/logo.png"}
	var got []string
	for _, f := range v1.Files {
		got = append(got, f.Path)
	}
	if strings.Join(got, ",") != strings.Join(wantPaths, ",") {
		t.Fatalf("files = %v, want %v", got, wantPaths)
	}
	for _, f := range v1.Files {
		key := metadata.FileKey("demo", "1.0.0", f.Path)
		for _, bucket := range []string{buckets.Files, buckets.Mirror} {
			data, _, err := objectstore.ReadAll(ctx, env.Store, bucket, key)
			if err != nil {
				t.Fatalf("%s/%s: %v", bucket, key, err)
			}
			if transform.SRI(data) != f.SRI {
				t.Errorf("%s/%s: stored bytes do not match the SRI in the version document", bucket, key)
			}
			if int64(len(data)) != f.Size {
				t.Errorf("%s/%s: size %d, document says %d", bucket, key, len(data), f.Size)
			}
			if f.Path == "img/logo.png" {
				if f.BrotliSize != 0 {
					t.Errorf("png got a brotli representation")
				}
				if _, err := env.Store.Stat(ctx, bucket, key+".br"); !errors.Is(err, objectstore.ErrNotFound) {
					t.Errorf("png .br stored: %v", err)
				}
				continue
			}
			br, _, err := objectstore.ReadAll(ctx, env.Store, bucket, key+".br")
			if err != nil {
				t.Fatal(err)
			}
			plain, err := io.ReadAll(brotli.NewReader(bytes.NewReader(br)))
			if err != nil || !bytes.Equal(plain, data) {
				t.Errorf("%s.br does not decompress to the original (%v)", key, err)
			}
			gz, _, err := objectstore.ReadAll(ctx, env.Store, bucket, key+".gz")
			if err != nil {
				t.Fatal(err)
			}
			zr, err := gzip.NewReader(bytes.NewReader(gz))
			if err != nil {
				t.Fatal(err)
			}
			plain, _ = io.ReadAll(zr)
			if !bytes.Equal(plain, data) {
				t.Errorf("%s.gz does not decompress to the original", key)
			}
		}
	}
	minJS, _ := v1.Lookup("demo.min.js")
	if minJS.MinifiedFrom != "demo.js" {
		t.Errorf("demo.min.js MinifiedFrom = %q", minJS.MinifiedFrom)
	}
	minified, _, _ := objectstore.ReadAll(ctx, env.Store, buckets.Files, metadata.FileKey("demo", "1.0.0", "demo.min.js"))
	for _, syntax := range []string{"this.#", "class Counter", "??", "?.", "async function", "/*! demo v1.0.0"} {
		if !bytes.Contains(minified, []byte(syntax)) {
			t.Errorf("minified JS lost %q: %s", syntax, minified)
		}
	}

	// Two more versions: 1.1.0 keeps the CSS (reused), 1.2.0 is hostile.
	npm.Add("demo", "1.1.0", demoTarball("1.1.0", demoCSS))
	npm.Add("demo", "1.2.0", registrytest.NPMTarball(registrytest.Entry{Name: "dist/a.js", Body: "a"}, registrytest.Entry{Name: "dist/evil.js", Link: "../../../etc/passwd"}))
	stats := runUpdates(t, "updates-demo-1", contract.UpdatesInput{Packages: []catalog.Package{pkg}})
	if stats.NewVersions != 2 || stats.Published != 1 || stats.Failed != 1 {
		t.Fatalf("updates: %+v; want 2 new, 1 published, 1 failed (hostile)", stats)
	}
	if !strings.Contains(strings.Join(stats.Failures, " "), "1.2.0") {
		t.Errorf("failure does not name the hostile version: %v", stats.Failures)
	}
	v2 := getVersion(t, "demo", "1.1.0")
	if v2.Stats.ReusedFiles != 2 || v2.Stats.SourceFiles != 3 {
		// demo.css and logo.png are unchanged; demo.js differs (version in its banner).
		t.Errorf("1.1.0 reused %d of %d source files, want 2 of 3", v2.Stats.ReusedFiles, v2.Stats.SourceFiles)
	}
	css1, _ := v1.Lookup("demo.min.css")
	css2, _ := v2.Lookup("demo.min.css")
	if css1.SRI != css2.SRI || css2.SRI == "" {
		t.Errorf("reused demo.min.css has SRI %q, first version %q", css2.SRI, css1.SRI)
	}
	if want := metadata.FileKey("demo", "1.0.0", "demo.min.css"); css2.StoredAt != want {
		t.Errorf("reused demo.min.css points at %q, want the bytes 1.0.0 stored at %q", css2.StoredAt, want)
	}
	// After the workflow, reused files have their own keys too (materialized).
	reusedBytes, _, err := objectstore.ReadAll(ctx, env.Store, buckets.Mirror, metadata.FileKey("demo", "1.1.0", "demo.min.css.br"))
	if err != nil || len(reusedBytes) == 0 {
		t.Errorf("reused output not copied to the mirror: %v", err)
	}
	if _, err := env.Store.Stat(ctx, buckets.Meta, metadata.RejectedKey("demo", "1.2.0")); err != nil {
		t.Errorf("hostile version not marked rejected: %v", err)
	}
	if _, err := env.Store.Stat(ctx, buckets.Meta, metadata.VersionKey("demo", "1.2.0")); !errors.Is(err, objectstore.ErrNotFound) {
		t.Errorf("hostile version has a version document")
	}

	var doc metadata.Package
	if _, err := objectstore.GetJSON(ctx, env.Store, buckets.Meta, metadata.PackageKey("demo"), &doc); err != nil {
		t.Fatal(err)
	}
	if strings.Join(doc.Versions, ",") != "1.0.0,1.1.0" || doc.Latest != "1.1.0" || doc.Description != "a demo library" {
		t.Errorf("package document: versions %v latest %q description %q", doc.Versions, doc.Latest, doc.Description)
	}
	var index metadata.Index
	if _, err := objectstore.GetJSON(ctx, env.Store, buckets.Meta, metadata.SearchShardKey(metadata.SearchShardOf("demo")), &index); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, e := range index.Libraries {
		if e.Name == "demo" && e.Latest == "1.1.0" && strings.HasPrefix(e.SRI, "sha512-") {
			found = true
		}
	}
	if !found {
		t.Errorf("search index lacks demo@1.1.0 with SRI: %+v", index.Libraries)
	}
	// The edge's fallback during a primary outage: every document it reads
	// is on the mirror too, byte for byte.
	for _, key := range []string{metadata.VersionKey("demo", "1.0.0"), metadata.VersionKey("demo", "1.1.0"),
		metadata.PackageKey("demo"), metadata.SearchShardKey(metadata.SearchShardOf("demo"))} {
		primary, _, err := objectstore.ReadAll(ctx, env.Store, buckets.Meta, key)
		if err != nil {
			t.Fatal(err)
		}
		mirrored, _, err := objectstore.ReadAll(ctx, env.Store, buckets.MirrorMeta, key)
		if err != nil {
			t.Errorf("%s not copied to the mirror's metadata bucket: %v", key, err)
			continue
		}
		if !bytes.Equal(mirrored, primary) {
			t.Errorf("%s differs between %s and %s:\nprimary %s\nmirror  %s", key, buckets.Meta, buckets.MirrorMeta, primary, mirrored)
		}
	}
	if _, err := env.Store.Stat(ctx, buckets.MirrorMeta, metadata.VersionKey("demo", "1.2.0")); !errors.Is(err, objectstore.ErrNotFound) {
		t.Errorf("the rejected version has a mirrored version document: %v", err)
	}
	if left, _ := objectstore.ListAll(ctx, env.Store, buckets.Incoming, metadata.StagingPrefix("demo", "1.1.0")); len(left) != 0 {
		t.Errorf("staging not cleaned: %d objects left", len(left))
	}

	// Nothing new: the registry answers 304, nothing is retried (the hostile
	// version is rejected for good), nothing is republished.
	before := npm.NotModified.Load()
	stats = runUpdates(t, "updates-demo-2", contract.UpdatesInput{Packages: []catalog.Package{pkg}})
	if stats.NewVersions != 0 || stats.NotModified != 1 {
		t.Errorf("second check: %+v; want nothing new and a 304", stats)
	}
	if npm.NotModified.Load() != before+1 {
		t.Errorf("the registry was not asked conditionally")
	}

	// Publishing a published version again is a no-op: the run (its ID may be
	// reused once the earlier run ended, so that a skipped or incomplete
	// version can run again) finds the version listed and stops at once.
	again, againOut, err := runPublish(t, contract.VersionRef{PackageRef: contract.PackageRef{Name: "demo", Package: &pkg}, Version: "1.0.0"}, nil)
	if err != nil || !againOut.AlreadyPublished || againOut.Result != nil || again.GetRunID() == run.GetRunID() {
		t.Errorf("republish: run %s, %+v (%v); want a run that found 1.0.0 already published", again.GetRunID(), againOut, err)
	}
	// And a run that gets past the ID (say, after its history was deleted) finds
	// the version document and stops at once.
	if _, err := env.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "republish-demo-1.0.0", TaskQueue: contract.TaskQueue},
		contract.WorkflowTypePublishVersion, contract.PublishInput{VersionRef: contract.VersionRef{PackageRef: contract.PackageRef{Name: "demo", Package: &pkg}, Version: "1.0.0"}}); err != nil {
		t.Fatal(err)
	}
	var direct contract.PublishOutput
	if err := env.Client.GetWorkflow(ctx, "republish-demo-1.0.0", "").Get(ctx, &direct); err != nil || !direct.AlreadyPublished {
		t.Errorf("second publish of 1.0.0: %+v %v; want already published", direct, err)
	}

	// Every run is findable by its package and version.
	query := `Package = "demo" AND Version = "1.1.0" AND WorkflowType = "PublishVersion"`
	eventually(t, 30*time.Second, "a completed run found by "+query, func() (bool, string) {
		resp, err := env.Client.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: query})
		return err == nil && len(resp.Executions) == 1 && resp.Executions[0].Status == enums.WORKFLOW_EXECUTION_STATUS_COMPLETED, fmt.Sprint(resp, err)
	})
}

// TestPublishManyBatchesContinuesAsNew publishes a version split into one
// batch per file with a tiny history budget: the run continues as new several
// times while batch children keep signalling, and no batch is lost or counted twice.
func TestPublishManyBatchesContinuesAsNew(t *testing.T) {
	startWorkers(t)
	var entries []registrytest.Entry
	for i := 0; i < 40; i++ {
		entries = append(entries, registrytest.Entry{Name: fmt.Sprintf("dist/part-%02d.js", i), Body: fmt.Sprintf("export const part%d = %d;\n", i, i*i)})
	}
	pkg := demoPackage("many")
	pkg.Autoupdate.FileMap = []catalog.FileMapEntry{{BasePath: "dist", Files: []string{"*.js"}}}
	npm.Add("many", "1.0.0", registrytest.NPMTarball(entries...))
	run, out, err := runPublish(t, contract.VersionRef{
		PackageRef: contract.PackageRef{Name: "many", Package: &pkg}, Version: "1.0.0",
		BatchLimits: &contract.BatchLimits{MaxBytes: 1, MaxFiles: 1},
	}, func(in *contract.PublishInput) { in.HistoryBudget = 60; in.MaxPendingBatches = 6 })
	if err != nil {
		t.Fatal(err)
	}
	if out.Result == nil || out.Result.SourceFiles != 40 || out.Result.Files != 80 || out.Processing.Files != 40 {
		t.Fatalf("result %+v processing %+v; want 40 sources, 80 files", out.Result, out.Processing)
	}
	// The first run ended by continuing as new.
	first := firstRunID(t, run.GetID())
	hist := env.Client.GetWorkflowHistory(testContext(t), run.GetID(), first, false, enums.HISTORY_EVENT_FILTER_TYPE_CLOSE_EVENT)
	ev, err := hist.Next()
	if err != nil {
		t.Fatal(err)
	}
	if ev.GetEventType() != enums.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW {
		t.Errorf("first run closed with %v, want continued-as-new", ev.GetEventType())
	}
	if got := len(getVersion(t, "many", "1.0.0").Files); got != 80 {
		t.Errorf("version document lists %d files, want 80", got)
	}
}

// firstRunID is the run a chain of continue-as-new began with, read from
// the execution itself, not from visibility (which lags behind).
func firstRunID(t *testing.T, workflowID string) string {
	t.Helper()
	d, err := env.Client.DescribeWorkflow(testContext(t), workflowID, "")
	if err != nil {
		t.Fatal(err)
	}
	first := d.RawResponse.GetWorkflowExecutionInfo().GetFirstRunId()
	if first == "" {
		t.Fatalf("no first run ID for %s", workflowID)
	}
	return first
}

// replay re-runs a finished run's history against the current workflow code:
// any nondeterminism fails the test.
func replay(t *testing.T, run client.WorkflowRun) {
	t.Helper()
	iter := env.Client.GetWorkflowHistory(testContext(t), run.GetID(), run.GetRunID(), false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	hist := &historypb.History{}
	for iter.HasNext() {
		ev, err := iter.Next()
		if err != nil {
			t.Fatal(err)
		}
		hist.Events = append(hist.Events, ev)
	}
	r := worker.NewWorkflowReplayer()
	publish.Register(r)
	if err := r.ReplayWorkflowHistory(nil, hist); err != nil {
		t.Fatalf("replay %s: %v", run.GetID(), err)
	}
}

// TestPublishFromGitTags publishes a library whose versions are git tags
// (the GitHub API), with "v" prefixes stripped and the archive's top folder removed.
func TestPublishFromGitTags(t *testing.T) {
	startWorkers(t)
	npm.Add("acme/widget", "v1.4.0", registrytest.GitHubTarball("acme-widget-1a2b3c",
		registrytest.Entry{Name: "dist/widget.js", Body: "export const widget = () => 'v1.4.0';\n"},
		registrytest.Entry{Name: "README.md", Body: "# widget"}))
	pkg := catalog.Package{Name: "widget", Filename: "widget.min.js",
		Autoupdate: catalog.Autoupdate{Source: "git", Target: "acme/widget",
			FileMap: []catalog.FileMapEntry{{BasePath: "dist", Files: []string{"*.js"}}}}}
	stats := runUpdates(t, "updates-widget", contract.UpdatesInput{Packages: []catalog.Package{pkg}})
	if stats.Published != 1 || stats.Failed != 0 {
		t.Fatalf("git package: %+v", stats)
	}
	v := getVersion(t, "widget", "1.4.0")
	if _, ok := v.Lookup("widget.min.js"); !ok || len(v.Files) != 2 {
		t.Errorf("widget@1.4.0 files: %+v", v.Files)
	}
}

// TestHalfCommittedVersionPublishesAgain: a version document without the
// package document listing it (a commit that stopped between the two) is not
// published, so the next run publishes the version instead of skipping it.
func TestHalfCommittedVersionPublishesAgain(t *testing.T) {
	startWorkers(t)
	ctx := testContext(t)
	pkg := demoPackage("halfdone")
	npm.Add("halfdone", "1.0.0", demoTarball("1.0.0", demoCSS))
	stale := metadata.Version{Name: "halfdone", Version: "1.0.0", Files: []metadata.File{{Path: "demo.js"}}}
	if err := objectstore.PutJSON(ctx, env.Store, buckets.Meta, metadata.VersionKey("halfdone", "1.0.0"), stale); err != nil {
		t.Fatal(err)
	}
	_, out, err := runPublish(t, contract.VersionRef{PackageRef: contract.PackageRef{Name: "halfdone", Package: &pkg}, Version: "1.0.0"}, nil)
	if err != nil || out.AlreadyPublished || out.Result == nil || out.Result.Files != 5 {
		t.Fatalf("publish over a half commit: %+v %v; want a full publish of 5 files", out, err)
	}
	var doc metadata.Package
	if _, err := objectstore.GetJSON(ctx, env.Store, buckets.Meta, metadata.PackageKey("halfdone"), &doc); err != nil || !slices.Contains(doc.Versions, "1.0.0") {
		t.Errorf("package document %+v (%v) does not list 1.0.0", doc, err)
	}
}

// TestRejectionClearsWhenFileMapChanges: a version whose files the fileMap
// does not select is skipped with its reason (not failed), and skipped by
// later checks, until the catalog entry's fileMap changes.
func TestRejectionClearsWhenFileMapChanges(t *testing.T) {
	startWorkers(t)
	npm.Add("remapped", "1.0.0", registrytest.NPMTarball(registrytest.Entry{Name: "lib/remapped.js", Body: "export const remapped = 1;\n"}))
	pkg := demoPackage("remapped") // selects under dist/: nothing
	if s := runUpdates(t, "updates-remapped-1", contract.UpdatesInput{Packages: []catalog.Package{pkg}}); s.Failed != 0 || s.Skipped != 1 ||
		len(s.Skips) != 1 || !strings.Contains(s.Skips[0], "selects none") {
		t.Fatalf("first check: %+v; want the version skipped with its reason, not failed", s)
	}
	if s := runUpdates(t, "updates-remapped-2", contract.UpdatesInput{Packages: []catalog.Package{pkg}}); s.NewVersions != 0 {
		t.Fatalf("second check: %+v; want the rejected version skipped", s)
	}
	pkg.Autoupdate.FileMap = []catalog.FileMapEntry{{BasePath: "lib", Files: []string{"*.js"}}}
	if s := runUpdates(t, "updates-remapped-3", contract.UpdatesInput{Packages: []catalog.Package{pkg}}); s.Published != 1 {
		t.Fatalf("after the fileMap fix: %+v; want the version published", s)
	}
}
