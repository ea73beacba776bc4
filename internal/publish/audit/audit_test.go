package audit

import (
	"bytes"
	"context"
	"io"
	"sort"
	"testing"
	"time"

	"github.com/edgeflow/edgeflow/internal/objectstore"
	"github.com/edgeflow/edgeflow/internal/publish/catalog"
	"github.com/edgeflow/edgeflow/internal/publish/metadata"
	"github.com/edgeflow/edgeflow/internal/publish/registry/registrytest"
	"github.com/edgeflow/edgeflow/internal/publish/transform"
)

var testBuckets = metadata.Buckets{Files: "files", Mirror: "mirror", Meta: "meta", MirrorMeta: "mirror-meta", Incoming: "incoming"}

const libJS = "/*! lib | MIT */\nexport function add(a, b) {\n  return a + b; // the sum\n}\nexport const answer = 42;\n"
const libCSS = ".lib { color: red; padding: 0px 0px 0px 0px; }\n"

func libPackage() catalog.Package {
	return catalog.Package{Name: "lib", Filename: "lib.min.js", Autoupdate: catalog.Autoupdate{Source: "npm", Target: "lib",
		FileMap: []catalog.FileMapEntry{{BasePath: "dist", Files: []string{"*.@(js|css)"}}}}}
}

func libTarball() []byte {
	return registrytest.NPMTarball(
		registrytest.Entry{Name: "package.json", Body: `{"name":"lib"}`},
		registrytest.Entry{Name: "dist/lib.js", Body: libJS},
		registrytest.Entry{Name: "dist/lib.css", Body: libCSS},
	)
}

// fixture publishes lib@1.0.0 to both stores the way Publish does, and keeps
// its original in the incoming bucket.
func fixture(t *testing.T) (*Auditor, *memStore, *memStore) {
	t.Helper()
	ctx := context.Background()
	primary, mirror := newMemStore(), newMemStore()
	a := &Auditor{Primary: primary, Mirror: mirror, Buckets: testBuckets, TempDir: t.TempDir(),
		Now: func() time.Time { return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) }}
	a.Original = func(ctx context.Context, name, version string) (io.ReadCloser, error) {
		data, found, err := read(ctx, primary, testBuckets.Incoming, metadata.TarballKey(name, version))
		if !found {
			return nil, err
		}
		return io.NopCloser(bytes.NewReader(data)), nil
	}
	pkg := libPackage()
	opts := transform.Options{MinifyJS: pkg.MinifyJS(), MinifyCSS: pkg.MinifyCSS()}
	doc := metadata.Version{Name: "lib", Version: "1.0.0"}
	for _, src := range []struct{ path, body string }{{"lib.css", libCSS}, {"lib.js", libJS}} {
		outs, _, err := transform.File(src.path, []byte(src.body), opts, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range outs {
			doc.Files = append(doc.Files, metadata.File{Path: o.Path, Size: int64(len(o.Data)), SRI: o.SRI, ContentType: o.ContentType,
				BrotliSize: int64(len(o.Brotli)), GzipSize: int64(len(o.Gzip)), MinifiedFrom: o.MinifiedFrom})
			key := metadata.FileKey("lib", "1.0.0", o.Path)
			for _, s := range a.sides() {
				mustPut(t, s.store, s.files, key, o.Data)
				mustPut(t, s.store, s.files, key+".br", o.Brotli)
				mustPut(t, s.store, s.files, key+".gz", o.Gzip)
			}
		}
	}
	sort.Slice(doc.Files, func(i, j int) bool { return doc.Files[i].Path < doc.Files[j].Path })
	var p metadata.Package
	p.AddVersion(pkg, "1.0.0", a.now())
	var ix metadata.Index
	ix.Put(&p, &doc, a.now())
	for _, s := range a.sides() {
		for key, v := range map[string]any{metadata.VersionKey("lib", "1.0.0"): doc, metadata.PackageKey("lib"): p,
			metadata.SearchShardKey(metadata.SearchShardOf("lib")): ix} {
			if err := objectstore.PutJSON(ctx, s.store, s.meta, key, v); err != nil {
				t.Fatal(err)
			}
		}
	}
	mustPut(t, primary, testBuckets.Incoming, metadata.TarballKey("lib", "1.0.0"), libTarball())
	return a, primary, mirror
}

func mustPut(t *testing.T, s objectstore.Store, bucket, key string, data []byte) {
	t.Helper()
	if err := objectstore.PutBytes(context.Background(), s, bucket, key, data, objectstore.PutOptions{}); err != nil {
		t.Fatal(err)
	}
}

func mustGet(t *testing.T, s objectstore.Store, bucket, key string) []byte {
	t.Helper()
	data, _, err := objectstore.ReadAll(context.Background(), s, bucket, key)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func run(t *testing.T, a *Auditor, o Options) *Report {
	t.Helper()
	rep, err := a.Package(context.Background(), "lib", o)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

type found struct{ version, file, store, kind string }

func problemsOf(rep *Report) []found {
	var out []found
	for _, p := range rep.Problems {
		out = append(out, found{p.Version, p.File, p.Store, p.Kind})
	}
	return out
}

func TestIntactPackageHasNoProblems(t *testing.T) {
	a, _, _ := fixture(t)
	rep := run(t, a, Options{Repair: true})
	if len(rep.Problems) != 0 || rep.Checked != 4 || rep.Versions != 1 {
		t.Fatalf("report %+v, want 4 files checked and no problem", rep)
	}
}

// Every way the issue breaks a package, found and repaired from the other
// store, and a second audit finds nothing. (A version document the primary
// lost is never repaired from the mirror: trust_test.go.)
func TestFindsAndRepairsEachBreakage(t *testing.T) {
	a, primary, mirror := fixture(t)
	ctx := context.Background()
	js := metadata.FileKey("lib", "1.0.0", "lib.js")
	css := metadata.FileKey("lib", "1.0.0", "lib.css")
	minJS := metadata.FileKey("lib", "1.0.0", "lib.min.js")
	right := map[string][]byte{js: mustGet(t, primary, "files", js), css: mustGet(t, primary, "files", css), minJS: mustGet(t, primary, "files", minJS)}
	mirror.Delete(ctx, "mirror", js)                                       // a file deleted on the mirror
	mustPut(t, primary, "files", css, right[css][:10])                     // truncated on the primary
	same := bytes.ToUpper(right[minJS])                                    // other bytes, same size
	mustPut(t, primary, "files", minJS, same)                              //
	primary.Delete(ctx, "files", css+".br")                                // a .br deleted
	mustPut(t, mirror, "mirror", js+".gz", []byte("not gzip"))             // a .gz that does not decode
	mirror.Delete(ctx, "mirror-meta", metadata.VersionKey("lib", "1.0.0")) // a version document deleted

	rep := run(t, a, Options{Repair: true})
	want := []found{
		{"1.0.0", "", "mirror", KindVersionDocument},
		{"1.0.0", "lib.css", "primary", KindSize},
		{"1.0.0", "lib.css.br", "primary", KindEncoding},
		{"1.0.0", "lib.js", "mirror", KindMissing},
		{"1.0.0", "lib.js.gz", "mirror", KindEncoding},
		{"1.0.0", "lib.min.js", "primary", KindSRI},
	}
	if got := problemsOf(rep); !equal(got, want) {
		t.Fatalf("problems\n got %v\nwant %v", got, want)
	}
	if rep.Repaired != len(want) || rep.Unrepaired != 0 {
		t.Fatalf("repaired %d, unrepaired %d: %+v", rep.Repaired, rep.Unrepaired, rep.Problems)
	}
	for key, data := range right {
		for _, s := range a.sides() {
			if !bytes.Equal(mustGet(t, s.store, s.files, key), data) {
				t.Errorf("%s %s: not the published bytes after the repair", s.name, key)
			}
		}
	}
	if again := run(t, a, Options{Repair: true}); len(again.Problems) != 0 {
		t.Fatalf("second audit found %v", problemsOf(again))
	}
}

// With both copies gone, the original release is re-processed, and only
// bytes with the recorded SRI are written; a minified twin comes back too.
func TestRepairsFromTheOriginal(t *testing.T) {
	a, primary, mirror := fixture(t)
	ctx := context.Background()
	minJS := metadata.FileKey("lib", "1.0.0", "lib.min.js")
	want := mustGet(t, primary, "files", minJS)
	primary.Delete(ctx, "files", minJS)
	mustPut(t, mirror, "mirror", minJS, []byte("garbage"))
	rep := run(t, a, Options{Repair: true})
	if rep.Repaired != 2 || rep.Unrepaired != 0 {
		t.Fatalf("repaired %d, unrepaired %d: %+v", rep.Repaired, rep.Unrepaired, rep.Problems)
	}
	for _, s := range a.sides() {
		if !bytes.Equal(mustGet(t, s.store, s.files, minJS), want) {
			t.Errorf("%s: not the published bytes", s.name)
		}
	}
}

// An original whose re-processing gives other bytes (a minifier changed)
// never overwrites anything: the file stays unrepaired, and only
// WithdrawBroken takes the version out of the package document.
func TestUnrepairableIsReportedAndWithdrawnOnlyWhenAsked(t *testing.T) {
	a, primary, mirror := fixture(t)
	ctx := context.Background()
	js := metadata.FileKey("lib", "1.0.0", "lib.js")
	primary.Delete(ctx, "files", js)
	mirror.Delete(ctx, "mirror", js)
	other := registrytest.NPMTarball(registrytest.Entry{Name: "dist/lib.js", Body: libJS + "// changed\n"})
	mustPut(t, primary, "incoming", metadata.TarballKey("lib", "1.0.0"), other)

	rep := run(t, a, Options{Repair: true})
	if rep.Unrepaired != 2 || rep.Repaired != 0 || len(rep.Withdrawn) != 0 {
		t.Fatalf("%+v", rep)
	}
	if rep.Problems[0].Reason != reasonReprocess {
		t.Errorf("reason %q", rep.Problems[0].Reason)
	}
	for _, s := range a.sides() {
		if _, found, _ := read(ctx, s.store, s.files, js); found {
			t.Errorf("%s: bytes with another SRI were written", s.name)
		}
	}
	rep = run(t, a, Options{Repair: true, WithdrawBroken: true})
	if len(rep.Withdrawn) != 1 || !rep.Problems[0].Withdrawn {
		t.Fatalf("not withdrawn: %+v", rep)
	}
	for _, s := range a.sides() {
		var p metadata.Package
		if _, err := objectstore.GetJSON(ctx, s.store, s.meta, metadata.PackageKey("lib"), &p); err != nil || len(p.Versions) != 0 || p.Latest != "" {
			t.Errorf("%s package document %+v, %v", s.name, p, err)
		}
	}
}

// With no copy anywhere and no original kept, the version is named for
// its original to be fetched from the registry.
func TestNeedsTheOriginalWhenNoneIsKept(t *testing.T) {
	a, primary, mirror := fixture(t)
	ctx := context.Background()
	js := metadata.FileKey("lib", "1.0.0", "lib.js")
	primary.Delete(ctx, "files", js)
	mirror.Delete(ctx, "mirror", js)
	primary.Delete(ctx, "incoming", metadata.TarballKey("lib", "1.0.0"))
	rep := run(t, a, Options{Repair: true})
	if rep.Unrepaired != 2 || len(rep.NeedOriginals) != 1 || rep.NeedOriginals[0] != "1.0.0" || rep.Problems[0].Reason != reasonNoCopy {
		t.Fatalf("%+v", rep)
	}
	mustPut(t, primary, "incoming", metadata.TarballKey("lib", "1.0.0"), libTarball())
	if rep := run(t, a, Options{Repair: true}); rep.Repaired != 2 || rep.Unrepaired != 0 || len(rep.NeedOriginals) != 0 {
		t.Fatalf("with the original back: %+v", rep)
	}
}

func TestRepairOffOnlyReports(t *testing.T) {
	a, primary, _ := fixture(t)
	css := metadata.FileKey("lib", "1.0.0", "lib.css")
	primary.Delete(context.Background(), "files", css)
	rep := run(t, a, Options{})
	if rep.Unrepaired != 1 || rep.Problems[0].Reason != "repair is off" {
		t.Fatalf("%+v", rep)
	}
	if _, found, _ := read(context.Background(), primary, "files", css); found {
		t.Fatal("repaired with repair off")
	}
}

func TestMetadataAndSearchIndexRepaired(t *testing.T) {
	a, primary, mirror := fixture(t)
	ctx := context.Background()
	mirror.Delete(ctx, "mirror-meta", metadata.PackageKey("lib"))
	shard := metadata.SearchShardKey(metadata.SearchShardOf("lib"))
	if err := objectstore.PutJSON(ctx, primary, "meta", shard, metadata.Index{}); err != nil {
		t.Fatal(err)
	}
	rep := run(t, a, Options{Repair: true})
	want := []found{{"", "", "mirror", KindPackageDocument}, {"", "", "primary", KindSearchIndex}}
	if got := problemsOf(rep); !equal(got, want) || rep.Repaired != 2 {
		t.Fatalf("got %v (%d repaired), want %v", got, rep.Repaired, want)
	}
	if again := run(t, a, Options{Repair: true}); len(again.Problems) != 0 {
		t.Fatalf("second audit found %v", problemsOf(again))
	}
}

func TestSampleIsStableAndProportional(t *testing.T) {
	in := 0
	for i := range 10000 {
		key := "lib/1.0.0/f" + string(rune('a'+i%26)) + string(rune('0'+i/26%10)) + string(rune(i))
		a, b := Sampled("seed", key, 5), Sampled("seed", key, 5)
		if a != b {
			t.Fatal("the same seed picked differently")
		}
		if a {
			in++
		}
	}
	if in < 350 || in > 650 {
		t.Errorf("5%% sample took %d of 10,000", in)
	}
	if !Sampled("x", "y", 0) || !Sampled("x", "y", 100) {
		t.Error("0 and 100 mean every file")
	}
}

func equal(a, b []found) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
