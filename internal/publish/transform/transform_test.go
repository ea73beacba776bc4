package transform

import (
	"bytes"
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"
)

var allMinify = Options{MinifyJS: true, MinifyCSS: true}

func noneShipped(string) bool { return false }

func TestTransformFileOriginalAndTwin(t *testing.T) {
	src := []byte(modernJS)
	outs, warnings, err := File("dist/lib.mjs", src, allMinify, noneShipped)
	if err != nil || len(warnings) != 0 {
		t.Fatalf("err %v, warnings %v", err, warnings)
	}
	if len(outs) != 2 {
		t.Fatalf("got %d outputs, want original and twin", len(outs))
	}
	orig, twin := outs[0], outs[1]
	if orig.Path != "dist/lib.mjs" || !bytes.Equal(orig.Data, src) || orig.MinifiedFrom != "" {
		t.Errorf("original output = %+v", orig)
	}
	if orig.SRI != SRI(src) {
		t.Errorf("original SRI %q is not the SRI of the stored bytes", orig.SRI)
	}
	if twin.Path != "dist/lib.min.mjs" || twin.MinifiedFrom != "dist/lib.mjs" || len(twin.Data) >= len(src) {
		t.Errorf("twin output = %s (%d bytes)", twin.Path, len(twin.Data))
	}
	for _, out := range outs {
		if out.ContentType != "application/javascript; charset=utf-8" {
			t.Errorf("%s: content type %q", out.Path, out.ContentType)
		}
		if out.SRI != SRI(out.Data) {
			t.Errorf("%s: SRI does not match Data", out.Path)
		}
		if got := unbrotli(t, out.Brotli); !bytes.Equal(got, out.Data) {
			t.Errorf("%s: brotli does not decode to Data", out.Path)
		}
		if got := gunzip(t, out.Gzip); !bytes.Equal(got, out.Data) {
			t.Errorf("%s: gzip does not decode to Data", out.Path)
		}
		checkGzipHeader(t, out.Gzip)
	}
}

func TestTransformFileDeterministic(t *testing.T) {
	inputs := map[string][]byte{
		"lib/corpus.js": generateJSCorpus(64<<10, 7),
		"lib/theme.css": []byte("/*! t */ .a { color: #ff0000; } .b { margin: 0px }"),
		"lib/font.woff": {0x77, 0x4f, 0x46, 0x46, 1, 2, 3},
	}
	for path, data := range inputs {
		first, w1, err1 := File(path, data, allMinify, noneShipped)
		second, w2, err2 := File(path, bytes.Clone(data), allMinify, noneShipped)
		if err1 != nil || err2 != nil {
			t.Fatalf("%s: %v / %v", path, err1, err2)
		}
		if !reflect.DeepEqual(first, second) || !reflect.DeepEqual(w1, w2) {
			t.Errorf("%s: outputs differ between identical runs", path)
		}
	}
}

func TestTransformFileShippedMinIsNotOverwritten(t *testing.T) {
	var asked []string
	shipped := func(p string) bool { asked = append(asked, p); return p == "a/b.min.js" }
	outs, warnings, err := File("a/b.js", []byte("var unused = 1 + 2;\n"), allMinify, shipped)
	if err != nil || len(warnings) != 0 {
		t.Fatalf("err %v, warnings %v", err, warnings)
	}
	if len(outs) != 1 || outs[0].Path != "a/b.js" {
		t.Errorf("got %d outputs (%v), want only the original", len(outs), paths(outs))
	}
	if !reflect.DeepEqual(asked, []string{"a/b.min.js"}) {
		t.Errorf("shipped asked about %v, want [a/b.min.js]", asked)
	}
}

func TestTransformFileMinifyFailureIsAWarning(t *testing.T) {
	src := []byte("function broken( {\n")
	outs, warnings, err := File("a/broken.js", src, allMinify, noneShipped)
	if err != nil {
		t.Fatalf("minify failure returned err: %v", err)
	}
	if len(outs) != 1 || !bytes.Equal(outs[0].Data, src) || outs[0].Brotli == nil {
		t.Errorf("original not published intact: %v", paths(outs))
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "a/broken.js") || !strings.Contains(warnings[0], "expected") {
		t.Errorf("warnings = %q, want one naming the path and the reason", warnings)
	}
}

func TestTransformFileRespectsOptions(t *testing.T) {
	cases := []struct {
		path string
		opts Options
		want []string
	}{
		{"x.js", Options{MinifyCSS: true}, []string{"x.js"}},
		{"x.mjs", Options{MinifyJS: true}, []string{"x.mjs", "x.min.mjs"}},
		{"s.css", Options{MinifyJS: true}, []string{"s.css"}},
		{"s.css", Options{MinifyCSS: true}, []string{"s.css", "s.min.css"}},
		{"x.min.js", allMinify, []string{"x.min.js"}},
		{"x.json", allMinify, []string{"x.json"}},
	}
	data := map[string][]byte{
		"x.js": []byte("var answer = 40 + 2;\n"), "x.mjs": []byte("export const answer = 40 + 2;\n"),
		"s.css": []byte(".a { color: #ff0000; }\n"), "x.min.js": []byte("var a=1"), "x.json": []byte(`{ "a": 1 }`),
	}
	for _, c := range cases {
		outs, warnings, err := File(c.path, data[c.path], c.opts, nil)
		if err != nil || len(warnings) != 0 {
			t.Fatalf("%s: err %v, warnings %v", c.path, err, warnings)
		}
		if got := paths(outs); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s with %+v: outputs %v, want %v", c.path, c.opts, got, c.want)
		}
	}
}

func TestTransformFileNotCompressible(t *testing.T) {
	outs, _, err := File("fonts/icons.woff2", []byte("wOF2 not really"), allMinify, noneShipped)
	if err != nil {
		t.Fatal(err)
	}
	if len(outs) != 1 || outs[0].Brotli != nil || outs[0].Gzip != nil || outs[0].ContentType != "font/woff2" {
		t.Errorf("woff2 output = %+v", outs)
	}
}

func TestFingerprint(t *testing.T) {
	all := Fingerprint(allMinify)
	if all != Fingerprint(allMinify) {
		t.Error("fingerprint is not stable")
	}
	for _, part := range []string{"process=", "minify=v", "parse=v", "brotli=v", "compress=v", "levels=11/9<=4Mi,9/9<=32Mi,5/6<=256Mi,3/5", "brwin=fit10-22", "max=536870912", "js=es2009", "css=3"} {
		if !strings.Contains(all, part) {
			t.Errorf("fingerprint %q lacks %q", all, part)
		}
	}
	seen := map[string]Options{}
	for _, opts := range []Options{{}, {MinifyJS: true}, {MinifyCSS: true}, allMinify, {MaxFileSize: 1 << 20}} {
		fp := Fingerprint(opts)
		if prev, dup := seen[fp]; dup {
			t.Errorf("options %+v and %+v share fingerprint %q", prev, opts, fp)
		}
		seen[fp] = opts
	}
	t.Log(all)
}

// Test binaries carry no dependency build info, so Fingerprint falls back to
// constants there (and in any binary built without module support); they
// must follow go.mod when a dependency is upgraded.
func TestFallbackVersionsMatchGoMod(t *testing.T) {
	goMod, err := os.ReadFile("../../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	required := map[string]string{}
	for _, line := range strings.Split(string(goMod), "\n") {
		if fields := strings.Fields(strings.TrimPrefix(strings.TrimSpace(line), "require ")); len(fields) >= 2 {
			required[fields[0]] = fields[1]
		}
	}
	for _, m := range outputModules {
		if got := required[m.path]; got != m.fallbackVersion {
			t.Errorf("%s: go.mod requires %q, fallback says %q", m.path, got, m.fallbackVersion)
		}
	}
}

func paths(outs []Output) []string {
	var ps []string
	for _, o := range outs {
		ps = append(ps, o.Path)
	}
	return ps
}

// TestFileRecoversPanics: a panic while processing a file (here from the
// shipped callback, standing in for a minifier or compressor bug) comes
// back as a *PanicError for that file, and the process goes on.
func TestFileRecoversPanics(t *testing.T) {
	_, _, err := File("boom.js", []byte("var a = 1;"), Options{MinifyJS: true}, func(string) bool { panic("minifier bug") })
	var p *PanicError
	if !errors.As(err, &p) || p.Path != "boom.js" || p.Value != "minifier bug" || !strings.Contains(p.Stack, "TestFileRecoversPanics") {
		t.Fatalf("File with a panicking step = %v", err)
	}
}
