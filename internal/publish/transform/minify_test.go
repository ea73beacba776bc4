package transform

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"github.com/tdewolff/parse/v2"
	jsparse "github.com/tdewolff/parse/v2/js"
)

const modernJS = `/*! modern-lib v1.0.0 | MIT */
import { helper } from './helper.js';

export class Counter {
  #count = 0;
  static #instances = 0;

  constructor(options) {
    this.step = options?.step ?? 1;
    Counter.#instances++;
  }

  increment() {
    this.#count += this.step;
    return ` + "`count is ${this.#count}`" + `;
  }

  #privateHelper() { return helper(this.#count); }
}

export async function loadConfig(url) {
  const response = await fetch(url);
  const data = await response.json();
  return data?.config?.value ?? { fallback: true };
}

export default Counter;
`

func TestMinifyKeepsModernSyntax(t *testing.T) {
	out, err := Minify("modern.mjs", []byte(modernJS))
	if err != nil {
		t.Fatal(err)
	}
	if len(out) >= len(modernJS) {
		t.Errorf("minified %d bytes from %d: nothing saved", len(out), len(modernJS))
	}
	for _, want := range []string{"?.", "??", "class", "export", "import", "async", "await", "`"} {
		if !bytes.Contains(out, []byte(want)) {
			t.Errorf("minified output lost %q:\n%s", want, out)
		}
	}
	// Private names may be shortened (they are class-scoped) but must remain
	// private fields and methods.
	if !regexp.MustCompile(`#[A-Za-z_$][\w$]*=0`).Match(out) || !regexp.MustCompile(`this\.#[A-Za-z_$]`).Match(out) {
		t.Errorf("minified output lost private fields:\n%s", out)
	}
	if !bytes.HasPrefix(out, []byte("/*! modern-lib v1.0.0 | MIT */")) {
		t.Errorf("license comment not kept at the start:\n%s", out)
	}
	if _, err := jsparse.Parse(parse.NewInputBytes(bytes.Clone(out)), jsparse.Options{}); err != nil {
		t.Errorf("minified output does not parse: %v\n%s", err, out)
	}
}

func TestMinifyKeepsLicenseComments(t *testing.T) {
	cases := []struct {
		name, src string
		want      []string
	}{
		{"bang", "/*! Foo v1 | MIT */\nvar answer = 42;\n", []string{"/*! Foo v1 | MIT */"}},
		{"bang inside function", "(function () {\n  /*! inner notice */\n  var value = 1;\n  return value;\n})();\n", []string{"/*! inner notice */"}},
		{"jsdoc @license kept verbatim", "/**\n * @license React v18\n * Copyright Meta\n */\n'use strict';\nvar x = 1;\n", []string{"/**\n * @license React v18\n * Copyright Meta\n */"}},
		{"@preserve after a line comment", "// build 7\n/* @preserve Bar (c) 2024 */\nvar y = 2;\n", []string{"/* @preserve Bar (c) 2024 */"}},
		{"two leading notices", "/*! first */\n/** @license second */\nvar z = 3;\n", []string{"/*! first */", "/** @license second */"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, err := Minify("lib.js", []byte(c.src))
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range c.want {
				if !bytes.Contains(out, []byte(want)) {
					t.Errorf("output lost %q:\n%s", want, out)
				}
			}
		})
	}
}

func TestMinifyCSS(t *testing.T) {
	src := "/*! theme v2 | MIT */\n:root {\n  --main-color: #ff0000;\n}\n.card {\n  color: var(--main-color);\n  & .title { margin: 0px 0px; }\n}\n@media (min-width: 640px) {\n  .card { padding: 1.50rem; }\n}\n"
	out, err := Minify("theme.css", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	// The CSS minifier keeps bang comments but trims the whitespace inside.
	for _, want := range []string{"/*!theme v2 | MIT*/", "--main-color:", "var(--main-color)", "& .title", "@media"} {
		if !bytes.Contains(out, []byte(want)) {
			t.Errorf("minified CSS lost %q:\n%s", want, out)
		}
	}
	if len(out) >= len(src) {
		t.Errorf("minified %d bytes from %d", len(out), len(src))
	}
}

func TestMinifyErrors(t *testing.T) {
	cases := []struct{ name, path, src, reason string }{
		{"syntax error", "broken.js", "function broken( {\n", "expected"},
		{"larger output", "tail.js", "//! x", "larger than input"},
		{"unsupported type", "data.json", "{}", "no minifier"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, err := Minify(c.path, []byte(c.src))
			if err == nil {
				t.Fatalf("Minify(%q) = %q, want error", c.src, out)
			}
			if !strings.Contains(err.Error(), c.reason) || !strings.Contains(err.Error(), c.path) {
				t.Errorf("error %q should name %q and %q", err, c.path, c.reason)
			}
		})
	}
}

// The minifiers parse their input in place and rewrite parts of it; the
// caller's bytes are the published original and must stay untouched.
func TestMinifyDoesNotModifyInput(t *testing.T) {
	for _, c := range []struct{ path, src string }{
		{"a.js", "'use strict';\n/** @license X */\nvar s = 'it' + \"s\";\n"},
		{"b.js", "/* @license Y */ var a = 1;"},
		{"c.css", "/* @license Z */ .a { color: #ff0000 }"},
	} {
		data := []byte(c.src)
		// Spare capacity is where the parser would write its NUL sentinel.
		withCap := append(make([]byte, 0, len(data)+8), data...)
		if _, err := Minify(c.path, withCap); err != nil {
			t.Fatalf("%s: %v", c.path, err)
		}
		if string(withCap) != c.src || string(withCap[:len(data)+8][len(data):]) != string(make([]byte, 8)) {
			t.Errorf("%s: input modified: %q", c.path, withCap[:cap(withCap)])
		}
	}
}

func TestMinifyShebang(t *testing.T) {
	out, err := Minify("cli.js", []byte("#!/usr/bin/env node\n'use strict';\nconsole.log( 1 + 2 );\n"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "#!/usr/bin/env node\n\"use strict\";console.log(1+2)"; string(out) != want {
		t.Errorf("got %q, want %q", out, want)
	}
}

// Old engines reject raw U+2028/U+2029 in string literals; the minifier
// would unescape them.
func TestMinifyKeepsLineSeparatorsEscaped(t *testing.T) {
	out, err := Minify("a.js", []byte(`var separators = ['\u2028', '\u2029'];`))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(out, []byte("\u2028")) || bytes.Contains(out, []byte("\u2029")) {
		t.Errorf("raw line separator in output: %q", out)
	}
	if !bytes.Contains(out, []byte(`\u2028`)) || !bytes.Contains(out, []byte(`\u2029`)) {
		t.Errorf("escapes lost: %q", out)
	}
}

// ES5 input must stay ES5: the minifier may not introduce newer syntax.
func TestMinifyDoesNotIntroduceNewerSyntax(t *testing.T) {
	src := "var a = obj !== null && obj !== void 0 ? obj : fallback;\ntry { run() } catch (e) { }\nvar s = 'line\\n' + \"it's \\\"x\\\"\";\n"
	out, err := Minify("es5.js", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	for _, newer := range []string{"??", "`", "catch{"} {
		if bytes.Contains(out, []byte(newer)) {
			t.Errorf("ES5 input minified to newer syntax %q: %s", newer, out)
		}
	}
}

func TestMinifyCorpus(t *testing.T) {
	corpus := generateJSCorpus(100<<10, 1)
	out, err := Minify("corpus.js", corpus)
	if err != nil {
		t.Fatal(err)
	}
	if ratio := float64(len(out)) / float64(len(corpus)); ratio > 0.7 {
		t.Errorf("corpus minified to %.0f%% of its size; generator or minifier is off", 100*ratio)
	}
}
