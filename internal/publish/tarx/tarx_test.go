package tarx

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// tarEntry is one entry of a test archive; regular files get their size
// from body.
type tarEntry struct {
	hdr  tar.Header
	body []byte
}

func file(name, body string) tarEntry {
	return tarEntry{hdr: tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644}, body: []byte(body)}
}

func dir(name string) tarEntry {
	return tarEntry{hdr: tar.Header{Name: name, Typeflag: tar.TypeDir, Mode: 0o755}}
}

func symlink(name, target string) tarEntry {
	return tarEntry{hdr: tar.Header{Name: name, Typeflag: tar.TypeSymlink, Linkname: target, Mode: 0o777}}
}

func hardlink(name, target string) tarEntry {
	return tarEntry{hdr: tar.Header{Name: name, Typeflag: tar.TypeLink, Linkname: target, Mode: 0o644}}
}

func special(name string, typ byte) tarEntry {
	return tarEntry{hdr: tar.Header{Name: name, Typeflag: typ, Mode: 0o644, Devmajor: 1, Devminor: 3}}
}

// tarball builds an archive in memory, gzip-compressed when gzipped.
func tarball(t testing.TB, gzipped bool, entries ...tarEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	var gz *gzip.Writer
	tw := tar.NewWriter(&buf)
	if gzipped {
		gz = gzip.NewWriter(&buf)
		tw = tar.NewWriter(gz)
	}
	for _, e := range entries {
		hdr := e.hdr
		if hdr.Typeflag == tar.TypeReg {
			hdr.Size = int64(len(e.body))
		}
		if err := tw.WriteHeader(&hdr); err != nil {
			t.Fatalf("write header %q: %v", hdr.Name, err)
		}
		if _, err := tw.Write(e.body); err != nil {
			t.Fatalf("write %q: %v", hdr.Name, err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if gz != nil {
		if err := gz.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

// newDest returns a destination nested two levels below base, so that an
// entry climbing out with "../.." would still land inside base, where
// assertContained can see it.
func newDest(t testing.TB) (base, dest string) {
	base = t.TempDir()
	return base, filepath.Join(base, "a", "b", "dest")
}

// assertContained fails if anything under base lies outside dest, or if
// dest holds a symlink: Extract must create neither.
func assertContained(t testing.TB, base, dest string) {
	t.Helper()
	allowed := map[string]bool{base: true, filepath.Join(base, "a"): true, filepath.Join(base, "a", "b"): true}
	err := filepath.WalkDir(base, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if allowed[p] {
			return nil
		}
		if p != dest && !strings.HasPrefix(p, dest+string(filepath.Separator)) {
			t.Errorf("extraction wrote %s, outside %s", p, dest)
		}
		if d.Type()&fs.ModeSymlink != 0 {
			t.Errorf("extraction left a symlink at %s", p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestExtractNPMTarball(t *testing.T) {
	archive := tarball(t, true,
		file("package/package.json", `{"name":"x","version":"1.0.0"}`),
		dir("package/dist/"),
		file("package/dist/x.js", "console.log(1)"),
		file("package/dist/x.min.js", "console.log(1)"),
		dir("package/dist/css/"),
		file("package/dist/css/x.css", "a{}"),
		tarEntry{hdr: tar.Header{Name: "package/bin/run", Typeflag: tar.TypeReg, Mode: 0o755}, body: []byte("#!/bin/sh\n")},
		dir("package/empty/"),
	)
	base, dest := newDest(t)
	res, err := Extract(bytes.NewReader(archive), dest, DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	want := []Entry{
		{"bin/run", 10},
		{"dist/css/x.css", 3},
		{"dist/x.js", 14},
		{"dist/x.min.js", 14},
		{"package.json", 30},
	}
	if !reflect.DeepEqual(res.Files, want) {
		t.Errorf("files:\n got  %v\n want %v", res.Files, want)
	}
	if len(res.Skipped) != 0 {
		t.Errorf("skipped %v, want nothing", res.Skipped)
	}
	if got := readFile(t, filepath.Join(dest, "dist", "css", "x.css")); got != "a{}" {
		t.Errorf("x.css holds %q", got)
	}
	info, err := os.Stat(filepath.Join(dest, "bin", "run"))
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm()&0o111 != 0 {
		t.Errorf("bin/run is %v; archive modes must not make files executable", info.Mode())
	}
	assertContained(t, base, dest)
}

func TestExtractGitHubTarball(t *testing.T) {
	entries := []tarEntry{
		{hdr: tar.Header{Name: "pax_global_header", Typeflag: tar.TypeXGlobalHeader, PAXRecords: map[string]string{"comment": "0123456789abcdef0123456789abcdef01234567"}}},
		dir("jquery-jquery-0123456/"),
		file("jquery-jquery-0123456/README.md", "# jQuery"),
		dir("jquery-jquery-0123456/dist/"),
		file("jquery-jquery-0123456/dist/jquery.js", "(function(){})()"),
	}
	for _, gzipped := range []bool{true, false} {
		base, dest := newDest(t)
		res, err := Extract(bytes.NewReader(tarball(t, gzipped, entries...)), dest, DefaultLimits)
		if err != nil {
			t.Fatalf("gzipped=%v: %v", gzipped, err)
		}
		want := []Entry{{"README.md", 8}, {"dist/jquery.js", 16}}
		if !reflect.DeepEqual(res.Files, want) || len(res.Skipped) != 0 {
			t.Errorf("gzipped=%v: got files %v skipped %v, want %v", gzipped, res.Files, res.Skipped, want)
		}
		assertContained(t, base, dest)
	}
}

func TestExtractRejectsHostileEntries(t *testing.T) {
	tests := []struct {
		name   string
		entry  tarEntry
		reason string
	}{
		{"traversal", file("../../etc/passwd", "root::0:0"), "path escapes the package"},
		{"traversal after the top folder", file("package/../../../x", "x"), "path escapes the package"},
		{"absolute path", file("/etc/passwd", "root::0:0"), "absolute path"},
		{"symlink escaping", symlink("package/x", "../../etc"), `symlink target "../../etc" leaves the package`},
		{"symlink escaping from a subdirectory", symlink("package/a/b", "../../../c"), "leaves the package"},
		{"absolute symlink", symlink("package/passwd", "/etc/passwd"), "absolute"},
		{"hardlink escaping", hardlink("package/x", "package/../../etc/passwd"), "hardlink target"},
		{"hardlink to the archive root", hardlink("package/x", "passwd"), "leaves the package"},
		{"absolute hardlink", hardlink("package/x", "/etc/passwd"), "absolute"},
		{"character device", special("package/null", tar.TypeChar), "device or FIFO"},
		{"block device", special("package/sda", tar.TypeBlock), "device or FIFO"},
		{"fifo", special("package/pipe", tar.TypeFifo), "device or FIFO"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			archive := tarball(t, true,
				file("package/index.js", "ok"),
				tt.entry,
				file("package/after.js", "never reached"),
			)
			base, dest := newDest(t)
			_, err := Extract(bytes.NewReader(archive), dest, DefaultLimits)
			var unsafe *UnsafeError
			if !errors.As(err, &unsafe) {
				t.Fatalf("got %v, want an *UnsafeError", err)
			}
			if unsafe.Entry != tt.entry.hdr.Name || !strings.Contains(unsafe.Reason, tt.reason) {
				t.Errorf("got entry %q reason %q, want entry %q reason containing %q", unsafe.Entry, unsafe.Reason, tt.entry.hdr.Name, tt.reason)
			}
			assertContained(t, base, dest)
			if _, err := os.Stat(filepath.Join(dest, "after.js")); err == nil {
				t.Errorf("extraction went on past the hostile entry")
			}
		})
	}
}

func TestUnsafeErrorMessage(t *testing.T) {
	_, dest := newDest(t)
	_, err := Extract(bytes.NewReader(tarball(t, true, file("../../etc/passwd", "x"))), dest, DefaultLimits)
	want := `tarball entry "../../etc/passwd": path escapes the package`
	if err == nil || err.Error() != want {
		t.Errorf("got %v, want %s", err, want)
	}
}

func TestPackagePathRejectsNUL(t *testing.T) {
	// archive/tar never yields a NUL in a name, so check the guard directly.
	var unsafe *UnsafeError
	if _, err := packagePath("package/a\x00.js"); !errors.As(err, &unsafe) {
		t.Errorf("got %v, want an *UnsafeError", err)
	}
	if _, err := symlinkTarget("package/l", "l", "a\x00"); !errors.As(err, &unsafe) {
		t.Errorf("symlink: got %v, want an *UnsafeError", err)
	}
}

func TestExtractLinksInsideThePackage(t *testing.T) {
	archive := tarball(t, true,
		file("package/a.js", "A"),
		symlink("package/link.js", "a.js"),
		file("package/sub/real.js", "REAL"),
		symlink("package/sub/up.js", "../a.js"),
		symlink("package/sub/chain.js", "up.js"),
		hardlink("package/hard.js", "package/a.js"),
		symlink("package/dangling.js", "missing.js"),
		symlink("package/dirlink", "sub"),
		symlink("package/early.js", "late.js"),
		file("package/late.js", "LATE"),
		symlink("package/self.js", "self.js"),
		symlink("package/dirlink/x.js", "../a.js"),
		symlink("package/nowhere", ""),
		hardlink("package/nowhere2", ""),
	)
	base, dest := newDest(t)
	res, err := Extract(bytes.NewReader(archive), dest, DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	wantFiles := map[string]string{
		"a.js": "A", "link.js": "A", "sub/real.js": "REAL", "sub/up.js": "A",
		"sub/chain.js": "A", "hard.js": "A", "late.js": "LATE", "dirlink/x.js": "A",
	}
	if len(res.Files) != len(wantFiles) {
		t.Errorf("got files %v, want %d", res.Files, len(wantFiles))
	}
	for p, body := range wantFiles {
		if got := readFile(t, filepath.Join(dest, filepath.FromSlash(p))); got != body {
			t.Errorf("%s holds %q, want %q", p, got, body)
		}
	}
	var skipped []string
	for _, s := range res.Skipped {
		skipped = append(skipped, s.Path)
		if !strings.Contains(s.Reason, "not a regular file extracted before it") && !strings.Contains(s.Reason, "to itself") && s.Reason != "link has no target" {
			t.Errorf("skip %s: unexpected reason %q", s.Path, s.Reason)
		}
	}
	if want := []string{"dangling.js", "dirlink", "early.js", "nowhere", "nowhere2", "self.js"}; !reflect.DeepEqual(skipped, want) {
		t.Errorf("skipped %v, want %v", skipped, want)
	}
	assertContained(t, base, dest)
}

func TestExtractSkipsOversizedFiles(t *testing.T) {
	archive := tarball(t, true,
		file("package/small.js", "small"),
		file("package/big.js", strings.Repeat("x", 4096)),
	)
	base, dest := newDest(t)
	res, err := Extract(bytes.NewReader(archive), dest, Limits{MaxFileSize: 1024})
	if err != nil {
		t.Fatal(err)
	}
	if want := []Entry{{"small.js", 5}}; !reflect.DeepEqual(res.Files, want) {
		t.Errorf("files %v, want %v", res.Files, want)
	}
	if want := []Skip{{Path: "big.js", Reason: "larger than 1 KiB (4096 bytes)"}}; !reflect.DeepEqual(res.Skipped, want) {
		t.Errorf("skipped %v, want %v", res.Skipped, want)
	}
	if _, err := os.Stat(filepath.Join(dest, "big.js")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("big.js was written: %v", err)
	}
	assertContained(t, base, dest)

	// No file is too large by itself: the default is the whole archive's
	// bound, so a release's 200 MiB source map is extracted.
	if got := (Limits{}).withDefaults(); got.MaxFileSize != got.MaxTotalBytes {
		t.Errorf("default MaxFileSize %d, MaxTotalBytes %d", got.MaxFileSize, got.MaxTotalBytes)
	}
	if got := formatSize(25 << 20); got != "25 MiB" {
		t.Errorf("formatSize(25 MiB) = %q", got)
	}
}

func TestExtractTooManyFiles(t *testing.T) {
	var entries []tarEntry
	for _, name := range []string{"a", "b", "c", "d", "e"} {
		entries = append(entries, file("package/"+name+".js", name))
	}
	base, dest := newDest(t)
	_, err := Extract(bytes.NewReader(tarball(t, true, entries...)), dest, Limits{MaxFiles: 3})
	var limit *LimitError
	if !errors.As(err, &limit) || limit.Limit != "MaxFiles" || limit.Max != 3 || limit.Entry != "package/d.js" {
		t.Fatalf("got %#v, want a MaxFiles *LimitError at package/d.js", err)
	}
	if want := `tarball entry "package/d.js": tarball exceeds the limit of 3 files (MaxFiles)`; err.Error() != want {
		t.Errorf("message %q, want %q", err, want)
	}
	assertContained(t, base, dest)
}

func TestExtractStopsDataBombs(t *testing.T) {
	zeros := make([]byte, 8<<20)
	tests := []struct {
		name    string
		entries []tarEntry
		limits  Limits
	}{
		{
			// The file is within MaxFileSize but alone exceeds the total.
			name:    "gzip bomb written out",
			entries: []tarEntry{{hdr: tar.Header{Name: "package/zeros.bin", Typeflag: tar.TypeReg, Mode: 0o644}, body: zeros}},
			limits:  Limits{MaxTotalBytes: 1 << 20},
		},
		{
			// Skipped content is still decompressed to reach the next
			// header, so it counts too.
			name:    "gzip bomb skipped as oversized",
			entries: []tarEntry{{hdr: tar.Header{Name: "package/zeros.bin", Typeflag: tar.TypeReg, Mode: 0o644}, body: zeros}},
			limits:  Limits{MaxFileSize: 1024, MaxTotalBytes: 1 << 20},
		},
		{
			// Links are copies, so each one writes the target again.
			name: "hardlink amplification",
			entries: []tarEntry{
				{hdr: tar.Header{Name: "package/zeros.bin", Typeflag: tar.TypeReg, Mode: 0o644}, body: zeros[:600<<10]},
				hardlink("package/1.bin", "package/zeros.bin"),
				hardlink("package/2.bin", "package/zeros.bin"),
				hardlink("package/3.bin", "package/zeros.bin"),
			},
			limits: Limits{MaxTotalBytes: 2 << 20},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			archive := tarball(t, true, tt.entries...)
			if len(archive) > 64<<10 {
				t.Fatalf("test archive is %d bytes; it should be a small bomb", len(archive))
			}
			base, dest := newDest(t)
			_, err := Extract(bytes.NewReader(archive), dest, tt.limits)
			var limit *LimitError
			if !errors.As(err, &limit) || limit.Limit != "MaxTotalBytes" {
				t.Fatalf("got %v, want a MaxTotalBytes *LimitError", err)
			}
			var total int64
			filepath.WalkDir(dest, func(p string, d fs.DirEntry, err error) error {
				if err == nil && d.Type().IsRegular() {
					info, _ := d.Info()
					total += info.Size()
				}
				return nil
			})
			if total > tt.limits.MaxTotalBytes {
				t.Errorf("wrote %d bytes, over the %d limit", total, tt.limits.MaxTotalBytes)
			}
			assertContained(t, base, dest)
		})
	}
}

func TestExtractDuplicatesLastWins(t *testing.T) {
	archive := tarball(t, true,
		file("package/a.js", "first"),
		file("package/b.js", "small"),
		file("package/a.js", "second"),
		file("package/b.js", strings.Repeat("x", 2048)),
	)
	base, dest := newDest(t)
	res, err := Extract(bytes.NewReader(archive), dest, Limits{MaxFileSize: 1024})
	if err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, filepath.Join(dest, "a.js")); got != "second" {
		t.Errorf("a.js holds %q, want the later entry", got)
	}
	if want := []Entry{{"a.js", 6}}; !reflect.DeepEqual(res.Files, want) {
		t.Errorf("files %v, want %v", res.Files, want)
	}
	// The later b.js was too big; the earlier one must not survive it.
	if _, err := os.Stat(filepath.Join(dest, "b.js")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("b.js from the earlier entry survived: %v", err)
	}
	if len(res.Skipped) != 1 || res.Skipped[0].Path != "b.js" {
		t.Errorf("skipped %v, want b.js", res.Skipped)
	}
	assertContained(t, base, dest)
}

func TestExtractFileAndDirectoryClashes(t *testing.T) {
	archive := tarball(t, true,
		file("package/a", "file"),
		file("package/a/b.js", "under a file"),
		file("package/c/d.js", "d"),
		file("package/c", "over a directory"),
		file("README", "beside the top folder"),
	)
	base, dest := newDest(t)
	res, err := Extract(bytes.NewReader(archive), dest, DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	if want := []Entry{{"a", 4}, {"c/d.js", 1}}; !reflect.DeepEqual(res.Files, want) {
		t.Errorf("files %v, want %v", res.Files, want)
	}
	want := []Skip{
		{Path: "README", Reason: "not inside the archive's top-level folder"},
		{Path: "a/b.js", Reason: `its parent "a" is a file earlier in the archive`},
		{Path: "c", Reason: "a directory of the same name came earlier in the archive"},
	}
	if !reflect.DeepEqual(res.Skipped, want) {
		t.Errorf("skipped:\n got  %v\n want %v", res.Skipped, want)
	}
	assertContained(t, base, dest)
}

func TestExtractRefusesSymlinksAlreadyInDest(t *testing.T) {
	base, dest := newDest(t)
	outside := filepath.Join(base, "outside")
	if err := os.MkdirAll(outside, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dest, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dest, "dist")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("inner.js", filepath.Join(dest, "x.js")); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"package/dist/a.js", "package/x.js"} {
		_, err := Extract(bytes.NewReader(tarball(t, true, file(name, "payload"))), dest, DefaultLimits)
		if err == nil || !strings.Contains(err.Error(), "symlink") {
			t.Errorf("%s: got %v, want a refusal to follow the symlink", name, err)
		}
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Errorf("wrote through a symlink into %s", outside)
	}
	if _, err := os.Lstat(filepath.Join(dest, "inner.js")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("wrote through the x.js symlink: %v", err)
	}
}

func TestExtractCorruptArchives(t *testing.T) {
	valid := tarball(t, true, file("package/a.js", strings.Repeat("abc", 1000)))
	flipped := bytes.Clone(valid)
	flipped[len(flipped)/2] ^= 0xff
	tests := map[string][]byte{
		"empty":             nil,
		"gzip magic only":   {0x1f, 0x8b},
		"gzip garbage":      append([]byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3}, bytes.Repeat([]byte{0xde, 0xad}, 100)...),
		"truncated gzip":    valid[:len(valid)-6],
		"flipped gzip byte": flipped,
		"not a tarball":     []byte("this is not an archive at all, just some text that is long enough"),
		"truncated tar":     tarball(t, false, file("package/a.js", strings.Repeat("x", 2000)))[:1024],
	}
	for name, data := range tests {
		t.Run(name, func(t *testing.T) {
			base, dest := newDest(t)
			_, err := Extract(bytes.NewReader(data), dest, DefaultLimits)
			if err == nil || !strings.Contains(err.Error(), "corrupt archive") {
				t.Fatalf("got %v, want a corrupt archive error", err)
			}
			var unsafe *UnsafeError
			var limit *LimitError
			if errors.As(err, &unsafe) || errors.As(err, &limit) {
				t.Errorf("corruption reported as %T", err)
			}
			assertContained(t, base, dest)
		})
	}
}

func FuzzExtract(f *testing.F) {
	f.Add(tarball(f, true, file("package/a.js", "a"), symlink("package/b.js", "a.js"), hardlink("package/c.js", "package/a.js")))
	f.Add(tarball(f, false, dir("o-r-sha/"), file("o-r-sha/x/y.css", "y"), file("o-r-sha/x", "clash")))
	f.Add(tarball(f, false, file("../../etc/passwd", "x")))
	f.Add(tarball(f, false, symlink("package/x", "../../etc"), file("package/x/passwd", "x")))
	f.Add(tarball(f, true, special("package/null", tar.TypeChar)))
	f.Add([]byte{0x1f, 0x8b})
	f.Fuzz(func(t *testing.T, data []byte) {
		base, dest := newDest(t)
		res, err := Extract(bytes.NewReader(data), dest, Limits{MaxFileSize: 1 << 20, MaxFiles: 64, MaxTotalBytes: 4 << 20})
		assertContained(t, base, dest)
		if err != nil {
			return
		}
		for _, e := range res.Files {
			info, err := os.Lstat(filepath.Join(dest, filepath.FromSlash(e.Path)))
			if err != nil || !info.Mode().IsRegular() || info.Size() != e.Size {
				t.Errorf("reported file %s (%d bytes) is not on disk as such: %v %v", e.Path, e.Size, info, err)
			}
		}
	})
}
