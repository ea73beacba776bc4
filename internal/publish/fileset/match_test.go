package fileset

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// What patterns match is tested against minimatch 3 itself in
// TestMinimatchGoldens; these are the cases its generator cannot show.
func TestMatchSpecialForms(t *testing.T) {
	tests := []struct {
		pattern string
		match   []string
		noMatch []string
	}{
		// node-glob searches an absolute pattern from the file system root.
		{"/abs/*.js", nil, []string{"abs/a.js", "a.js"}},
		// node-glob turns negation off: a leading '!' is a literal character.
		{"!*.js", []string{"!a.js"}, []string{"a.js"}},
		{"#x.js", []string{"#x.js"}, nil},
		{"  dist/*.js ", []string{"dist/a.js"}, nil}, // trimmed
		{"dist//*.js", []string{"dist/a.js"}, nil},
		{"dist/./*.js", []string{"dist/a.js"}, nil},
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
		{"[[:digit:]]", 2, "POSIX classes such as [:alpha:] are not supported by minimatch 3"},
		{"../src/*.js", 0, "'..' would leave the base path"},
		{`a\`, 2, "trailing backslash"},
		{"{1..5000}", 0, "range {1..5000} has 5000 items; the limit is 1024"},
		{strings.Repeat("{a,b}", 11), 0, "braces expand to more than 1024 patterns"},
		{strings.Repeat("{a,a}", 30), 0, "braces expand to more than 1024 patterns"},
		{"é[", 2, "unclosed '['"},
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

// TestHostilePatternsAreBounded: a pattern with many "!(…)" cannot cost
// minutes per file. Its expression is bounded when it compiles, and its
// matching by a budget per pattern, charged over the whole release and
// cancellable.
func TestHostilePatternsAreBounded(t *testing.T) {
	// minimatch copies the rest of the segment once per negation: 2^40.
	if _, err := Compile(strings.Repeat("!(a|b)", 40)); err == nil || !strings.Contains(err.Error(), "too complex") {
		t.Errorf("Compile of 40 negations = %v, want too complex", err)
	}
	// Catastrophic for a backtracking matcher (JavaScript's): every split
	// of a run of a's into pieces of 1 to 60 is tried before failing.
	var alts []string
	for k := 1; k <= 60; k++ {
		alts = append(alts, strings.Repeat("a", k))
	}
	hostile := "+(" + strings.Join(alts, "|") + ")z"
	if _, err := Compile(hostile); err != nil {
		t.Fatalf("Compile(%q): %v", hostile, err)
	}
	paths := make([]string, 50)
	for i := range paths {
		paths[i] = strings.Repeat("a", 300+i) + ".js"
	}
	fileMap := []struct {
		BasePath string   `json:"basePath"`
		Files    []string `json:"files"`
	}{{Files: []string{hostile}}}
	_, err := applyBudget(context.Background(), fileMap, paths, 1_000_000)
	if !errors.Is(err, ErrTooExpensive) || !strings.Contains(err.Error(), hostile) {
		t.Errorf("a pattern over its budget: %v; want ErrTooExpensive naming the pattern", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := ApplyContext(ctx, fileMap, paths); !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled match: %v", err)
	}
	// Within the default budget, the same work completes.
	if got, err := Apply(fileMap, append(paths[:2:2], "aaaz")); err != nil || len(got) != 1 {
		t.Errorf("Apply within the budget: %v, %v", got, err)
	}
}
