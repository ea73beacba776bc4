package metadata

import (
	"errors"
	"strings"
	"testing"
)

func TestCheckStoredAt(t *testing.T) {
	for _, key := range []string{
		"lib/1.0.0/lib.js",
		"lib/1.0.0/dist/esm/lib.min.js",
		"lib/2.0.0-beta.1+build/a b.js",
		"lib/1.0.0/100%.css",      // a literal '%'
		"lib/1.0.0/%E2%9C%93.txt", // decodes to a plain name
		"lib/1.0.0/..foo.js",      // dots, but not a dot segment
		"lib/1.0.0/ünïcode.js",
	} {
		if err := CheckStoredAt("lib", key); err != nil {
			t.Errorf("%q refused: %v", key, err)
		}
	}
	for _, c := range []struct{ name, key string }{
		{"lib", ""},
		{"lib", "lib-extra/1.0.0/lib.js"}, // a package whose name shares the prefix
		{"lib", "libx/1.0.0/lib.js"},
		{"lib", "other/1.0.0/lib.js"},
		{"lib", "/lib/1.0.0/lib.js"}, // absolute
		{"lib", "lib/"},
		{"lib", "lib/1.0.0"},
		{"lib", "lib/1.0.0/"},
		{"lib", "lib//lib.js"},
		{"lib", "lib/../lib-extra/1.0.0/lib.js"},
		{"lib", "lib/1.0.0/../../lib-extra/1.0.0/lib.js"},
		{"lib", "lib/./1.0.0/lib.js"},
		{"lib", "lib/..\\lib-extra\\1.0.0\\lib.js"},
		{"lib", "lib/1.0.0/a\\b.js"},
		{"lib", "lib/%2e%2e/lib-extra/1.0.0/lib.js"},
		{"lib", "lib/%2E%2E/lib-extra/1.0.0/lib.js"},
		{"lib", "lib/.%2e/lib-extra/1.0.0/lib.js"},
		{"lib", "lib/%252e%252e/lib-extra/1.0.0/lib.js"}, // encoded twice
		{"lib", "lib/1.0.0%2f..%2f..%2flib-extra/1.0.0/lib.js"},
		{"lib", "lib/1.0.0/..%5c..%5clib-extra"},
		{"lib", "lib/1.0.0/a\x00.js"},
		{"lib", "lib/1.0.0/a%00.js"},
		{"lib", "lib/1.0.0/\xff.js"},
		{"lib", "lib/1.0.0/" + strings.Repeat("a", 1100)},
		{"", "/1.0.0/lib.js"},
		{"..", "../1.0.0/lib.js"},
	} {
		err := CheckStoredAt(c.name, c.key)
		var refused *StoredAtError
		if !errors.As(err, &refused) {
			t.Errorf("%s: %q accepted", c.name, c.key)
		}
	}
}

func TestCheckedKey(t *testing.T) {
	own := File{Path: "a.js"}
	if k, err := own.CheckedKey("lib", "1.0.0"); err != nil || k != "lib/1.0.0/a.js" {
		t.Errorf("own key %q, %v", k, err)
	}
	reused := File{Path: "a.js", StoredAt: "lib/0.9.0/a.js"}
	if k, err := reused.CheckedKey("lib", "1.0.0"); err != nil || k != "lib/0.9.0/a.js" {
		t.Errorf("reused key %q, %v", k, err)
	}
	if k, err := (File{Path: "a.js", StoredAt: "lib-extra/0.9.0/a.js"}).CheckedKey("lib", "1.0.0"); err == nil || k != "" {
		t.Errorf("out of prefix: %q, %v", k, err)
	}
}
