package transform

import "testing"

func TestMinifiedPath(t *testing.T) {
	cases := []struct {
		path, twin string
		ok         bool
	}{
		{"a/b.js", "a/b.min.js", true},
		{"x.mjs", "x.min.mjs", true},
		{"s.css", "s.min.css", true},
		{"dist/jquery.slim.js", "dist/jquery.slim.min.js", true},
		{"Lib.JS", "Lib.min.JS", true},
		{"x.min.js", "", false},
		{"a/b.min.mjs", "", false},
		{"s.min.css", "", false},
		{"S.MIN.CSS", "", false},
		{"lib-min.js", "", false},
		{"min.js", "min.min.js", true},
		{"a/.js", "", false},
		{".js", "", false},
		{"x.cjs", "", false},
		{"x.ts", "", false},
		{"types.d.ts", "", false},
		{"x.js.map", "", false},
		{"x.json", "", false},
		{"README", "", false},
	}
	for _, c := range cases {
		twin, ok := MinifiedPath(c.path)
		if twin != c.twin || ok != c.ok {
			t.Errorf("MinifiedPath(%q) = %q, %v; want %q, %v", c.path, twin, ok, c.twin, c.ok)
		}
	}
}

func TestContentType(t *testing.T) {
	cases := map[string]string{
		"a/b.js":          "application/javascript; charset=utf-8",
		"x.mjs":           "application/javascript; charset=utf-8",
		"x.cjs":           "application/javascript; charset=utf-8",
		"UPPER.JS":        "application/javascript; charset=utf-8",
		"s.css":           "text/css; charset=utf-8",
		"x.js.map":        "application/json; charset=utf-8",
		"package.json":    "application/json; charset=utf-8",
		"logo.svg":        "image/svg+xml; charset=utf-8",
		"index.html":      "text/html; charset=utf-8",
		"index.htm":       "text/html; charset=utf-8",
		"notes.txt":       "text/plain; charset=utf-8",
		"README.md":       "text/markdown; charset=utf-8",
		"feed.xml":        "application/xml; charset=utf-8",
		"index.d.ts":      "text/plain; charset=utf-8",
		"font.woff2":      "font/woff2",
		"font.woff":       "font/woff",
		"font.ttf":        "font/ttf",
		"font.otf":        "font/otf",
		"font.eot":        "application/vnd.ms-fontobject",
		"mod.wasm":        "application/wasm",
		"a.png":           "image/png",
		"a.jpg":           "image/jpeg",
		"a.jpeg":          "image/jpeg",
		"a.gif":           "image/gif",
		"a.webp":          "image/webp",
		"a.avif":          "image/avif",
		"favicon.ico":     "image/x-icon",
		"a.zip":           "application/zip",
		"a.tgz":           "application/gzip",
		"clip.mp4":        "video/mp4",
		"LICENSE":         "application/octet-stream",
		"x.unknownext":    "application/octet-stream",
		"dir.with.dots/x": "application/octet-stream",
	}
	for path, want := range cases {
		if got := ContentType(path); got != want {
			t.Errorf("ContentType(%q) = %q, want %q", path, got, want)
		}
	}
}

func TestCompressible(t *testing.T) {
	yes := []string{"a.js", "a.mjs", "a.cjs", "a.css", "a.js.map", "a.json", "a.svg", "a.html", "a.htm",
		"a.txt", "a.md", "a.xml", "a.ts", "types.d.ts", "a.eot", "a.ttf", "a.otf", "a.wasm", "A.JS"}
	no := []string{"a.woff", "a.woff2", "a.png", "a.jpg", "a.jpeg", "a.gif", "a.webp", "a.avif",
		"a.zip", "a.gz", "a.br", "a.tgz", "a.mp3", "a.mp4", "LICENSE", "a.unknownext"}
	for _, p := range yes {
		if !Compressible(p) {
			t.Errorf("Compressible(%q) = false, want true", p)
		}
	}
	for _, p := range no {
		if Compressible(p) {
			t.Errorf("Compressible(%q) = true, want false", p)
		}
	}
}

// Every text type must say its charset, or browsers guess it from the page.
func TestTextTypesDeclareCharset(t *testing.T) {
	for ext, ft := range fileTypes {
		isText := len(ft.contentType) >= 5 && ft.contentType[:5] == "text/"
		if isText && ft.contentType[len(ft.contentType)-len("; charset=utf-8"):] != "; charset=utf-8" {
			t.Errorf("%s: text type %q without charset", ext, ft.contentType)
		}
	}
}

func TestWantsTwin(t *testing.T) {
	shipped := map[string]bool{"a.js": true, "a.min.js": true, "b.js": true, "s.css": true}
	for _, tc := range []struct {
		opts Options
		path string
		want bool
	}{
		{Options{MinifyJS: true}, "b.js", true},
		{Options{MinifyJS: true}, "a.js", false}, // the release ships a.min.js
		{Options{MinifyJS: false, MinifyCSS: true}, "b.js", false},
		{Options{MinifyCSS: true}, "s.css", true},
		{Options{MinifyJS: true}, "s.css", false},
		{Options{MinifyJS: true, MinifyCSS: true}, "img.png", false},
		{Options{MinifyJS: true}, "a.min.js", false},
	} {
		if got := tc.opts.WantsTwin(tc.path, 100, shipped); got != tc.want {
			t.Errorf("%+v WantsTwin(%s) = %v, want %v", tc.opts, tc.path, got, tc.want)
		}
	}
}
