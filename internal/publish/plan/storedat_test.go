package plan_test

import (
	"errors"
	"testing"

	"github.com/edgeflow/edgeflow/internal/publish/metadata"
	"github.com/edgeflow/edgeflow/internal/publish/plan"
	"github.com/edgeflow/edgeflow/internal/publish/transform"
)

// The reuse index is a document in a bucket: an entry whose storedAt (or
// version) points outside the package's own tree is never reused, and
// Assemble and Materializations refuse such a key wherever it comes from.

func TestBuildPlanNeverReusesAnOutOfPrefixStoredAt(t *testing.T) {
	for _, c := range []struct{ version, storedAt string }{
		{"1.0.0", "pkg-extra/1.0.0/a.js"},
		{"1.0.0", "pkg/../pkg-extra/1.0.0/a.js"},
		{"../pkg-extra/1.0.0", ""}, // its own key, through the version
		{"1.0.0", "pkg/1.0.0\\..\\..\\pkg-extra\\a.js"},
	} {
		e := stored(c.version, "fp1", "a.js", "sri-a", false)
		e.Result.File.StoredAt = c.storedAt
		ix := &plan.ReuseIndex{Entries: map[string]plan.ReuseEntry{"sri-a": e}}
		p := plan.BuildPlan("pkg", "2.0.0", "fp1", []plan.SourceFile{{Path: "a.js", Size: 10, SRI: "sri-a"}}, ix, noTwins, noClass, wide)
		if got := entry(t, p, "a.js"); got.Reuse != nil || got.Batch != 0 {
			t.Errorf("%+v: entry %+v, want processed afresh", c, got)
		}
	}
	// A sound entry is still reused.
	ix := &plan.ReuseIndex{Entries: map[string]plan.ReuseEntry{"sri-a": stored("1.0.0", "fp1", "a.js", "sri-a", false)}}
	if got := entry(t, plan.BuildPlan("pkg", "2.0.0", "fp1", []plan.SourceFile{{Path: "a.js", Size: 10, SRI: "sri-a"}}, ix, noTwins, noClass, wide), "a.js"); got.Reuse == nil {
		t.Error("a sound reuse entry was not reused")
	}
}

// A file whose own key would be refused as a storedAt is processed on its
// own rather than pointed at by another path with the same content.
func TestBuildPlanSameContentOnlyThroughSoundKeys(t *testing.T) {
	files := []plan.SourceFile{{Path: "a\\b.js", Size: 10, SRI: "x"}, {Path: "c.js", Size: 10, SRI: "x"}}
	p := plan.BuildPlan("pkg", "1.0.0", "fp", files, nil, noTwins, noClass, wide)
	for _, path := range []string{"a\\b.js", "c.js"} {
		if e := entry(t, p, path); e.SameAs != "" || e.Batch < 0 {
			t.Errorf("%s: entry %+v, want processed", path, e)
		}
	}
}

func TestAssembleRefusesAnOutOfPrefixStoredAt(t *testing.T) {
	e := stored("1.0.0", "fp", "a.js", "A", false)
	e.Result.File.StoredAt = "pkg-extra/1.0.0/a.js"
	p := &plan.Plan{Name: "pkg", Version: "2.0.0", Entries: []plan.PlanEntry{
		{SourceFile: plan.SourceFile{Path: "a.js", SRI: "A", Size: 10}, Batch: -1, Reuse: &e}}}
	_, err := plan.Assemble(p, nil, transform.MinifiedPath)
	var refused *metadata.StoredAtError
	if !errors.As(err, &refused) {
		t.Fatalf("Assemble = %v, want the storedAt refused", err)
	}
}

func TestMaterializationsRefuseAnOutOfPrefixStoredAt(t *testing.T) {
	v := &metadata.Version{Name: "pkg", Version: "2.0.0", Files: []metadata.File{
		{Path: "a.js", StoredAt: "pkg/1.0.0/a.js"},
		{Path: "b.js", StoredAt: "pkg-extra/1.0.0/b.js"},
	}}
	copies, err := plan.Materializations(v)
	var refused *metadata.StoredAtError
	if !errors.As(err, &refused) || copies != nil {
		t.Fatalf("Materializations = %v, %v; want the storedAt refused and no copy", copies, err)
	}
}
