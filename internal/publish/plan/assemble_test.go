package plan_test

import (
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/edgeflow/edgeflow/internal/publish/metadata"
	"github.com/edgeflow/edgeflow/internal/publish/plan"
	"github.com/edgeflow/edgeflow/internal/publish/transform"
)

func file(path, sri string, size, br, gz int64) metadata.File {
	return metadata.File{Path: path, SRI: sri, Size: size, BrotliSize: br, GzipSize: gz, ContentType: "text/plain"}
}

func withTwin(r plan.FileResult, twin metadata.File) plan.FileResult {
	twin.MinifiedFrom = r.File.Path
	r.Twin = &twin
	r.TwinWanted = true
	return r
}

func TestAssembleReused(t *testing.T) {
	old := withTwin(plan.FileResult{File: file("dist/a.js", "A", 100, 40, 50)}, file("dist/a.min.js", "AM", 60, 30, 0))
	png := plan.FileResult{File: file("img/logo.png", "P", 70, 0, 0)}
	p := &plan.Plan{Name: "pkg", Version: "2.0.0", Entries: []plan.PlanEntry{
		{SourceFile: plan.SourceFile{Path: "a.js", SRI: "A", Size: 100}, TwinWanted: true, Batch: -1,
			Reuse: &plan.ReuseEntry{Version: "1.0.0", Fingerprint: "fp", Result: old}},
		{SourceFile: plan.SourceFile{Path: "logo.png", SRI: "P", Size: 70}, Batch: -1,
			Reuse: &plan.ReuseEntry{Version: "1.5.0", Fingerprint: "fp", Result: png}},
	}}
	asm, err := plan.Assemble(p, nil, transform.MinifiedPath)
	if err != nil {
		t.Fatal(err)
	}
	wantCopies := []plan.CopyOp{
		{"pkg/1.0.0/dist/a.js", "pkg/2.0.0/a.js"},
		{"pkg/1.0.0/dist/a.js.br", "pkg/2.0.0/a.js.br"},
		{"pkg/1.0.0/dist/a.js.gz", "pkg/2.0.0/a.js.gz"},
		{"pkg/1.0.0/dist/a.min.js", "pkg/2.0.0/a.min.js"},
		{"pkg/1.0.0/dist/a.min.js.br", "pkg/2.0.0/a.min.js.br"}, // no .gz: GzipSize is 0
		{"pkg/1.5.0/img/logo.png", "pkg/2.0.0/logo.png"},        // neither .br nor .gz
	}
	if !reflect.DeepEqual(asm.Copies, wantCopies) {
		t.Errorf("copies:\n got %v\nwant %v", asm.Copies, wantCopies)
	}
	if len(asm.Results) != 2 {
		t.Fatalf("results %+v", asm.Results)
	}
	a := asm.Results[0]
	if a.File.Path != "a.js" || a.File.SRI != "A" || a.File.Size != 100 || a.File.BrotliSize != 40 {
		t.Errorf("reused file %+v", a.File)
	}
	if a.Twin == nil || a.Twin.Path != "a.min.js" || a.Twin.MinifiedFrom != "a.js" || a.Twin.SRI != "AM" || a.Twin.Size != 60 {
		t.Errorf("reused twin %+v", a.Twin)
	}
	if !a.TwinWanted {
		t.Error("TwinWanted lost")
	}
	// Reused files point at the bytes the earlier version stored.
	if a.File.StoredAt != "pkg/1.0.0/dist/a.js" || a.Twin.StoredAt != "pkg/1.0.0/dist/a.min.js" {
		t.Errorf("reused file stored at %q, twin at %q", a.File.StoredAt, a.Twin.StoredAt)
	}
	if got := asm.Results[1].File.StoredAt; got != "pkg/1.5.0/img/logo.png" {
		t.Errorf("reused png stored at %q", got)
	}
	// The index entry it came from is untouched.
	if old.File.Path != "dist/a.js" || old.Twin.Path != "dist/a.min.js" || old.Twin.MinifiedFrom != "dist/a.js" {
		t.Errorf("stored result modified: %+v %+v", old.File, old.Twin)
	}
	if p.Entries[0].Reuse.Result.Twin.Path != "dist/a.min.js" {
		t.Errorf("plan's reuse entry modified: %+v", p.Entries[0].Reuse.Result.Twin)
	}
	if asm.Results[1].File.Path != "logo.png" || asm.Results[1].Twin != nil {
		t.Errorf("reused png %+v", asm.Results[1])
	}
}

func TestAssembleSameAs(t *testing.T) {
	first := withTwin(plan.FileResult{File: file("a/x.css", "X", 10, 5, 6)}, file("a/x.min.css", "XM", 8, 4, 5))
	p := &plan.Plan{Name: "pkg", Version: "1.0.0", Entries: []plan.PlanEntry{
		{SourceFile: plan.SourceFile{Path: "a/x.css", SRI: "X", Size: 10}, TwinWanted: true, Batch: 0},
		{SourceFile: plan.SourceFile{Path: "b/x.css", SRI: "X", Size: 10}, TwinWanted: true, Batch: -1, SameAs: "a/x.css"},
	}}
	asm, err := plan.Assemble(p, map[string]plan.FileResult{"a/x.css": first}, transform.MinifiedPath)
	if err != nil {
		t.Fatal(err)
	}
	wantCopies := []plan.CopyOp{
		{"pkg/1.0.0/a/x.css", "pkg/1.0.0/b/x.css"},
		{"pkg/1.0.0/a/x.css.br", "pkg/1.0.0/b/x.css.br"},
		{"pkg/1.0.0/a/x.css.gz", "pkg/1.0.0/b/x.css.gz"},
		{"pkg/1.0.0/a/x.min.css", "pkg/1.0.0/b/x.min.css"},
		{"pkg/1.0.0/a/x.min.css.br", "pkg/1.0.0/b/x.min.css.br"},
		{"pkg/1.0.0/a/x.min.css.gz", "pkg/1.0.0/b/x.min.css.gz"},
	}
	if !reflect.DeepEqual(asm.Copies, wantCopies) {
		t.Errorf("copies:\n got %v\nwant %v", asm.Copies, wantCopies)
	}
	if !reflect.DeepEqual(asm.Results[0], first) {
		t.Errorf("processed result changed: %+v", asm.Results[0])
	}
	b := asm.Results[1]
	if b.File.Path != "b/x.css" || b.Twin == nil || b.Twin.Path != "b/x.min.css" || b.Twin.MinifiedFrom != "b/x.css" {
		t.Errorf("same-content result %+v twin %+v", b.File, b.Twin)
	}
	if b.File.StoredAt != "pkg/1.0.0/a/x.css" || b.Twin.StoredAt != "pkg/1.0.0/a/x.min.css" {
		t.Errorf("same-content file stored at %q, twin at %q", b.File.StoredAt, b.Twin.StoredAt)
	}
	if asm.Results[0].File.StoredAt != "" || asm.Results[0].Twin.StoredAt != "" {
		t.Errorf("processed file points elsewhere: %+v", asm.Results[0])
	}
}

func TestAssembleErrors(t *testing.T) {
	twinned := withTwin(plan.FileResult{File: file("a.js", "A", 1, 0, 0)}, file("a.min.js", "AM", 1, 0, 0))
	tests := []struct {
		name      string
		entry     plan.PlanEntry
		processed map[string]plan.FileResult
		want      []string
	}{
		{"processed file without result",
			plan.PlanEntry{SourceFile: plan.SourceFile{Path: "lib/missing.js"}, Batch: 3}, nil,
			[]string{"lib/missing.js", "batch 3"}},
		{"same content without result",
			plan.PlanEntry{SourceFile: plan.SourceFile{Path: "copy.js"}, Batch: -1, SameAs: "orig.js"},
			map[string]plan.FileResult{"other.js": {}},
			[]string{"copy.js", "orig.js"}},
		{"reused twin where the new path takes none",
			plan.PlanEntry{SourceFile: plan.SourceFile{Path: "a.min.js"}, Batch: -1, Reuse: &plan.ReuseEntry{Version: "1", Result: twinned}}, nil,
			[]string{"a.min.js", "twin"}},
		{"same-content twin where the path takes none",
			plan.PlanEntry{SourceFile: plan.SourceFile{Path: "b.txt"}, Batch: -1, SameAs: "a.js"},
			map[string]plan.FileResult{"a.js": twinned},
			[]string{"b.txt", "twin"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &plan.Plan{Name: "pkg", Version: "2", Entries: []plan.PlanEntry{tt.entry}}
			asm, err := plan.Assemble(p, tt.processed, transform.MinifiedPath)
			if err == nil {
				t.Fatalf("no error; assembly %+v", asm)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

// A plan built by BuildPlan assembles with the results its batches would
// report, and the version document lists every output once, in path order.
func TestBuildPlanAssembleVersionDocument(t *testing.T) {
	ix := &plan.ReuseIndex{}
	ix.Add("1.0.0", "fp", []plan.FileResult{
		withTwin(plan.FileResult{File: file("old.js", "LIB", 100, 30, 40)}, file("old.min.js", "LIBM", 50, 20, 25)),
	}, noClass)
	files := []plan.SourceFile{
		{Path: "lib.js", Size: 100, SRI: "LIB"},     // reused from 1.0.0
		{Path: "app.js", Size: 80, SRI: "APP"},      // processed
		{Path: "copy/app.js", Size: 80, SRI: "APP"}, // same as app.js
		{Path: "logo.png", Size: 30, SRI: "PNG"},    // processed, no twin
	}
	decider := func(p string) bool { _, ok := transform.MinifiedPath(p); return ok }
	p := plan.BuildPlan("pkg", "2.0.0", "fp", files, ix, decider, noClass, plan.DefaultBatchLimits)
	processed := map[string]plan.FileResult{
		"app.js":   withTwin(plan.FileResult{File: file("app.js", "APP", 80, 20, 30), Warning: ""}, file("app.min.js", "APPM", 40, 10, 15)),
		"logo.png": {File: file("logo.png", "PNG", 30, 0, 0), Warning: "not really a png"},
	}
	asm, err := plan.Assemble(p, processed, transform.MinifiedPath)
	if err != nil {
		t.Fatal(err)
	}
	v, err := plan.VersionDocument("pkg", "2.0.0", "fp", asm)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, f := range v.Files {
		paths = append(paths, f.Path)
	}
	want := []string{"app.js", "app.min.js", "copy/app.js", "copy/app.min.js", "lib.js", "lib.min.js", "logo.png"}
	if !reflect.DeepEqual(paths, want) {
		t.Errorf("files %v, want %v", paths, want)
	}
	if f, ok := v.Lookup("copy/app.min.js"); !ok || f.MinifiedFrom != "copy/app.js" || f.SRI != "APPM" {
		t.Errorf("copy/app.min.js = %+v", f)
	}
	if f, ok := v.Lookup("lib.min.js"); !ok || f.MinifiedFrom != "lib.js" {
		t.Errorf("lib.min.js = %+v", f)
	}
	wantStats := metadata.Stats{SourceFiles: 4, Files: 7, Bytes: 80 + 40 + 80 + 40 + 100 + 50 + 30, MinifyFailed: 1}
	if v.Stats != wantStats {
		t.Errorf("stats %+v, want %+v", v.Stats, wantStats)
	}
	if v.Name != "pkg" || v.Version != "2.0.0" || v.Processing != "fp" {
		t.Errorf("document header %q %q %q", v.Name, v.Version, v.Processing)
	}
	// lib.js and its twin, copy/app.js and its twin.
	dsts := map[string]bool{}
	for _, c := range asm.Copies {
		dsts[c.Dst] = true
	}
	for _, d := range []string{"pkg/2.0.0/lib.js", "pkg/2.0.0/lib.min.js.gz", "pkg/2.0.0/copy/app.js.br", "pkg/2.0.0/copy/app.min.js"} {
		if !dsts[d] {
			t.Errorf("no copy to %s in %v", d, asm.Copies)
		}
	}
	if len(asm.Copies) != 12 {
		t.Errorf("%d copies, want 12: %v", len(asm.Copies), asm.Copies)
	}
}

func TestVersionDocument(t *testing.T) {
	tests := []struct {
		name    string
		results []plan.FileResult
		paths   []string
		stats   metadata.Stats
		err     string
	}{
		{"empty", nil, nil, metadata.Stats{}, ""},
		{"sorted with twins",
			[]plan.FileResult{
				{File: file("z.css", "Z", 5, 0, 0), Warning: "css minify failed"},
				withTwin(plan.FileResult{File: file("b.js", "B", 10, 0, 0)}, file("b.min.js", "BM", 3, 0, 0)),
				{File: file("a/b.txt", "T", 1, 0, 0)},
			},
			[]string{"a/b.txt", "b.js", "b.min.js", "z.css"},
			metadata.Stats{SourceFiles: 3, Files: 4, Bytes: 19, MinifyFailed: 1}, ""},
		{"two sources on one path",
			[]plan.FileResult{{File: file("a.js", "1", 1, 0, 0)}, {File: file("a.js", "2", 1, 0, 0)}},
			nil, metadata.Stats{}, "a.js"},
		{"a twin on a shipped path",
			[]plan.FileResult{
				withTwin(plan.FileResult{File: file("a.js", "A", 1, 0, 0)}, file("a.min.js", "AM", 1, 0, 0)),
				{File: file("a.min.js", "shipped", 1, 0, 0)},
			},
			nil, metadata.Stats{}, "a.min.js"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := plan.VersionDocument("pkg", "1.0.0", "fp", &plan.Assembly{Results: tt.results})
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want one naming %s", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var paths []string
			for _, f := range v.Files {
				paths = append(paths, f.Path)
			}
			if !reflect.DeepEqual(paths, tt.paths) {
				t.Errorf("paths %v, want %v", paths, tt.paths)
			}
			if !sort.SliceIsSorted(v.Files, func(i, j int) bool { return v.Files[i].Path < v.Files[j].Path }) {
				t.Error("files not sorted")
			}
			if v.Stats != tt.stats {
				t.Errorf("stats %+v, want %+v", v.Stats, tt.stats)
			}
		})
	}
}

// A stored result that itself points at older bytes keeps pointing there: a
// copy never reads from a key that may not exist yet.
func TestAssembleReusedPointsAtOriginalBytes(t *testing.T) {
	r := plan.FileResult{File: file("a.css", "A", 10, 3, 0)}
	r.File.StoredAt = "pkg/0.9.0/old/a.css"
	p := &plan.Plan{Name: "pkg", Version: "2.0.0", Entries: []plan.PlanEntry{
		{SourceFile: plan.SourceFile{Path: "b.css", SRI: "A"}, Batch: -1, Reuse: &plan.ReuseEntry{Version: "1.0.0", Result: r}},
	}}
	asm, err := plan.Assemble(p, nil, noTwinPath)
	if err != nil {
		t.Fatal(err)
	}
	want := []plan.CopyOp{{"pkg/0.9.0/old/a.css", "pkg/2.0.0/b.css"}, {"pkg/0.9.0/old/a.css.br", "pkg/2.0.0/b.css.br"}}
	if !reflect.DeepEqual(asm.Copies, want) {
		t.Errorf("copies %v, want %v", asm.Copies, want)
	}
	if asm.Results[0].File.StoredAt != "pkg/0.9.0/old/a.css" {
		t.Errorf("stored at %q", asm.Results[0].File.StoredAt)
	}
}

func noTwinPath(string) (string, bool) { return "", false }

func TestMaterializations(t *testing.T) {
	v := &metadata.Version{Name: "pkg", Version: "2.0.0", Files: []metadata.File{
		{Path: "a.js", StoredAt: "pkg/1.0.0/a.js", BrotliSize: 1, GzipSize: 1},
		{Path: "b.js", BrotliSize: 1, GzipSize: 1}, // its own bytes
		{Path: "img/c.png", StoredAt: "pkg/1.0.0/c.png"},
		{Path: "d.css", StoredAt: "pkg/2.0.0/x.css", GzipSize: 5},
	}}
	want := []plan.CopyOp{
		{"pkg/1.0.0/a.js", "pkg/2.0.0/a.js"}, {"pkg/1.0.0/a.js.br", "pkg/2.0.0/a.js.br"}, {"pkg/1.0.0/a.js.gz", "pkg/2.0.0/a.js.gz"},
		{"pkg/1.0.0/c.png", "pkg/2.0.0/img/c.png"},
		{"pkg/2.0.0/x.css", "pkg/2.0.0/d.css"}, {"pkg/2.0.0/x.css.gz", "pkg/2.0.0/d.css.gz"},
	}
	if got, err := plan.Materializations(v); err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("copies\n got %v, %v\nwant %v", got, err, want)
	}
	if got, err := plan.Materializations(&metadata.Version{Name: "pkg", Version: "1"}); err != nil || len(got) != 0 {
		t.Errorf("copies of an empty version: %v, %v", got, err)
	}
}

// The copies Commit counts (the assembly's) are exactly the copies
// Materialize makes later from the committed document, whatever the plan.
func TestMaterializationsMatchAssembly(t *testing.T) {
	ix := &plan.ReuseIndex{}
	ix.Add("1.0.0", "fp", []plan.FileResult{
		withTwin(plan.FileResult{File: file("old.js", "LIB", 100, 30, 40)}, file("old.min.js", "LIBM", 50, 20, 0)),
		{File: file("logo.png", "PNG", 30, 0, 0)},
		{File: file("s.css", "CSS", 30, 10, 10)},
	}, noClass)
	files := []plan.SourceFile{
		{Path: "lib.js", SRI: "LIB"}, {Path: "vendor/lib.js", SRI: "LIB"}, {Path: "logo.png", SRI: "PNG"},
		{Path: "app.js", SRI: "APP"}, {Path: "copy/app.js", SRI: "APP"}, {Path: "s.css", SRI: "CSS"},
	}
	decider := func(p string) bool { return strings.HasSuffix(p, ".js") }
	p := plan.BuildPlan("pkg", "2.0.0", "fp", files, ix, decider, noClass, plan.DefaultBatchLimits)
	processed := map[string]plan.FileResult{
		"app.js": withTwin(plan.FileResult{File: file("app.js", "APP", 80, 20, 30)}, file("app.min.js", "APPM", 40, 10, 15)),
	}
	asm, err := plan.Assemble(p, processed, transform.MinifiedPath)
	if err != nil {
		t.Fatal(err)
	}
	v, err := plan.VersionDocument("pkg", "2.0.0", "fp", asm)
	if err != nil {
		t.Fatal(err)
	}
	got, err := plan.Materializations(v)
	if err != nil {
		t.Fatal(err)
	}
	sortCopies := func(c []plan.CopyOp) []plan.CopyOp {
		c = append([]plan.CopyOp(nil), c...)
		sort.Slice(c, func(i, j int) bool { return c[i].Dst < c[j].Dst })
		return c
	}
	if !reflect.DeepEqual(sortCopies(got), sortCopies(asm.Copies)) {
		t.Errorf("materializations\n%v\nassembly copies\n%v", sortCopies(got), sortCopies(asm.Copies))
	}
	if len(got) == 0 {
		t.Fatal("no copies")
	}
	// Every file of the version is readable: from its own key or StoredAt.
	for _, f := range v.Files {
		if f.StoredAt == "" && f.Path != "app.js" && f.Path != "app.min.js" {
			t.Errorf("%s has neither its own processed bytes nor StoredAt", f.Path)
		}
	}
}

// TestAssembleNeverLetsARepresentationReplaceAShippedFile: a release ships
// x.js and x.js.gz. x.js's generated .gz would land on x.js.gz's key: it is
// dropped (size 0, no copy), x.js.gz keeps its own bytes, and x.js keeps its
// brotli representation.
func TestAssembleNeverLetsARepresentationReplaceAShippedFile(t *testing.T) {
	twin := func(p string) (string, bool) { return "", false }
	p := &plan.Plan{Name: "pkg", Version: "2.0.0", Entries: []plan.PlanEntry{
		{SourceFile: plan.SourceFile{Path: "x.js"}, Batch: -1, Reuse: &plan.ReuseEntry{Version: "1.0.0",
			Result: plan.FileResult{File: file("x.js", "X", 100, 40, 50)}}},
		{SourceFile: plan.SourceFile{Path: "x.js.gz"}, Batch: 0},
	}}
	processed := map[string]plan.FileResult{"x.js.gz": {File: file("x.js.gz", "G", 30, 0, 0)}}
	a, err := plan.Assemble(p, processed, twin)
	if err != nil {
		t.Fatal(err)
	}
	x := a.Results[0].File
	if x.GzipSize != 0 || x.BrotliSize != 40 {
		t.Errorf("x.js: gzip %d brotli %d; want its .gz dropped, its .br kept", x.GzipSize, x.BrotliSize)
	}
	for _, c := range a.Copies {
		if c.Dst == "pkg/2.0.0/x.js.gz" {
			t.Errorf("copy %v would overwrite the shipped x.js.gz", c)
		}
	}
	if !slices.Contains(a.Copies, plan.CopyOp{"pkg/1.0.0/x.js.br", "pkg/2.0.0/x.js.br"}) {
		t.Errorf("copies %v lack x.js.br", a.Copies)
	}
	occupied := plan.Occupied(p, twin)
	if got := plan.Blocked("x.js", false, occupied, twin); !slices.Equal(got, []string{"x.js.gz"}) {
		t.Errorf("Blocked(x.js) = %v", got)
	}
}
