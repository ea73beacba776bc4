package publish_test

import (
	"context"
	"strings"
	"testing"

	"github.com/edgeflow/edgeflow/internal/objectstore"
	"github.com/edgeflow/edgeflow/internal/publish/metadata"
	"github.com/edgeflow/edgeflow/internal/publish/registry/registrytest"
	"github.com/edgeflow/edgeflow/workflows/publish/contract"
)

// What a check and a commit do with the versions of a real release stream:
// skipped selections, the import window, shipped files, repaired commits.

func TestVersionTheFileMapSelectsNothingFromIsSkipped(t *testing.T) {
	p := newPools(t, "acts-skip")
	p.addToCatalog(t, "lib", entry("lib", "*.js"))
	p.npm.Add("lib", "2.0.0-alpha.1", registrytest.NPMTarball(registrytest.Entry{Name: "esm/lib.mjs", Body: "export {}"}))
	var plan contract.PlanSummary
	err := run(t, p, &plan, p.pub.StageVersion, contract.VersionRef{PackageRef: contract.PackageRef{Name: "lib"}, Version: "2.0.0-alpha.1"})
	if err != nil || !strings.Contains(plan.SkipReason, "selects none of the 1 files") || plan.Batches != 0 {
		t.Fatalf("StageVersion = %+v, %v; want skipped with its reason", plan, err)
	}
	var marker metadata.Rejection
	if _, err := objectstore.GetJSON(context.Background(), env.Store, p.buckets.Meta, metadata.RejectedKey("lib", "2.0.0-alpha.1"), &marker); err != nil ||
		marker.Type != contract.ErrNoFiles || marker.Selection == "" {
		t.Errorf("marker %+v, %v; want one that a fileMap change clears", marker, err)
	}
}

// TestImportWindowIsKept: the first check's import window is stored, so a
// later check neither offers the prereleases the first import left out nor
// loses a first-import version that has not published yet.
func TestImportWindowIsKept(t *testing.T) {
	p := newPools(t, "acts-window")
	p.pub.FirstImport = 2
	p.addToCatalog(t, "lib", entry("lib", "*.js"))
	for _, v := range []string{"1.0.0", "1.1.0", "1.2.0", "1.3.0", "2.0.0-alpha.1"} {
		p.npm.Add("lib", v, release(v, "x"))
	}
	offered := func() string {
		var checks []contract.PackageCheck
		if err := run(t, p, &checks, p.pub.CheckPackages, []contract.PackageRef{{Name: "lib"}}); err != nil || checks[0].Problem != "" {
			t.Fatalf("check: %v %+v", err, checks)
		}
		var vs []string
		for _, v := range checks[0].NewVersions {
			vs = append(vs, v.Version)
		}
		return strings.Join(vs, " ")
	}
	if got := offered(); got != "1.2.0 1.3.0" {
		t.Fatalf("first check offers %q", got)
	}
	// 1.3.0 published; 1.2.0 failed transiently.
	doc := metadata.Package{Versions: []string{"1.3.0"}, Latest: "1.3.0"}
	doc.Name = "lib"
	if err := objectstore.PutJSON(context.Background(), env.Store, p.buckets.Meta, metadata.PackageKey("lib"), doc); err != nil {
		t.Fatal(err)
	}
	if got := offered(); got != "1.2.0" {
		t.Errorf("second check offers %q; want 1.2.0 retried, nothing else", got)
	}
}

// TestShippedFilesBeatGeneratedOnes: a release that ships x.js with x.js.gz
// and x.js.br beside it, and x.min.js: no generated output is written over
// a shipped file, and the version document describes each as shipped.
func TestShippedFilesBeatGeneratedOnes(t *testing.T) {
	p := newPools(t, "acts-collide")
	p.addToCatalog(t, "lib", entry("lib", "*"))
	js := strings.Repeat("var answer = 42; function f(a) { return a * answer; }\n", 40)
	p.npm.Add("lib", "1.0.0", registrytest.NPMTarball(
		registrytest.Entry{Name: "dist/x.js", Body: js},
		registrytest.Entry{Name: "dist/x.js.gz", Body: "SHIPPED-GZ"},
		registrytest.Entry{Name: "dist/x.js.br", Body: "SHIPPED-BR"},
		registrytest.Entry{Name: "dist/x.min.js", Body: "SHIPPED-MIN"},
	))
	ref := contract.VersionRef{PackageRef: contract.PackageRef{Name: "lib"}, Version: "1.0.0"}
	stageAndCompress(t, p, ref)
	if err := run(t, p, nil, p.pub.Commit, contract.PackageVersion{Name: "lib", Version: "1.0.0"}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for path, want := range map[string]string{"x.js.gz": "SHIPPED-GZ", "x.js.br": "SHIPPED-BR", "x.min.js": "SHIPPED-MIN"} {
		for _, bucket := range []string{p.buckets.Files, p.buckets.Mirror} {
			got, _, err := objectstore.ReadAll(ctx, env.Store, bucket, metadata.FileKey("lib", "1.0.0", path))
			if err != nil || string(got) != want {
				t.Errorf("%s/%s holds %q (%v); want the shipped bytes", bucket, path, got, err)
			}
		}
	}
	var doc metadata.Version
	if _, err := objectstore.GetJSON(ctx, env.Store, p.buckets.Meta, metadata.VersionKey("lib", "1.0.0"), &doc); err != nil {
		t.Fatal(err)
	}
	x, _ := doc.Lookup("x.js")
	if x.GzipSize != 0 || x.BrotliSize != 0 || x.Size != int64(len(js)) {
		t.Errorf("x.js in the version document: %+v; want no .gz or .br of its own", x)
	}
	if gz, ok := doc.Lookup("x.js.gz"); !ok || gz.Size != int64(len("SHIPPED-GZ")) || gz.MinifiedFrom != "" {
		t.Errorf("x.js.gz in the version document: %+v", gz)
	}
	if m, _ := doc.Lookup("x.min.js"); m.MinifiedFrom != "" || m.Size != int64(len("SHIPPED-MIN")) {
		t.Errorf("x.min.js in the version document: %+v; want the shipped file, not a generated twin", m)
	}
}

// TestIncompleteCommitIsRepairedByTheNextCheck: a version whose commit
// stopped after the commit point (the mirror's copies and the search index
// never written) is offered by the next check, staged as a repair, and
// finished by Commit; then checks leave it alone.
func TestIncompleteCommitIsRepairedByTheNextCheck(t *testing.T) {
	p := newPools(t, "acts-repair")
	p.addToCatalog(t, "lib", entry("lib", "*.js"))
	p.npm.Add("lib", "1.0.0", release("1.0.0", "var a = 1;"))
	ref := contract.VersionRef{PackageRef: contract.PackageRef{Name: "lib"}, Version: "1.0.0"}
	stageAndCompress(t, p, ref)
	if err := run(t, p, nil, p.pub.Commit, contract.PackageVersion{Name: "lib", Version: "1.0.0"}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// Stopped part way: listed, but the mirror and the index lack it.
	shard := metadata.SearchShardKey(metadata.SearchShardOf("lib"))
	for _, del := range []struct{ bucket, key string }{
		{p.buckets.MirrorMeta, metadata.VersionKey("lib", "1.0.0")}, {p.buckets.MirrorMeta, metadata.PackageKey("lib")},
		{p.buckets.Meta, shard}, {p.buckets.MirrorMeta, shard},
	} {
		if err := env.Store.Delete(ctx, del.bucket, del.key); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := objectstore.UpdateJSON(ctx, env.Store, p.buckets.Meta, metadata.PackageKey("lib"), func(d *metadata.Package, _ bool) (bool, error) {
		d.MarkIncomplete("1.0.0")
		return true, nil
	}); err != nil {
		t.Fatal(err)
	}
	offered := func() int {
		var checks []contract.PackageCheck
		if err := run(t, p, &checks, p.pub.CheckPackages, []contract.PackageRef{{Name: "lib"}}); err != nil {
			t.Fatal(err)
		}
		return len(checks[0].NewVersions)
	}
	if n := offered(); n != 1 {
		t.Fatalf("the check offers %d versions; want the incomplete 1.0.0", n)
	}
	var plan contract.PlanSummary
	if err := run(t, p, &plan, p.pub.StageVersion, ref); err != nil || !plan.Repair {
		t.Fatalf("StageVersion of an incomplete version: %+v, %v; want a repair", plan, err)
	}
	if err := run(t, p, nil, p.pub.Commit, contract.PackageVersion{Name: "lib", Version: "1.0.0"}); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{metadata.VersionKey("lib", "1.0.0"), metadata.PackageKey("lib"), shard} {
		if !exists(t, p.buckets.MirrorMeta, key) {
			t.Errorf("%s not repaired on the mirror", key)
		}
	}
	if !exists(t, p.buckets.Meta, shard) {
		t.Error("the search index shard was not repaired")
	}
	if n := offered(); n != 0 {
		t.Errorf("after the repair the check still offers %d versions", n)
	}
}
