package migrate_test

import (
	"strings"
	"testing"
	"time"

	"github.com/edgeflow/edgeflow/internal/migrate"
)

// The examples of rclone's "Rclone Filtering" page (its pattern examples
// table and the anchoring examples), keys written without rclone's leading
// "/" (a key below the source prefix), plus the edges of each rule.
func TestGlobMatchesRclonesExamples(t *testing.T) {
	cases := []struct {
		pattern   string
		match, no []string
	}{
		{"file.jpg", []string{"file.jpg", "directory/file.jpg"}, []string{"afile.jpg", "directory/afile.jpg", "file.jpg/x"}},
		{"/file.jpg", []string{"file.jpg"}, []string{"afile.jpg", "directory/file.jpg"}},
		{"*.jpg", []string{"file.jpg", "dir/file.jpg", ".jpg"}, []string{"file.png", "dir/file.png"}},
		{"/*.jpg", []string{"file.jpg", "file2.jpg"}, []string{"file.png", "dir/file.jpg"}},
		{"*.{jpg,png}", []string{"file.jpg", "dir/file.png"}, []string{"file.gif", "dir/file.gif"}},
		{"dir/**", []string{"dir/anyfile", "subdir/dir/subsubdir/anyfile"}, []string{"file.png", "subdir/file.png", "adir/x"}},
		{"*.t?t", []string{"file.txt", "dir/file.tzt"}, []string{"file.qxt", "dir/file.png", "file.t/t"}},
		{"*.[a-z]", []string{"file.a", "dir/file.b"}, []string{"file.0", "dir/file.1"}},
		{`*.\?\?\?`, []string{"file.???", "dir/file.???"}, []string{"file.abc", "dir/file.def"}},
		{`*.\d\d\d`, []string{"file.012", "dir/file.345"}, []string{"file.abc", "dir/file.def"}},
		// * stays within a segment, ** crosses them.
		{"/a/*", []string{"a/b"}, []string{"a/b/c", "x/a/b"}},
		{"/a/**", []string{"a/b", "a/b/c"}, []string{"x/a/b", "ab"}},
		{"**/b", []string{"x/b", "x/y/b"}, []string{"b2"}},
		{"[!a]*", []string{"b", "x/b"}, []string{"a", "x/a"}},
		{"[^a]x", []string{"bx"}, []string{"ax", "/x"}},
		{"[[:digit:]]*", []string{"1a", "d/9"}, []string{"a1"}},
		{"{a,b/{c,d}}.txt", []string{"a.txt", "b/c.txt", "x/b/d.txt"}, []string{"b.txt", "b/e.txt"}},
		{"a,b", []string{"a,b"}, []string{"a"}},
		{`\*`, []string{"*", "d/*"}, []string{"x"}},
		{"c++.(1)$^|", []string{"c++.(1)$^|"}, []string{"cc.(1)"}},
		{"ünï cødé", []string{"d/ünï cødé"}, []string{"ünï"}},
	}
	for _, c := range cases {
		re, err := migrate.CompileGlob(c.pattern)
		if err != nil {
			t.Errorf("%q: %v", c.pattern, err)
			continue
		}
		for _, k := range c.match {
			if !re.MatchString(k) {
				t.Errorf("%q does not match %q (regexp %s)", c.pattern, k, re)
			}
		}
		for _, k := range c.no {
			if re.MatchString(k) {
				t.Errorf("%q matches %q (regexp %s)", c.pattern, k, re)
			}
		}
	}
}

func TestGlobRefusesWithWhereAndWhy(t *testing.T) {
	for pattern, want := range map[string]string{
		"":            "empty",
		"dir/":        "dir/**",
		"a[bc":        "at character 2",
		"a]":          "at character 2",
		"{a,b":        "not closed",
		"a}":          "at character 2",
		"***":         "3 stars",
		`ab\`:         "at character 3",
		"[]":          "empty character class",
		"*.{{jpe?g}}": "regular expressions",
		"[z-a]":       "character class [z-a]",
		"/x/[[:no:]]": "character class",
	} {
		_, err := migrate.CompileGlob(pattern)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want an error saying %q", pattern, err, want)
		}
	}
}

func size(n int64) *int64 { return &n }

// Rules are tried in order and the first match decides; any include
// implies that the rest is left out; without one, the rest is kept.
func TestFilterFirstMatchWins(t *testing.T) {
	check := func(name string, f migrate.Filter, keep, drop []string) {
		t.Helper()
		k, err := f.Compile()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, key := range keep {
			if !k.KeepKey(key) {
				t.Errorf("%s: %q left out", name, key)
			}
		}
		for _, key := range drop {
			if k.KeepKey(key) {
				t.Errorf("%s: %q kept", name, key)
			}
		}
	}
	check("excludes only", migrate.Filter{Rules: []migrate.FilterRule{{Exclude: "*.tmp"}, {Exclude: "/cache/**"}}},
		[]string{"a.js", "d/cache/x"}, []string{"a.tmp", "d/b.tmp", "cache/x"})
	check("includes imply the rest out", migrate.Filter{Rules: []migrate.FilterRule{{Include: "*.jpg"}}},
		[]string{"a.jpg", "d/a.jpg"}, []string{"a.png"})
	check("exclude before include", migrate.Filter{Rules: []migrate.FilterRule{{Exclude: "/tmp/**"}, {Include: "*.jpg"}}},
		[]string{"a.jpg", "x/tmp/a.jpg"}, []string{"tmp/a.jpg", "a.png"})
	check("include before exclude", migrate.Filter{Rules: []migrate.FilterRule{{Include: "/tmp/keep.jpg"}, {Exclude: "/tmp/**"}}},
		[]string{"tmp/keep.jpg"}, []string{"tmp/a.jpg", "a.png"})
	var none *migrate.KeyFilter
	if !none.KeepKey("x") || !none.Keep(migrate.Object{Key: "x"}, "x") {
		t.Error("a nil filter leaves out")
	}
}

func TestFilterSizesAndTimes(t *testing.T) {
	t0 := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	f := migrate.Filter{MinSize: size(10), MaxSize: size(1 << 10), ModifiedAfter: t0, ModifiedBefore: t0.Add(24 * time.Hour)}
	k, err := f.Compile()
	if err != nil {
		t.Fatal(err)
	}
	obj := func(n int64, at time.Time) migrate.Object { return migrate.Object{Key: "k", Size: n, LastModified: at} }
	for _, c := range []struct {
		o    migrate.Object
		keep bool
	}{
		{obj(10, t0), true}, // bounds are inclusive for sizes and the start time
		{obj(1<<10, t0.Add(time.Hour)), true},
		{obj(9, t0), false},
		{obj(1<<10+1, t0), false},
		{obj(100, t0.Add(-time.Second)), false},
		{obj(100, t0.Add(24*time.Hour)), false}, // before is exclusive
	} {
		if got := k.Keep(c.o, c.o.Key); got != c.keep {
			t.Errorf("%d bytes at %s: kept %t, want %t", c.o.Size, c.o.LastModified, got, c.keep)
		}
	}
	for _, bad := range []migrate.Filter{
		{MinSize: size(2), MaxSize: size(1)},
		{ModifiedAfter: t0, ModifiedBefore: t0},
		{MinSize: size(-1)},
		{Rules: []migrate.FilterRule{{Include: "a", Exclude: "b"}}},
		{Rules: []migrate.FilterRule{{}}},
	} {
		if err := bad.Check(); err == nil {
			t.Errorf("%+v passes its check", bad)
		}
	}
	err = migrate.Filter{Rules: []migrate.FilterRule{{Include: "*.js"}, {Exclude: "a["}}}.Check()
	if err == nil || !strings.Contains(err.Error(), `--exclude "a[" (filter rule 2)`) {
		t.Errorf("a bad second rule: %v", err)
	}
}

func TestFilterListedKeepsOrderAndCountsBytes(t *testing.T) {
	k, err := migrate.Filter{Rules: []migrate.FilterRule{{Exclude: "/skip/**"}}, MaxSize: size(100)}.Compile()
	if err != nil {
		t.Fatal(err)
	}
	l := migrate.Listed{Objects: []migrate.Object{
		{Key: "p/a", Size: 1}, {Key: "p/big", Size: 101}, {Key: "p/skip/x", Size: 1}, {Key: "p/z", Size: 2},
	}, Next: "tok"}
	kept, excluded := migrate.FilterListed(k, "p/", l)
	if len(kept.Objects) != 2 || kept.Objects[0].Key != "p/a" || kept.Objects[1].Key != "p/z" || kept.Bytes != 3 || kept.Next != "tok" {
		t.Fatalf("kept %+v", kept)
	}
	if strings.Join(excluded, ",") != "p/big,p/skip/x" {
		t.Fatalf("excluded %v", excluded)
	}
	// The source prefix is the patterns' root, with or without its "/".
	for prefix, key := range map[string]string{"p/": "p/skip/x", "p": "p/skip/x", "": "skip/x"} {
		if k.KeepKey(migrate.RelativeKey(prefix, key)) {
			t.Errorf("prefix %q: %q kept", prefix, key)
		}
	}
}

func TestParseFilterTime(t *testing.T) {
	now := time.Date(2026, 5, 10, 12, 0, 0, 0, time.UTC)
	for in, want := range map[string]time.Time{
		"2026-05-01T08:30:00+02:00": time.Date(2026, 5, 1, 6, 30, 0, 0, time.UTC),
		"2026-05-01":                time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC),
		"24h":                       now.Add(-24 * time.Hour),
		"90m":                       now.Add(-90 * time.Minute),
		"7d":                        now.AddDate(0, 0, -7),
		"2w":                        now.AddDate(0, 0, -14),
	} {
		got, err := migrate.ParseFilterTime(in, now)
		if err != nil || !got.Equal(want) {
			t.Errorf("%q: %v %v, want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "yesterday", "-24h", "2026-13-01", "1.5d", "2026-05-01 08:00"} {
		if _, err := migrate.ParseFilterTime(bad, now); err == nil || !strings.Contains(err.Error(), "RFC 3339") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}
