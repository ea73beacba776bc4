package catalog

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzLoadFile feeds hostile catalog files to the loader and the
// validator: an entry loads, or every problem names the file; nothing
// panics. The seeds are the cdnjs samples and a valid entry with each field
// wrong in turn.
func FuzzLoadFile(f *testing.F) {
	samples, _ := filepath.Glob("testdata/cdnjs/*/*.json")
	for _, path := range samples {
		if data, err := os.ReadFile(path); err == nil {
			f.Add(data)
		}
	}
	valid := map[string]any{
		"name": "fuzzlib", "description": "d", "license": "MIT", "filename": "a.js", "keywords": []string{"k"},
		"repository": map[string]any{"type": "git", "url": "git+https://github.com/o/r.git"},
		"autoupdate": map[string]any{"source": "npm", "target": "fuzzlib",
			"fileMap": []any{map[string]any{"basePath": "dist", "files": []string{"*.js"}}}},
	}
	f.Add(mustJSON(valid))
	for field := range valid {
		for _, wrong := range []any{nil, 7, "", []any{1}, map[string]any{"x": true}, strings.Repeat("x", 300)} {
			entry := map[string]any{}
			for k, v := range valid {
				entry[k] = v
			}
			entry[field] = wrong
			f.Add(mustJSON(entry))
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		path := FilePath(dir, "fuzzlib")
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		pkg, err := LoadFile(path)
		if err != nil {
			if !strings.Contains(err.Error(), path) {
				t.Fatalf("the error does not name the file: %v", err)
			}
		} else if pkg.Name == "" {
			t.Fatalf("loaded an entry with no name from %q", data)
		}
		for _, p := range Validate(dir) {
			if p.File == "" || p.Reason == "" {
				t.Fatalf("a problem without its file or reason: %+v", p)
			}
		}
	})
}

func mustJSON(v any) []byte {
	data, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return data
}
