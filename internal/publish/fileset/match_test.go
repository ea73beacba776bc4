package fileset

import (
	"errors"
	"strings"
	"testing"
)

// The expectations are node-glob/minimatch results with default options.
func TestMatch(t *testing.T) {
	tests := []struct {
		pattern string
		match   []string
		noMatch []string
	}{
		{"*.js", []string{"a.js", "jquery.min.js"}, []string{"a/b.js", ".hidden.js", ".js", "a.css", "a.jsx"}},
		{"**/*.js", []string{"a.js", "a/b/c.js", "dist/x.min.js"}, []string{"a/b/c.css", ".a/b.js", "a/.b.js", "a/.git/c.js"}},
		{"**", []string{"a", "a/b", "a/b/c.js"}, []string{".a", "a/.b", ".git/config"}},
		{"dist/**", []string{"dist/a.js", "dist/a/b/c.css"}, []string{"dist/.a", "lib/a.js"}},
		{"a/**/b", []string{"a/b", "a/x/b", "a/x/y/b"}, []string{"a/.x/b", "a/x/c", "b"}},
		{"a/**/**/b", []string{"a/b", "a/x/y/b"}, []string{"a/x/y/c"}},
		{"a/**b", []string{"a/b", "a/xb"}, []string{"a/x/b"}},
		{"**/.*", []string{".eslintrc", "a/.x"}, []string{"a/b"}},
		{".*.js", []string{".hidden.js"}, []string{"a.js"}},
		{"dist/**/*.@(js|css)", []string{"dist/a.js", "dist/x/y/a.css"}, []string{"dist/a.map", "lib/a.js", "dist/a.jsx"}},
		{"!(*.min).js", []string{"a.js", "jquery.js"}, []string{"a.min.js", ".a.js", "a/b.js"}},
		{"!(foo)*", []string{"bar", "fo"}, []string{"foo", "foobar"}},
		{"*.!(js)", []string{"a.css", "a.b.js"}, []string{"a.js"}},
		{"a/!(b)/c", []string{"a/x/c", "a/bb/c"}, []string{"a/b/c", "a/.x/c"}},
		{"a!(b)c", []string{"ac", "abbc", "axc"}, []string{"abc"}},
		{"{dist,lib}/*.js", []string{"dist/a.js", "lib/b.js"}, []string{"src/a.js", "dist/a/b.js"}},
		{"{a,b{c,d}}.js", []string{"a.js", "bc.js", "bd.js"}, []string{"b.js", "bcd.js"}},
		{"a{,.min}.js", []string{"a.js", "a.min.js"}, []string{"a.max.js"}},
		{"{a}.js", []string{"{a}.js"}, []string{"a.js"}},
		{"{dist/**,lib}/*.js", []string{"dist/a.js", "dist/x/a.js", "lib/a.js"}, []string{"lib/x/a.js"}},
		{"a{1..3}.js", []string{"a1.js", "a2.js", "a3.js"}, []string{"a4.js", "a0.js"}},
		{"v{01..10..3}", []string{"v01", "v04", "v07", "v10"}, []string{"v1", "v02"}},
		{"{3..1}", []string{"1", "2", "3"}, []string{"0"}},
		{"x{a..c}", []string{"xa", "xb", "xc"}, []string{"xd"}},
		{"@({a,b}|c).js", []string{"a.js", "b.js", "c.js"}, []string{"d.js"}},
		{"[!a]*.js", []string{"b.js", "bcd.js"}, []string{"abc.js", ".b.js", "a.js"}},
		{"[^a]*.js", []string{"b.js"}, []string{"a.js"}},
		{"[a-c]?.js", []string{"ax.js", "cz.js"}, []string{"dx.js", "a.js", "axy.js"}},
		{"[]]", []string{"]"}, []string{"a"}},
		{"[!]]", []string{"a"}, []string{"]"}},
		{"[a-]", []string{"a", "-"}, []string{"b"}},
		{"[.]a", nil, []string{".a"}},
		{"[[:digit:]]*.js", []string{"1a.js", "9.js"}, []string{"a1.js"}},
		{"[[:upper:][:digit:]]", []string{"A", "7"}, []string{"a"}},
		{"a?c", []string{"abc", "a.c"}, []string{"ac", "a/c", "abbc"}},
		{"?.js", []string{"a.js", "é.js"}, []string{".js", "ab.js"}},
		{"x*(a|b)y", []string{"xy", "xaby", "xbbbay"}, []string{"xcy", "xay.z"}},
		{"+(a|b)c", []string{"ac", "abbac"}, []string{"c", "adc"}},
		{"?(a|b)c", []string{"c", "ac", "bc"}, []string{"abc"}},
		{"@(a|b)c", []string{"ac", "bc"}, []string{"c", "abc"}},
		{"+(*.js|*.css)", []string{"a.js", "a.css", "a.jsb.css"}, []string{".a.js", "a.map"}},
		{"@(.a|b)", []string{".a", "b"}, []string{".b"}},
		{"*(a|@(b|c))d", []string{"d", "abcd"}, []string{"aed"}},
		{`\*.js`, []string{"*.js"}, []string{"a.js"}},
		{`a\{b,c}`, []string{"a{b,c}"}, []string{"ab"}},
		{"jquery(1).js", []string{"jquery(1).js"}, []string{"jquery1.js"}},
		{"./dist/*.js", []string{"dist/a.js"}, []string{"a.js"}},
		{"a/b", []string{"a/b"}, []string{"a/b/c", "a", "A/b"}},
		{"*", []string{"a", "a.js"}, []string{"a/b", ".a"}},
		{"*/", nil, []string{"a"}},
		{"a*a*a*a*a*a*a*a*b", []string{"aaaaaaaab", "aaaaaaaaxb"}, []string{strings.Repeat("a", 200)}},
	}
	for _, tt := range tests {
		p, err := Compile(tt.pattern)
		if err != nil {
			t.Errorf("Compile(%q): %v", tt.pattern, err)
			continue
		}
		for _, path := range tt.match {
			if !p.Match(path) {
				t.Errorf("%q should match %q", tt.pattern, path)
			}
		}
		for _, path := range tt.noMatch {
			if p.Match(path) {
				t.Errorf("%q should not match %q", tt.pattern, path)
			}
		}
	}
}

func TestMatchRejectsUncleanPaths(t *testing.T) {
	p, err := Compile("**")
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"", "a//b", "/a", "a/", "./a", "a/../b", ".."} {
		if p.Match(path) {
			t.Errorf("%q should not match unclean path %q", "**", path)
		}
	}
}

func TestCompileErrors(t *testing.T) {
	tests := []struct {
		pattern string
		column  int
		problem string
	}{
		{"", 0, "empty pattern"},
		{"dist/[abc", 6, "unclosed '['"},
		{"[a/b]", 1, "unclosed '['"},
		{"a{b,c", 2, "unclosed '{'"},
		{"a/@(b|c", 3, "unclosed '@('"},
		{"!(x", 1, "unclosed '!('"},
		{"x/{a,{b}", 3, "unclosed '{'"},
		{"@(a|{b)}", 5, "unclosed '{' (found ')' at column 7 first)"},
		{"@(a/b)", 4, "'/' inside the extglob '@(' opened at column 1"},
		{"[z-a]", 2, "reversed range z-a"},
		{"[[:foo:]]", 2, "unknown character class [:foo:]"},
		{`a\`, 2, "trailing backslash"},
		{"/abs/*.js", 1, "absolute pattern"},
		{"!*.js", 1, "negated pattern is not supported"},
		{"{1..5000}", 0, "range {1..5000} has 5000 items; the limit is 1024"},
		{strings.Repeat("{a,b}", 11), 0, "braces expand to more than 1024 patterns"},
		{strings.Repeat("{a,a}", 30), 0, "braces expand to more than 1024 patterns"},
		{"é[", 2, "unclosed '['"},
		// Braces can assemble an extglob opener; the column is then in the
		// expansion named by the message.
		{"{,!}(", 0, `in the brace expansion "!(": unclosed '!(' at column 1`},
	}
	for _, tt := range tests {
		_, err := Compile(tt.pattern)
		var syntaxErr *SyntaxError
		if !errors.As(err, &syntaxErr) {
			t.Errorf("Compile(%q) = %v, want a *SyntaxError", tt.pattern, err)
			continue
		}
		if syntaxErr.Column != tt.column || !strings.Contains(syntaxErr.Problem, tt.problem) {
			t.Errorf("Compile(%q): got %q at column %d, want %q at column %d", tt.pattern, syntaxErr.Problem, syntaxErr.Column, tt.problem, tt.column)
		}
		if !strings.Contains(err.Error(), tt.pattern) {
			t.Errorf("Compile(%q): error %q does not name the pattern", tt.pattern, err)
		}
	}
}

func TestSyntaxErrorMessage(t *testing.T) {
	_, err := Compile("dist/*.{js,css")
	want := `glob "dist/*.{js,css": unclosed '{' at column 8`
	if err == nil || err.Error() != want {
		t.Errorf("got %v, want %s", err, want)
	}
}

func FuzzCompile(f *testing.F) {
	for _, seed := range []string{
		"**/*.js", "dist/**/*.@(js|css)", "!(*.min).js", "{dist,lib}/*.js", "[!a]*.js",
		"a{1..3}", "*(a|!(b|?(c)))d", "[[:alpha:]-z]", `\[*\]`, "{a,{b,{c,d}}}/**", "*(!(?(a)))",
		"+(a|*)", "@(a|{b)}", "[", "{", "@(",
	} {
		f.Add(seed, "dist/a/b.min.js")
	}
	f.Fuzz(func(t *testing.T, pattern, path string) {
		p, err := Compile(pattern)
		if err != nil {
			if p != nil {
				t.Fatalf("Compile(%q) returned a pattern along with error %v", pattern, err)
			}
			return
		}
		p.Match(path)
	})
}
