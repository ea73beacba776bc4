package edge

import (
	"strings"
	"testing"
)

// Hostile request lines and headers: the edge's own parsers never panic
// and never produce a range outside the file or a path that is not the
// request's.

func FuzzParseRange(f *testing.F) {
	for _, h := range []string{"bytes=0-9", "bytes=-5", "bytes=5-", "bytes=9-0", "bytes=0-0,2-3", "bytes= 1 - 2 ", "items=0-1",
		"bytes=99999999999999999999-", "bytes=-0", "bytes=", "bytes=--1", "bytes=1-2-3"} {
		f.Add(h, int64(10))
	}
	f.Add("bytes=0-", int64(0))
	f.Fuzz(func(t *testing.T, header string, size int64) {
		if size < 0 {
			size = -(size + 1)
		}
		r, unsatisfiable := parseRange(header, size)
		if r != nil && unsatisfiable {
			t.Fatalf("parseRange(%q, %d): a range and unsatisfiable", header, size)
		}
		if r != nil && (r.start < 0 || r.length < 1 || r.start+r.length > size || r.start+r.length < r.start) {
			t.Fatalf("parseRange(%q, %d) = [%d, +%d): outside the file", header, size, r.start, r.length)
		}
		if !strings.HasPrefix(header, "bytes=") && (r != nil || unsatisfiable) {
			t.Fatalf("parseRange(%q): only bytes ranges are honoured", header)
		}
	})
}

func FuzzSplitFilePath(f *testing.F) {
	for _, p := range []string{"mitt/3.0.1/mitt.umd.min.js", "a/1/b/c/d.css", "../../etc/passwd", "a//b", "a/b/", "/x/y", "a/1.0.0/%2e%2e/x"} {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, rest string) {
		name, version, path, ok := splitFilePath(rest)
		if !ok {
			return
		}
		if name == "" || version == "" || path == "" || strings.HasSuffix(path, "/") || strings.Contains(name, "/") || strings.Contains(version, "/") {
			t.Fatalf("splitFilePath(%q) = %q %q %q", rest, name, version, path)
		}
		if name+"/"+version+"/"+path != rest {
			t.Fatalf("splitFilePath(%q) lost bytes: %q %q %q", rest, name, version, path)
		}
	})
}
