// Package fileset selects the files of a release that a catalog fileMap
// publishes. Globs follow node-glob (minimatch) with its defaults, because
// that is what cdnjs catalog entries were written and tested against:
// '*', '**', '?', character classes, braces and extglobs, and wildcards do
// not match names starting with '.' unless the pattern spells the dot out.
package fileset

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Limits that keep a hostile or mistaken pattern from costing unbounded
// memory or time; real fileMap globs are far below them.
const (
	maxPatternBytes = 4096
	maxAlternatives = 1024
)

// Pattern is a compiled glob. It is safe for concurrent use.
type Pattern struct {
	source string
	// alternatives holds one segment list per brace expansion; a path
	// matches the pattern when it matches any of them.
	alternatives [][]segment
}

// segment is one '/'-separated piece of a pattern.
type segment struct {
	globstar bool     // "**" on its own: any number of path segments
	literal  string   // the exact text to compare when prog is nil
	prog     *program // set when the segment has wildcards
}

// SyntaxError reports a malformed pattern and where the problem is.
type SyntaxError struct {
	Pattern string
	// Column is the 1-based character position of the problem, or 0 when
	// the problem is the pattern as a whole.
	Column  int
	Problem string
}

func (e *SyntaxError) Error() string {
	if e.Column > 0 {
		return fmt.Sprintf("glob %q: %s at column %d", e.Pattern, e.Problem, e.Column)
	}
	return fmt.Sprintf("glob %q: %s", e.Pattern, e.Problem)
}

// syntaxError builds a SyntaxError for the byte offset at in pattern.
func syntaxError(pattern string, at int, format string, args ...any) *SyntaxError {
	return &SyntaxError{Pattern: pattern, Column: column(pattern, at), Problem: fmt.Sprintf(format, args...)}
}

// column turns a byte offset into a 1-based character column.
func column(s string, at int) int {
	if at > len(s) {
		at = len(s)
	}
	return utf8.RuneCountInString(s[:at]) + 1
}

// Compile parses a glob. Paths it is matched against are relative and
// '/'-separated; a leading "./" in the pattern is ignored, as node-glob
// resolves it against the directory being searched.
func Compile(pattern string) (*Pattern, error) {
	switch {
	case pattern == "":
		return nil, &SyntaxError{Pattern: pattern, Problem: "empty pattern"}
	case len(pattern) > maxPatternBytes:
		return nil, &SyntaxError{Pattern: pattern, Problem: fmt.Sprintf("pattern is %d bytes long; the limit is %d", len(pattern), maxPatternBytes)}
	case pattern[0] == '/':
		// node-glob searches an absolute pattern from the file system root,
		// not the base path: it selects nothing from a release.
		return &Pattern{source: pattern}, nil
	}
	if err := checkSyntax(pattern); err != nil {
		return nil, err
	}
	expanded, err := expandBraces(pattern)
	if err != nil {
		return nil, err
	}
	p := &Pattern{source: pattern}
	for _, alt := range expanded {
		for strings.HasPrefix(alt, "./") {
			alt = alt[2:]
		}
		segs, err := compileSegments(alt)
		if err != nil {
			// Braces can assemble what checkSyntax could not see, as in
			// "{,!}(" becoming "!(": report it within that expansion.
			problem := err.Error()
			var inner *SyntaxError
			if errors.As(err, &inner) {
				problem = fmt.Sprintf("%s at column %d", inner.Problem, inner.Column)
			}
			return nil, &SyntaxError{Pattern: pattern, Problem: fmt.Sprintf("in the brace expansion %q: %s", alt, problem)}
		}
		p.alternatives = append(p.alternatives, segs)
	}
	return p, nil
}

// String returns the pattern as written.
func (p *Pattern) String() string { return p.source }

// Match reports whether path, relative and '/'-separated, matches the
// pattern. Paths with empty, "." or ".." segments never match: they are not
// the clean file paths a release contains.
func (p *Pattern) Match(path string) bool {
	if path == "" {
		return false
	}
	parts := strings.Split(path, "/")
	for _, part := range parts {
		if part == "" || part == "." || part == ".." {
			return false
		}
	}
	for _, segs := range p.alternatives {
		if matchSegments(segs, parts) {
			return true
		}
	}
	return false
}

// compileSegments splits one brace-free pattern at '/' and compiles each
// piece.
func compileSegments(pattern string) ([]segment, error) {
	var segs []segment
	for _, text := range splitSegments(pattern) {
		if text == "**" {
			// "**/**" means the same as "**"; collapsing keeps matching linear.
			if len(segs) > 0 && segs[len(segs)-1].globstar {
				continue
			}
			segs = append(segs, segment{globstar: true})
			continue
		}
		nodes, err := parseSegment(text)
		if err != nil {
			return nil, err
		}
		if lit, ok := literalText(nodes); ok {
			segs = append(segs, segment{literal: lit})
			continue
		}
		segs = append(segs, segment{prog: compileProgram(nodes)})
	}
	return segs, nil
}

// splitSegments splits at every '/' that is not escaped. checkSyntax has
// already rejected '/' inside classes and extglobs.
func splitSegments(pattern string) []string {
	var parts []string
	start := 0
	for i := 0; i < len(pattern); i++ {
		switch pattern[i] {
		case '\\':
			i++
		case '/':
			parts = append(parts, pattern[start:i])
			start = i + 1
		}
	}
	return append(parts, pattern[start:])
}

// matchSegments matches pattern segments against path segments; '**' makes
// this a small dynamic program rather than backtracking, so patterns with
// many globstars stay linear in the path length.
func matchSegments(segs []segment, parts []string) bool {
	hasGlobstar := false
	for _, s := range segs {
		if s.globstar {
			hasGlobstar = true
			break
		}
	}
	if !hasGlobstar {
		if len(segs) != len(parts) {
			return false
		}
		for i := range segs {
			if !segs[i].match(parts[i]) {
				return false
			}
		}
		return true
	}
	// ok[i][j]: segs[i:] matches parts[j:].
	cols := len(parts) + 1
	ok := make([]bool, (len(segs)+1)*cols)
	ok[len(segs)*cols+len(parts)] = true
	for i := len(segs) - 1; i >= 0; i-- {
		for j := len(parts); j >= 0; j-- {
			var m bool
			if segs[i].globstar {
				// zero segments, or one more segment that is not a dot name
				m = ok[(i+1)*cols+j] ||
					(j < len(parts) && !strings.HasPrefix(parts[j], ".") && ok[i*cols+j+1])
			} else {
				m = j < len(parts) && ok[(i+1)*cols+j+1] && segs[i].match(parts[j])
			}
			ok[i*cols+j] = m
		}
	}
	return ok[0]
}

func (s *segment) match(part string) bool {
	if s.prog == nil {
		return s.literal == part
	}
	return s.prog.match(part)
}
