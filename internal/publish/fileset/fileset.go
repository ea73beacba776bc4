// Package fileset selects the files of a release that a catalog fileMap
// publishes. Globs follow node-glob (minimatch) with its defaults, because
// that is what cdnjs catalog entries were written and tested against:
// '*', '**', '?', character classes, braces and extglobs, and wildcards do
// not match names starting with '.' unless the pattern spells the dot out.
package fileset

import (
	"context"
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
	// DefaultBudget is the matching work one pattern may cost over a whole
	// release (see Budget); real fileMaps over 100,000-file releases use a
	// small fraction of it.
	DefaultBudget = 200_000_000
)

// Pattern is a compiled glob. It is safe for concurrent use.
type Pattern struct {
	source string
	// alternatives holds one segment list per brace expansion; a path
	// matches the pattern when it matches any of them.
	alternatives [][]segment
}

// segment is one '/'-separated piece of a pattern, as minimatch splits it.
type segment struct {
	globstar bool    // "**" on its own: any number of path segments
	literal  string  // the exact text to compare when re is nil
	re       *rxProg // the segment's expression, when it has magic
	raw      string  // the segment as written, for node-glob's dot rule
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

// Compile parses a glob. It selects exactly what node-glob 7 (minimatch 3,
// with node-glob's options: no negation, no comments) selects, which is
// cdnjs's reference: the pattern is trimmed, braces expanded, split at
// runs of '/', and each segment is "**", literal text or minimatch's
// regular expression for it; a wildcard segment never matches a name
// starting with '.' unless the segment itself starts with '.'. An absolute
// pattern selects nothing (node-glob looks for it from the file system
// root). Compile refuses, with the column, what minimatch would silently
// read as something else: unclosed brackets, braces or extglobs, '/'
// inside an extglob, reversed ranges and POSIX classes.
func Compile(pattern string) (*Pattern, error) {
	switch {
	case pattern == "":
		return nil, &SyntaxError{Pattern: pattern, Problem: "empty pattern"}
	case len(pattern) > maxPatternBytes:
		return nil, &SyntaxError{Pattern: pattern, Problem: fmt.Sprintf("pattern is %d bytes long; the limit is %d", len(pattern), maxPatternBytes)}
	}
	if err := checkSyntax(pattern); err != nil {
		return nil, err
	}
	trimmed := strings.TrimSpace(pattern)
	if trimmed == "" {
		return nil, &SyntaxError{Pattern: pattern, Problem: "empty pattern"}
	}
	expanded := []string{trimmed}
	if hasBraceGroup(trimmed) {
		var err error
		if expanded, err = expandBraces(trimmed); err != nil {
			var se *SyntaxError
			if errors.As(err, &se) {
				se.Pattern = pattern
			}
			return nil, err
		}
	}
	p := &Pattern{source: pattern}
	for _, alt := range expanded {
		segs, err := compileSegments(alt)
		if err != nil {
			return nil, &SyntaxError{Pattern: pattern, Problem: err.Error()}
		}
		p.alternatives = append(p.alternatives, segs)
	}
	return p, nil
}

// hasBraceGroup is minimatch's test for whether to expand braces at all:
// a '{' with a '}' after it and no '{' between.
func hasBraceGroup(s string) bool {
	open := -1
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '{':
			open = i
		case '}':
			if open >= 0 {
				return true
			}
		}
	}
	return false
}

// String returns the pattern as written.
func (p *Pattern) String() string { return p.source }

// Match reports whether path, relative and '/'-separated, matches the
// pattern, within DefaultBudget. Paths with empty, "." or ".." segments
// never match: they are not the clean file paths a release contains.
func (p *Pattern) Match(path string) bool {
	ok, _ := p.MatchBudget(path, NewBudget(context.Background(), DefaultBudget))
	return ok
}

// MatchBudget is Match charging its work to b; it fails when b runs out or
// its context ends.
func (p *Pattern) MatchBudget(path string, b *Budget) (bool, error) {
	if path == "" {
		return false, nil
	}
	parts := strings.Split(path, "/")
	for _, part := range parts {
		if part == "" || part == "." || part == ".." {
			return false, nil
		}
	}
	for _, segs := range p.alternatives {
		ok, err := matchSegments(segs, parts, b)
		if ok || err != nil {
			return ok, err
		}
	}
	return false, nil
}

// compileSegments splits one brace-free pattern at runs of '/' and compiles
// each piece as minimatch does.
func compileSegments(pattern string) ([]segment, error) {
	var segs []segment
	for _, text := range splitSlashes(pattern) {
		switch {
		case text == "**":
			// "**/**" means the same as "**"; collapsing keeps matching linear.
			if len(segs) > 0 && segs[len(segs)-1].globstar {
				continue
			}
			segs = append(segs, segment{globstar: true, raw: text})
			continue
		case text == "":
			segs = append(segs, segment{raw: text})
			continue
		case text == ".":
			// node-glob resolves "./dist" and "dist/./x.js" against the folder
			// searched, and cdnjs cleans the path it returns.
			continue
		case text == "..":
			return nil, errors.New("'..' would leave the base path")
		}
		src, magic, tooBig := mmParseBounded(text, false)
		if tooBig {
			return nil, errProgramSize
		}
		if !magic {
			segs = append(segs, segment{literal: mmUnescape(text), raw: text})
			continue
		}
		prog, err := compileJSRegex("^" + src + "$")
		if err != nil {
			return nil, err
		}
		segs = append(segs, segment{re: prog, raw: text})
	}
	return segs, nil
}

// splitSlashes is minimatch's split at /\/+/.
func splitSlashes(pattern string) []string {
	var parts []string
	start := 0
	for i := 0; i < len(pattern); i++ {
		if pattern[i] != '/' {
			continue
		}
		parts = append(parts, pattern[start:i])
		for i+1 < len(pattern) && pattern[i+1] == '/' {
			i++
		}
		start = i + 1
	}
	return append(parts, pattern[start:])
}

// matchSegments matches pattern segments against path segments; '**' makes
// this a small dynamic program rather than backtracking, so patterns with
// many globstars stay linear in the path length, and each segment is
// matched against each name at most once.
func matchSegments(segs []segment, parts []string, b *Budget) (bool, error) {
	hasGlobstar := false
	for _, s := range segs {
		if s.globstar {
			hasGlobstar = true
			break
		}
	}
	if !hasGlobstar {
		if len(segs) != len(parts) {
			return false, nil
		}
		for i := range segs {
			if ok, err := segs[i].match(parts[i], b); !ok || err != nil {
				return false, err
			}
		}
		return true, nil
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
			} else if j < len(parts) && ok[(i+1)*cols+j+1] {
				var err error
				if m, err = segs[i].match(parts[j], b); err != nil {
					return false, err
				}
			}
			ok[i*cols+j] = m
		}
	}
	return ok[0], nil
}

func (s *segment) match(part string, b *Budget) (bool, error) {
	if s.re == nil {
		return s.literal == part, nil
	}
	// node-glob offers a wildcard segment only the names that do not start
	// with '.', unless the segment as written starts with one.
	if strings.HasPrefix(part, ".") && !strings.HasPrefix(s.raw, ".") {
		return false, nil
	}
	return matchRegex(s.re, part, b)
}

// SelectsNothing reports a pattern that can match no release path: an
// absolute one, or one where every brace expansion has a segment minimatch
// 3 turns into an invalid expression (it does for three or more "!(…)" in
// one segment), which then matches nothing.
func (p *Pattern) SelectsNothing() bool {
	for _, segs := range p.alternatives {
		dead := len(segs) > 0 && segs[0].raw == "" && !segs[0].globstar
		for _, s := range segs {
			dead = dead || (s.re != nil && s.re.never)
		}
		if !dead {
			return false
		}
	}
	return true
}
