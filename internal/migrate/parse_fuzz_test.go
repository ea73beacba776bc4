package migrate

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"
)

// Hostile flags and key lists: a clear error or a sound value, never a
// panic, a negative size or a key lost between pages.

func FuzzParseSize(f *testing.F) {
	for _, s := range []string{"64MiB", "5G", "1048576", "0", "1.5K", "-1", "NaN", "Inf", "1e30TiB", " 7 mb ", "B", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ParseSize(s)
		if err == nil && n < 0 {
			t.Fatalf("ParseSize(%q) = %d: a size is never negative", s, n)
		}
		if err != nil && !strings.Contains(err.Error(), "size") {
			t.Fatalf("ParseSize(%q): the error %q does not say what was wrong", s, err)
		}
	})
}

func FuzzParseLocation(f *testing.F) {
	for _, s := range []string{"s3://bucket", "s3://bucket/copy/", "s3://b/x", "s3://my.bucket/a b/ü/%2F", "s3://192.168.0.1/x", "s3://Bad_Bucket", "bucket/x", "s3://bucket/\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		l, err := ParseLocation(s)
		if err != nil {
			return
		}
		if CheckBucketName(l.Bucket) != nil || !utf8.ValidString(l.Prefix) || len(l.Prefix) > 1024 {
			t.Fatalf("ParseLocation(%q) accepted %+v", s, l)
		}
		again, err := ParseLocation(l.String())
		if err != nil || again != l {
			t.Fatalf("%q → %+v → %q → %+v, %v: not the same location", s, l, l.String(), again, err)
		}
	})
}

// FuzzKeyList pages through a key list that passed the check, in pages of
// a few keys read by byte offset, and wants exactly its keys, in order.
func FuzzKeyList(f *testing.F) {
	for _, s := range []string{"a\nb\nc\n", "one\r\ntwo\r\n\r\nthree", "with space\n\n+plus/100%.js\nünï/日本語\n", "\n\n\n", "x"} {
		f.Add([]byte(s), 2)
	}
	f.Fuzz(func(t *testing.T, list []byte, max int) {
		max = 1 + int(uint(max)%7)
		n, err := CheckKeyList(bytes.NewReader(list))
		if err != nil {
			return
		}
		var want []string
		for _, line := range strings.Split(string(list), "\n") {
			if k := strings.TrimSuffix(line, "\r"); k != "" {
				want = append(want, k)
			}
		}
		if n != len(want) {
			t.Fatalf("CheckKeyList counted %d keys, the list has %d", n, len(want))
		}
		var got []string
		offset := int64(0)
		for pages := 0; ; pages++ {
			if pages > len(list)+1 {
				t.Fatal("paging does not end")
			}
			end := min(int64(len(list)), offset+MaxKeyListChunk(max))
			keys, next := KeyListPage(list[offset:end], offset, end == int64(len(list)), max)
			got = append(got, keys...)
			if next == "" {
				break
			}
			o, err := KeyListOffset(next)
			if err != nil || o <= offset && len(keys) == 0 {
				t.Fatalf("page at %d: next token %q (%v) makes no progress", offset, next, err)
			}
			offset = o
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") || len(got) != len(want) {
			t.Fatalf("paged %d keys %q, want %d %q", len(got), got, len(want), want)
		}
	})
}
