package plan_test

import (
	"fmt"
	"math/rand"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/edgeflow/edgeflow/internal/publish/metadata"
	"github.com/edgeflow/edgeflow/internal/publish/plan"
	"github.com/edgeflow/edgeflow/internal/publish/transform"
)

// twinForJS wants a twin for every .js and .css path (a stand-in for the
// activities' decider, which also looks at options and shipped twins).
func twinForJS(p string) bool { return strings.HasSuffix(p, ".js") || strings.HasSuffix(p, ".css") }

func noTwins(string) bool { return false }

// noClass puts every path in one class, for tests about other rules.
func noClass(string) string { return "" }

// An empty stylesheet and an empty script share content, not outputs (content
// type, minifier): neither may take the other's outputs, in one version or
// across versions.
func TestReuseRespectsPathClass(t *testing.T) {
	files := []plan.SourceFile{{Path: "a.css", SRI: "EMPTY"}, {Path: "b.js", SRI: "EMPTY"}}
	p := plan.BuildPlan("pkg", "1.0.0", "fp", files, nil, noTwins, transform.Class, wide)
	for _, e := range p.Entries {
		if e.SameAs != "" || e.Batch < 0 {
			t.Errorf("%s: SameAs %q batch %d; want processed on its own", e.Path, e.SameAs, e.Batch)
		}
	}
	ix := &plan.ReuseIndex{}
	ix.Add("1.0.0", "fp", []plan.FileResult{{File: metadata.File{Path: "a.css", SRI: "EMPTY", ContentType: "text/css; charset=utf-8"}}}, transform.Class)
	p = plan.BuildPlan("pkg", "2.0.0", "fp", []plan.SourceFile{{Path: "b.js", SRI: "EMPTY"}, {Path: "c.css", SRI: "EMPTY"}}, ix, noTwins, transform.Class, wide)
	for _, e := range p.Entries {
		if reused := e.Reuse != nil; reused != (e.Path == "c.css") {
			t.Errorf("%s reused = %v; only the stylesheet may reuse the stylesheet's outputs", e.Path, reused)
		}
	}
}

var wide = plan.BatchLimits{MaxBytes: 1 << 30, MaxFiles: 1000}

func entry(t *testing.T, p *plan.Plan, path string) plan.PlanEntry {
	t.Helper()
	for _, e := range p.Entries {
		if e.Path == path {
			return e
		}
	}
	t.Fatalf("plan has no entry for %s", path)
	return plan.PlanEntry{}
}

func stored(version, fingerprint, path, sri string, twinWanted bool) plan.ReuseEntry {
	r := plan.FileResult{File: metadata.File{Path: path, SRI: sri, Size: 10}, TwinWanted: twinWanted}
	return plan.ReuseEntry{Version: version, Fingerprint: fingerprint, Result: r}
}

func TestBuildPlanReuse(t *testing.T) {
	tests := []struct {
		name      string
		stored    plan.ReuseEntry
		twin      plan.TwinDecider
		wantReuse bool
	}{
		{"same content, fingerprint and twin decision", stored("1.0.0", "fp1", "a.js", "sri-a", true), twinForJS, true},
		{"same content and fingerprint, both without twin", stored("1.0.0", "fp1", "a.js", "sri-a", false), noTwins, true},
		{"fingerprint differs", stored("1.0.0", "fp0", "a.js", "sri-a", true), twinForJS, false},
		{"stored with twin, twin not wanted now", stored("1.0.0", "fp1", "a.js", "sri-a", true), noTwins, false},
		{"stored without twin, twin wanted now", stored("1.0.0", "fp1", "a.js", "sri-a", false), twinForJS, false},
		{"different content", stored("1.0.0", "fp1", "a.js", "sri-other", true), twinForJS, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ix := &plan.ReuseIndex{Entries: map[string]plan.ReuseEntry{tt.stored.Result.File.SRI: tt.stored}}
			files := []plan.SourceFile{{Path: "lib/a.js", Size: 10, SRI: "sri-a"}}
			p := plan.BuildPlan("pkg", "2.0.0", "fp1", files, ix, tt.twin, noClass, wide)
			e := entry(t, p, "lib/a.js")
			if got := e.Reuse != nil; got != tt.wantReuse {
				t.Fatalf("reuse = %v, want %v (entry %+v)", got, tt.wantReuse, e)
			}
			if e.TwinWanted != tt.twin("lib/a.js") {
				t.Errorf("TwinWanted = %v, want the decider's answer", e.TwinWanted)
			}
			process, reuse, same := p.Counts()
			if tt.wantReuse {
				if *e.Reuse != tt.stored || e.Batch != -1 || p.Batches != 0 || process != 0 || reuse != 1 || same != 0 {
					t.Errorf("reused entry %+v, batches %d, counts %d/%d/%d", e, p.Batches, process, reuse, same)
				}
			} else if e.Batch != 0 || p.Batches != 1 || process != 1 || reuse != 0 || same != 0 {
				t.Errorf("processed entry %+v, batches %d, counts %d/%d/%d", e, p.Batches, process, reuse, same)
			}
		})
	}
}

func TestBuildPlanNilReuseIndex(t *testing.T) {
	p := plan.BuildPlan("pkg", "1.0.0", "fp", []plan.SourceFile{{Path: "a.js", Size: 1, SRI: "x"}}, nil, twinForJS, noClass, wide)
	if e := entry(t, p, "a.js"); e.Reuse != nil || e.Batch != 0 {
		t.Fatalf("entry %+v, want processed in batch 0", e)
	}
}

func TestBuildPlanSameContent(t *testing.T) {
	files := []plan.SourceFile{
		{Path: "z/copy.js", Size: 5, SRI: "dup"},
		{Path: "b/copy.js", Size: 5, SRI: "dup"},
		{Path: "a.js", Size: 5, SRI: "dup"},
		{Path: "a.txt", Size: 5, SRI: "dup"}, // same bytes, other twin decision: processed on its own
		{Path: "b.txt", Size: 5, SRI: "dup"}, // same as a.txt
		{Path: "other.js", Size: 7, SRI: "other"},
	}
	p := plan.BuildPlan("pkg", "1.0.0", "fp", files, &plan.ReuseIndex{}, twinForJS, noClass, wide)
	want := map[string]string{"a.js": "", "b/copy.js": "a.js", "z/copy.js": "a.js", "a.txt": "", "b.txt": "a.txt", "other.js": ""}
	for path, sameAs := range want {
		e := entry(t, p, path)
		if e.SameAs != sameAs {
			t.Errorf("%s: SameAs = %q, want %q", path, e.SameAs, sameAs)
		}
		if processed := sameAs == ""; processed != (e.Batch >= 0) {
			t.Errorf("%s: batch %d, processed should be %v", path, e.Batch, processed)
		}
	}
	process, reuse, same := p.Counts()
	if process != 3 || reuse != 0 || same != 3 {
		t.Errorf("counts %d/%d/%d, want 3 processed, 0 reused, 3 same", process, reuse, same)
	}
	var paths []string
	for _, e := range p.Entries {
		paths = append(paths, e.Path)
	}
	if !sort.StringsAreSorted(paths) {
		t.Errorf("entries not sorted by path: %v", paths)
	}
}

// When the content was stored by an earlier version, every path of it is
// reused; none is processed and none points at another path.
func TestBuildPlanReusePrecedesSameContent(t *testing.T) {
	ix := &plan.ReuseIndex{Entries: map[string]plan.ReuseEntry{"dup": stored("1.0.0", "fp", "x.js", "dup", true)}}
	files := []plan.SourceFile{{Path: "a.js", Size: 1, SRI: "dup"}, {Path: "b.js", Size: 1, SRI: "dup"}}
	p := plan.BuildPlan("pkg", "2.0.0", "fp", files, ix, twinForJS, noClass, wide)
	for _, e := range p.Entries {
		if e.Reuse == nil || e.SameAs != "" || e.Batch != -1 {
			t.Errorf("%s: %+v, want reused", e.Path, e)
		}
	}
	if p.Batches != 0 {
		t.Errorf("batches = %d, want 0", p.Batches)
	}
}

func TestBuildPlanNothingToProcess(t *testing.T) {
	for _, files := range [][]plan.SourceFile{nil, {}} {
		p := plan.BuildPlan("pkg", "1.0.0", "fp", files, &plan.ReuseIndex{}, twinForJS, noClass, plan.DefaultBatchLimits)
		if p.Batches != 0 || len(p.Entries) != 0 {
			t.Errorf("plan of no files: %d batches, %d entries", p.Batches, len(p.Entries))
		}
		if got := p.BatchEntries(0); len(got) != 0 {
			t.Errorf("BatchEntries(0) = %v", got)
		}
	}
}

func TestBuildPlanMetadata(t *testing.T) {
	p := plan.BuildPlan("pkg", "1.2.3", "fp9", []plan.SourceFile{{Path: "a", Size: 1, SRI: "s"}}, nil, noTwins, noClass, wide)
	if p.Name != "pkg" || p.Version != "1.2.3" || p.Fingerprint != "fp9" {
		t.Errorf("plan header %q %q %q", p.Name, p.Version, p.Fingerprint)
	}
}

func ceilDiv(a, b int64) int64 { return (a + b - 1) / b }

// checkBatches asserts the batching invariants of a plan whose entries are all
// to be processed (no reuse, distinct content).
func checkBatches(t *testing.T, p *plan.Plan, limits plan.BatchLimits) {
	t.Helper()
	var total int64
	n := 0
	var largest int64
	for _, e := range p.Entries {
		if e.Reuse != nil || e.SameAs != "" {
			if e.Batch != -1 {
				t.Errorf("%s is not processed but has batch %d", e.Path, e.Batch)
			}
			continue
		}
		n++
		total += e.Size
		largest = max(largest, e.Size)
		if e.Batch < 0 || e.Batch >= p.Batches {
			t.Fatalf("%s: batch %d outside [0, %d)", e.Path, e.Batch, p.Batches)
		}
	}
	want := max(ceilDiv(total, limits.MaxBytes), ceilDiv(int64(n), int64(limits.MaxFiles)))
	want = min(want, int64(n))
	if int64(p.Batches) != want {
		t.Fatalf("%d batches for %d files of %d bytes with %+v, want %d", p.Batches, n, total, limits, want)
	}
	bytes := make([]int64, p.Batches)
	counts := make([]int, p.Batches)
	for b := 0; b < p.Batches; b++ {
		entries := p.BatchEntries(b)
		counts[b] = len(entries)
		for i, e := range entries {
			bytes[b] += e.Size
			if i > 0 && entries[i-1].Path >= e.Path {
				t.Errorf("BatchEntries(%d) not in path order", b)
			}
		}
		if counts[b] > limits.MaxFiles {
			t.Errorf("batch %d has %d files, limit %d", b, counts[b], limits.MaxFiles)
		}
	}
	sum := 0
	for _, c := range counts {
		sum += c
	}
	if sum != n {
		t.Errorf("batches hold %d files, %d to process", sum, n)
	}
	// Largest-first into the smallest batch keeps every batch within one
	// file of the others, as long as the count limit never forced a choice.
	countBound := false
	for _, c := range counts {
		if c == limits.MaxFiles {
			countBound = true
		}
	}
	if !countBound && p.Batches > 0 {
		lo, hi := bytes[0], bytes[0]
		for _, b := range bytes {
			lo, hi = min(lo, b), max(hi, b)
		}
		if hi-lo > largest {
			t.Errorf("unbalanced batches %v (largest file %d)", bytes, largest)
		}
	}
}

func distinctFiles(sizes ...int64) []plan.SourceFile {
	files := make([]plan.SourceFile, len(sizes))
	for i, s := range sizes {
		files[i] = plan.SourceFile{Path: fmt.Sprintf("f%03d.bin", i), Size: s, SRI: fmt.Sprintf("sri-%d", i)}
	}
	return files
}

func TestBuildPlanBatches(t *testing.T) {
	tests := []struct {
		name    string
		sizes   []int64
		limits  plan.BatchLimits
		batches int
		// bytes, when set, are the expected batch sizes in bytes (by batch index).
		bytes []int64
	}{
		{"one small file", []int64{10}, plan.BatchLimits{MaxBytes: 100, MaxFiles: 10}, 1, []int64{10}},
		{"by bytes", []int64{60, 50, 40, 30, 20}, plan.BatchLimits{MaxBytes: 100, MaxFiles: 10}, 2, []int64{110, 90}},
		{"greedy largest first", []int64{70, 50, 40, 10}, plan.BatchLimits{MaxBytes: 100, MaxFiles: 10}, 2, []int64{80, 90}},
		{"by count", []int64{1, 1, 1, 1, 1}, plan.BatchLimits{MaxBytes: 1000, MaxFiles: 2}, 3, []int64{2, 2, 1}},
		{"capped at file count", []int64{1000, 1000}, plan.BatchLimits{MaxBytes: 1, MaxFiles: 10}, 2, []int64{1000, 1000}},
		{"one file per batch", []int64{5, 4, 3}, plan.BatchLimits{MaxBytes: 1, MaxFiles: 1}, 3, []int64{5, 4, 3}},
		{"all empty files", []int64{0, 0, 0}, plan.BatchLimits{MaxBytes: 100, MaxFiles: 10}, 1, []int64{0}},
		{"empty files by count", []int64{0, 0, 0}, plan.BatchLimits{MaxBytes: 100, MaxFiles: 2}, 2, []int64{0, 0}},
		{"exact fit", []int64{50, 50}, plan.BatchLimits{MaxBytes: 100, MaxFiles: 10}, 1, []int64{100}},
		{"one byte over", []int64{50, 51}, plan.BatchLimits{MaxBytes: 100, MaxFiles: 10}, 2, []int64{51, 50}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := plan.BuildPlan("pkg", "1.0.0", "fp", distinctFiles(tt.sizes...), nil, noTwins, noClass, tt.limits)
			if p.Batches != tt.batches {
				t.Fatalf("batches = %d, want %d", p.Batches, tt.batches)
			}
			checkBatches(t, p, tt.limits)
			got := make([]int64, p.Batches)
			for _, e := range p.Entries {
				got[e.Batch] += e.Size
			}
			if !reflect.DeepEqual(got, tt.bytes) {
				t.Errorf("batch bytes = %v, want %v", got, tt.bytes)
			}
		})
	}
}

// Random plans keep every invariant, and the plan does not depend on the
// order the files were listed in.
func TestBuildPlanProperties(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for iter := 0; iter < 300; iter++ {
		n := rng.Intn(60)
		var files []plan.SourceFile
		ix := &plan.ReuseIndex{Entries: map[string]plan.ReuseEntry{}}
		for i := 0; i < n; i++ {
			sri := fmt.Sprintf("sri-%d", rng.Intn(n+1)) // some shared content
			ext := []string{".js", ".css", ".png", ".txt"}[rng.Intn(4)]
			files = append(files, plan.SourceFile{Path: fmt.Sprintf("d%d/f%03d%s", rng.Intn(3), i, ext), Size: rng.Int63n(5000), SRI: sri})
			if rng.Intn(5) == 0 {
				ix.Entries[sri] = stored("0.9.0", "fp", "old"+ext, sri, rng.Intn(2) == 0)
			}
		}
		limits := plan.BatchLimits{MaxBytes: 1 + rng.Int63n(20000), MaxFiles: 1 + rng.Intn(15)}
		p := plan.BuildPlan("pkg", "1.0.0", "fp", files, ix, twinForJS, noClass, limits)
		if len(p.Entries) != n {
			t.Fatalf("%d entries for %d files", len(p.Entries), n)
		}
		checkBatches(t, p, limits)
		// Each content+twin decision is processed at most once, and SameAs
		// points at the first path of it (in path order), which is processed.
		firstOf := map[string]string{}
		for _, e := range p.Entries {
			key := fmt.Sprint(e.SRI, e.TwinWanted)
			if e.Reuse != nil {
				if e.Reuse.Result.TwinWanted != e.TwinWanted || e.Reuse.Fingerprint != "fp" || e.Reuse.Result.File.SRI != e.SRI {
					t.Fatalf("%s reuses a mismatching entry %+v", e.Path, e.Reuse)
				}
				continue
			}
			if _, ok := ix.Entries[e.SRI]; ok && ix.Entries[e.SRI].Result.TwinWanted == e.TwinWanted {
				t.Fatalf("%s not reused though the index has its content", e.Path)
			}
			if first, ok := firstOf[key]; ok {
				if e.SameAs != first || e.Batch != -1 {
					t.Fatalf("%s: SameAs %q batch %d, want SameAs %q", e.Path, e.SameAs, e.Batch, first)
				}
			} else {
				firstOf[key] = e.Path
				if e.SameAs != "" || e.Batch < 0 {
					t.Fatalf("%s is the first of its content but %+v", e.Path, e)
				}
			}
		}
		shuffled := append([]plan.SourceFile(nil), files...)
		rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		again := plan.BuildPlan("pkg", "1.0.0", "fp", shuffled, ix, twinForJS, noClass, limits)
		if !reflect.DeepEqual(p, again) {
			t.Fatalf("plan depends on input order:\n%+v\n%+v", p, again)
		}
	}
}

func TestBuildPlanDoesNotModifyInput(t *testing.T) {
	files := distinctFiles(1, 3, 2)
	files[0].Path, files[2].Path = "z", "a"
	before := append([]plan.SourceFile(nil), files...)
	plan.BuildPlan("pkg", "1.0.0", "fp", files, nil, noTwins, noClass, wide)
	if !reflect.DeepEqual(files, before) {
		t.Errorf("input reordered: %v", files)
	}
}

func TestReuseIndexAdd(t *testing.T) {
	res := func(path, sri string, twin bool) plan.FileResult {
		return plan.FileResult{File: metadata.File{Path: path, SRI: sri}, TwinWanted: twin}
	}
	var ix plan.ReuseIndex
	if !ix.Add("1.0.0", "fp1", []plan.FileResult{res("a.js", "A", true), res("b.png", "B", false)}, noClass) {
		t.Fatal("adding to an empty index: changed = false")
	}
	if len(ix.Entries) != 2 || ix.Entries["A"].Version != "1.0.0" || ix.Entries["A"].Fingerprint != "fp1" || ix.Entries["A"].Result.File.Path != "a.js" {
		t.Fatalf("entries %+v", ix.Entries)
	}
	steps := []struct {
		name        string
		version, fp string
		results     []plan.FileResult
		changed     bool
		wantVersion map[string]string
	}{
		{"same content, fingerprint and twin decision keep the first version", "1.1.0", "fp1",
			[]plan.FileResult{res("moved/a.js", "A", true), res("b.png", "B", false)}, false,
			map[string]string{"A": "1.0.0", "B": "1.0.0"}},
		{"nothing to add", "1.1.1", "fp1", nil, false, map[string]string{"A": "1.0.0", "B": "1.0.0"}},
		{"new content is added", "1.2.0", "fp1", []plan.FileResult{res("c.css", "C", true)}, true,
			map[string]string{"A": "1.0.0", "B": "1.0.0", "C": "1.2.0"}},
		{"new fingerprint replaces", "2.0.0", "fp2", []plan.FileResult{res("a.js", "A", true)}, true,
			map[string]string{"A": "2.0.0", "B": "1.0.0", "C": "1.2.0"}},
		{"other twin decision replaces", "2.1.0", "fp2", []plan.FileResult{res("a.js", "A", false)}, true,
			map[string]string{"A": "2.1.0", "B": "1.0.0", "C": "1.2.0"}},
	}
	for _, s := range steps {
		if got := ix.Add(s.version, s.fp, s.results, noClass); got != s.changed {
			t.Errorf("%s: changed = %v, want %v", s.name, got, s.changed)
		}
		got := map[string]string{}
		for sri, e := range ix.Entries {
			got[sri] = e.Version
		}
		if !reflect.DeepEqual(got, s.wantVersion) {
			t.Errorf("%s: versions %v, want %v", s.name, got, s.wantVersion)
		}
	}
	if e := ix.Entries["A"]; e.Fingerprint != "fp2" || e.Result.TwinWanted || e.Result.File.Path != "a.js" {
		t.Errorf("replaced entry %+v", e)
	}
	if e := ix.Entries["B"]; e.Result.File.Path != "b.png" {
		t.Errorf("kept entry was overwritten: %+v", e)
	}
}

// Every batch the plan counts should hold at least one file: Download stages
// one object and PublishVersion starts one child per batch. Distinct empty
// files (here: the same empty content with two twin decisions) all land in
// the first empty batch, because an empty batch stays "smallest" after
// taking a zero-byte file, so a later batch stays empty.
func TestBuildPlanNoEmptyBatches(t *testing.T) {
	files := []plan.SourceFile{
		{Path: "big.bin", Size: 3 << 20, SRI: "big"},
		{Path: "empty.css", Size: 0, SRI: "empty"},
		{Path: "empty.txt", Size: 0, SRI: "empty"},
	}
	p := plan.BuildPlan("pkg", "1.0.0", "fp", files, nil, twinForJS, noClass, plan.BatchLimits{MaxBytes: 1 << 20, MaxFiles: 200})
	for b := 0; b < p.Batches; b++ {
		if len(p.BatchEntries(b)) == 0 {
			t.Errorf("batch %d of %d is empty", b, p.Batches)
		}
	}
}

// A file over OwnBatchBytes gets a batch of its own, after the others'
// batches, whatever the limits: the compress pool streams it alone.
func TestLargeFilesGetOwnBatches(t *testing.T) {
	files := distinctFiles(plan.OwnBatchBytes+1, 10, 200<<20, 20, plan.OwnBatchBytes, 30)
	limits := plan.BatchLimits{MaxBytes: 1 << 30, MaxFiles: 100}
	p := plan.BuildPlan("pkg", "1.0.0", "fp", files, nil, noTwins, noClass, limits)
	if p.Batches != 3 {
		t.Fatalf("%d batches, want 3 (the small files, then one per large file)", p.Batches)
	}
	for _, e := range p.Entries {
		alone := len(p.BatchEntries(e.Batch)) == 1
		if large := e.Size > plan.OwnBatchBytes; large != alone || large && e.Batch == 0 {
			t.Errorf("%s (%d bytes) in batch %d with %d files", e.Path, e.Size, e.Batch, len(p.BatchEntries(e.Batch)))
		}
	}
}
