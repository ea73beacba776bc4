package audit

import (
	"bytes"
	"context"
	"maps"
	"testing"

	"github.com/edgeflow/edgeflow/internal/objectstore"
	"github.com/edgeflow/edgeflow/internal/publish/metadata"
	"github.com/edgeflow/edgeflow/internal/publish/transform"
)

// Whoever can write to the mirror's buckets must not be able to make a
// repairing audit write anything to the primary: the primary's documents
// are the only reference for what a file must be.

func snapshot(m *memStore) map[string][]byte {
	m.mu.Lock()
	defer m.mu.Unlock()
	return maps.Clone(m.objects)
}

// unchanged fails the test when any object of the store differs from before.
func unchanged(t *testing.T, what string, before, after map[string][]byte) {
	t.Helper()
	for k, v := range after {
		if old, ok := before[k]; !ok {
			t.Errorf("%s: %s was written", what, k)
		} else if !bytes.Equal(old, v) {
			t.Errorf("%s: %s was overwritten", what, k)
		}
	}
	for k := range before {
		if _, ok := after[k]; !ok {
			t.Errorf("%s: %s was deleted", what, k)
		}
	}
}

func putDoc(t *testing.T, s objectstore.Store, bucket, key string, v any) {
	t.Helper()
	if err := objectstore.PutJSON(context.Background(), s, bucket, key, v); err != nil {
		t.Fatal(err)
	}
}

func versionDoc(t *testing.T, s objectstore.Store, bucket, name, version string) metadata.Version {
	t.Helper()
	var doc metadata.Version
	if _, err := objectstore.GetJSON(context.Background(), s, bucket, metadata.VersionKey(name, version), &doc); err != nil {
		t.Fatal(err)
	}
	return doc
}

func setFile(doc *metadata.Version, path string, fn func(*metadata.File)) {
	for i := range doc.Files {
		if doc.Files[i].Path == path {
			fn(&doc.Files[i])
		}
	}
}

// A package only the mirror holds, whose file's storedAt names another
// package's file, is reported and never imported: nothing is written to
// the primary.
func TestMirrorOnlyPackageNeverWritesThePrimary(t *testing.T) {
	a, primary, mirror := fixture(t)
	evil := []byte("alert('owned');\n")
	var pkg metadata.Package
	pkg.AddVersion(libPackage(), "1.0.0", a.now())
	pkg.Name = "evil"
	putDoc(t, mirror, "mirror-meta", metadata.PackageKey("evil"), pkg)
	putDoc(t, mirror, "mirror-meta", metadata.VersionKey("evil", "1.0.0"), metadata.Version{Name: "evil", Version: "1.0.0",
		Files: []metadata.File{{Path: "lib.js", Size: int64(len(evil)), SRI: transform.SRI(evil), StoredAt: "lib/1.0.0/lib.js"}}})
	mustPut(t, mirror, "mirror", "lib/1.0.0/lib.js", evil)
	before := snapshot(primary)

	rep, err := a.Package(context.Background(), "evil", Options{Repair: true, WithdrawBroken: true})
	if err != nil {
		t.Fatal(err)
	}
	unchanged(t, "primary", before, snapshot(primary))
	want := []found{{"", "", "primary", KindPackageDocument}}
	if got := problemsOf(rep); !equal(got, want) || rep.Unrepaired != 1 || rep.Repaired != 0 {
		t.Fatalf("problems %v (%d repaired), want %v unrepaired", got, rep.Repaired, want)
	}
	if rep.Problems[0].Reason != reasonNoPrimaryDocument {
		t.Errorf("reason %q", rep.Problems[0].Reason)
	}
}

// A truncated (or deleted) version document on the primary is reported,
// never replaced by the mirror's, whose SRIs are never the reference.
func TestBrokenPrimaryVersionDocumentIsNotReplacedByTheMirrors(t *testing.T) {
	for _, broken := range []string{"truncated", "deleted"} {
		t.Run(broken, func(t *testing.T) {
			a, primary, mirror := fixture(t)
			ctx := context.Background()
			evil := []byte("alert('owned'); /* same size? no matter */\n")
			doc := versionDoc(t, mirror, "mirror-meta", "lib", "1.0.0")
			setFile(&doc, "lib.js", func(f *metadata.File) {
				f.Size, f.SRI, f.BrotliSize, f.GzipSize = int64(len(evil)), transform.SRI(evil), 0, 0
			})
			putDoc(t, mirror, "mirror-meta", metadata.VersionKey("lib", "1.0.0"), doc)
			mustPut(t, mirror, "mirror", metadata.FileKey("lib", "1.0.0", "lib.js"), evil)
			key := metadata.VersionKey("lib", "1.0.0")
			if broken == "truncated" {
				raw := mustGet(t, primary, "meta", key)
				mustPut(t, primary, "meta", key, raw[:len(raw)/2])
			} else {
				primary.Delete(ctx, "meta", key)
			}
			before := snapshot(primary)

			rep := run(t, a, Options{Repair: true})
			unchanged(t, "primary", before, snapshot(primary))
			want := []found{{"1.0.0", "", "primary", KindVersionDocument}}
			if got := problemsOf(rep); !equal(got, want) || rep.Unrepaired != 1 {
				t.Fatalf("problems %v (%d unrepaired), want %v unrepaired", got, rep.Unrepaired, want)
			}
			if rep.Problems[0].Reason != reasonNoPrimaryDocument {
				t.Errorf("reason %q", rep.Problems[0].Reason)
			}
		})
	}
}

// A storedAt outside the package's own tree is refused: reported, never
// read or written, even when the mirror holds bytes of the recorded SRI.
func TestOutOfPrefixStoredAtIsRefused(t *testing.T) {
	for _, storedAt := range []string{
		"lib-extra/1.0.0/lib.js",
		"lib/../lib-extra/1.0.0/lib.js",
		"/lib-extra/1.0.0/lib.js",
		"lib/%2e%2e/lib-extra/1.0.0/lib.js",
	} {
		t.Run(storedAt, func(t *testing.T) {
			a, primary, mirror := fixture(t)
			right := mustGet(t, primary, "files", metadata.FileKey("lib", "1.0.0", "lib.js"))
			for _, s := range a.sides() {
				doc := versionDoc(t, s.store, s.meta, "lib", "1.0.0")
				setFile(&doc, "lib.js", func(f *metadata.File) { f.StoredAt = storedAt })
				putDoc(t, s.store, s.meta, metadata.VersionKey("lib", "1.0.0"), doc)
			}
			theirs := bytes.Repeat([]byte("x"), len(right))
			mustPut(t, primary, "files", storedAt, theirs) // another package's file
			mustPut(t, mirror, "mirror", storedAt, right)  // lib's bytes, planted on the mirror
			before := snapshot(primary)

			rep := run(t, a, Options{Repair: true})
			unchanged(t, "primary", before, snapshot(primary))
			want := []found{{"1.0.0", "lib.js", "primary", KindStoredAt}}
			if got := problemsOf(rep); !equal(got, want) || rep.Unrepaired != 1 {
				t.Fatalf("problems %v (%d unrepaired), want %v unrepaired", got, rep.Unrepaired, want)
			}
		})
	}
}

// reuseVersion publishes lib@1.1.0 the way a commit and Materialize do:
// every file reuses 1.0.0's bytes (storedAt) and is copied to its own keys
// on both stores.
func reuseVersion(t *testing.T, a *Auditor, materialized bool) {
	t.Helper()
	ctx := context.Background()
	doc := versionDoc(t, a.Primary, "meta", "lib", "1.0.0")
	doc.Version = "1.1.0"
	for i := range doc.Files {
		f := &doc.Files[i]
		f.StoredAt = metadata.FileKey("lib", "1.0.0", f.Path)
		if !materialized {
			continue
		}
		for _, s := range a.sides() {
			for _, suffix := range append([]string{""}, Twins(*f)...) {
				mustPut(t, s.store, s.files, metadata.FileKey("lib", "1.1.0", f.Path)+suffix, mustGet(t, s.store, s.files, f.StoredAt+suffix))
			}
		}
	}
	var pkg metadata.Package
	if _, err := objectstore.GetJSON(ctx, a.Primary, "meta", metadata.PackageKey("lib"), &pkg); err != nil {
		t.Fatal(err)
	}
	pkg.AddVersion(pkg.Package, "1.1.0", a.now())
	if !materialized {
		pkg.MarkIncomplete("1.1.0")
	}
	for _, s := range a.sides() {
		putDoc(t, s.store, s.meta, metadata.VersionKey("lib", "1.1.0"), doc)
		putDoc(t, s.store, s.meta, metadata.PackageKey("lib"), pkg)
	}
}

// What S3 clients read, a version's own keys and their twins, is audited
// and repaired on both stores, not only where the edge reads (storedAt).
func TestChecksAndRepairsEveryKeyOfTheTree(t *testing.T) {
	a, primary, mirror := fixture(t)
	ctx := context.Background()
	reuseVersion(t, a, true)
	js := metadata.FileKey("lib", "1.1.0", "lib.js")
	cssBr := metadata.FileKey("lib", "1.1.0", "lib.css") + metadata.BrotliSuffix
	right := map[string][]byte{js: mustGet(t, mirror, "mirror", js), cssBr: mustGet(t, primary, "files", cssBr)}
	mirror.Delete(ctx, "mirror", js)
	primary.Delete(ctx, "files", cssBr)

	rep := run(t, a, Options{Repair: true})
	want := []found{{"1.1.0", "lib.css.br", "primary", KindEncoding}, {"1.1.0", "lib.js", "mirror", KindMissing}}
	if got := problemsOf(rep); !equal(got, want) || rep.Repaired != 2 || rep.Unrepaired != 0 {
		t.Fatalf("problems %v (%d repaired, %d not), want %v repaired", got, rep.Repaired, rep.Unrepaired, want)
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

// A version whose Materialize has not run yet (still incomplete) is served
// from storedAt: its own keys are not reported missing.
func TestIncompleteVersionsOwnKeysAreNotYetExpected(t *testing.T) {
	a, _, _ := fixture(t)
	reuseVersion(t, a, false)
	if rep := run(t, a, Options{}); len(rep.Problems) != 0 || rep.Checked != 8 {
		t.Fatalf("%d checked, problems %v", rep.Checked, problemsOf(rep))
	}
}
