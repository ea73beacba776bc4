package fileset_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/edgeflow/edgeflow/internal/publish/catalog"
	"github.com/edgeflow/edgeflow/internal/publish/fileset"
)

var releaseFiles = []string{
	"package.json",
	"README.md",
	".eslintrc",
	"dist/jquery.js",
	"dist/jquery.min.js",
	"dist/jquery.min.map",
	"dist/.cache/x.js",
	"dist/core/ajax.js",
	"distribution/other.js",
	"lib/jquery.js",
	"src/jquery.js",
}

func TestApply(t *testing.T) {
	tests := []struct {
		name    string
		fileMap []catalog.FileMapEntry
		want    []fileset.Selection
	}{
		{
			name:    "base path is stripped and only files beneath it count",
			fileMap: []catalog.FileMapEntry{{BasePath: "dist", Files: []string{"**/*.js"}}},
			want: []fileset.Selection{
				{Source: "dist/core/ajax.js", Output: "core/ajax.js"},
				{Source: "dist/jquery.js", Output: "jquery.js"},
				{Source: "dist/jquery.min.js", Output: "jquery.min.js"},
			},
		},
		{
			name:    "trailing slash and ./ in base path are tolerated",
			fileMap: []catalog.FileMapEntry{{BasePath: "./dist/", Files: []string{"*.min.*"}}},
			want: []fileset.Selection{
				{Source: "dist/jquery.min.js", Output: "jquery.min.js"},
				{Source: "dist/jquery.min.map", Output: "jquery.min.map"},
			},
		},
		{
			name:    "empty base path is the root",
			fileMap: []catalog.FileMapEntry{{BasePath: "", Files: []string{"*.json", "lib/*.js"}}},
			want: []fileset.Selection{
				{Source: "lib/jquery.js", Output: "lib/jquery.js"},
				{Source: "package.json", Output: "package.json"},
			},
		},
		{
			name:    "dot base path is the root and dot files need an explicit dot",
			fileMap: []catalog.FileMapEntry{{BasePath: ".", Files: []string{"*", ".*"}}},
			want: []fileset.Selection{
				{Source: ".eslintrc", Output: ".eslintrc"},
				{Source: "README.md", Output: "README.md"},
				{Source: "package.json", Output: "package.json"},
			},
		},
		{
			name: "same source to same output twice is kept once",
			fileMap: []catalog.FileMapEntry{
				{BasePath: "dist", Files: []string{"jquery.js", "*.js"}},
				{BasePath: "dist/", Files: []string{"jquery.{js,css}"}},
			},
			want: []fileset.Selection{
				{Source: "dist/jquery.js", Output: "jquery.js"},
				{Source: "dist/jquery.min.js", Output: "jquery.min.js"},
			},
		},
		{
			name:    "entry without globs selects nothing",
			fileMap: []catalog.FileMapEntry{{BasePath: "dist"}},
			want:    nil,
		},
		{
			name: "one source may be published under two names",
			fileMap: []catalog.FileMapEntry{
				{BasePath: "dist", Files: []string{"jquery.js"}},
				{BasePath: "", Files: []string{"dist/jquery.js"}},
			},
			want: []fileset.Selection{
				{Source: "dist/jquery.js", Output: "dist/jquery.js"},
				{Source: "dist/jquery.js", Output: "jquery.js"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := fileset.Apply(tt.fileMap, releaseFiles)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) == 0 && len(tt.want) == 0 {
				return
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %v\nwant %v", got, tt.want)
			}
		})
	}
}

func TestApplyConflict(t *testing.T) {
	fileMap := []catalog.FileMapEntry{
		{BasePath: "dist", Files: []string{"*.js"}},
		{BasePath: "lib", Files: []string{"*.js"}},
		{BasePath: "src", Files: []string{"jquery.js"}},
	}
	_, err := fileset.Apply(fileMap, releaseFiles)
	var conflict *fileset.ConflictError
	if !errors.As(err, &conflict) {
		t.Fatalf("got %v, want a *ConflictError", err)
	}
	wantSources := []string{"dist/jquery.js", "lib/jquery.js", "src/jquery.js"}
	if conflict.Output != "jquery.js" || !reflect.DeepEqual(conflict.Sources, wantSources) {
		t.Errorf("got output %q from %v, want %q from %v", conflict.Output, conflict.Sources, "jquery.js", wantSources)
	}
	for _, s := range append(wantSources, "jquery.js") {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not name %q", err, s)
		}
	}
}

func TestApplyErrors(t *testing.T) {
	if _, err := fileset.Apply([]catalog.FileMapEntry{}, releaseFiles); !errors.Is(err, fileset.ErrEmptyFileMap) {
		t.Errorf("empty fileMap: got %v, want ErrEmptyFileMap", err)
	}
	if _, err := fileset.Apply[catalog.FileMapEntry](nil, releaseFiles); !errors.Is(err, fileset.ErrEmptyFileMap) {
		t.Errorf("nil fileMap: got %v, want ErrEmptyFileMap", err)
	}

	_, err := fileset.Apply([]catalog.FileMapEntry{
		{BasePath: "dist", Files: []string{"*.js"}},
		{BasePath: "lib", Files: []string{"*.js", "[ab"}},
	}, releaseFiles)
	var syntaxErr *fileset.SyntaxError
	if !errors.As(err, &syntaxErr) || !strings.Contains(err.Error(), "fileMap[1]") || !strings.Contains(err.Error(), `"[ab"`) {
		t.Errorf("invalid glob: got %v, want a *SyntaxError naming fileMap[1] and the glob", err)
	}

	_, err = fileset.Apply([]catalog.FileMapEntry{{BasePath: "../outside", Files: []string{"*"}}}, releaseFiles)
	if err == nil || !strings.Contains(err.Error(), "fileMap[0]") || !strings.Contains(err.Error(), "leaves the package") {
		t.Errorf("escaping basePath: got %v", err)
	}

	_, err = fileset.Apply([]catalog.FileMapEntry{{Files: []string{"*"}}}, []string{"a.js", "../b.js"})
	if err == nil || !strings.Contains(err.Error(), `"../b.js"`) {
		t.Errorf("unclean release path: got %v", err)
	}
}
