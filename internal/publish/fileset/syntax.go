package fileset

import (
	"strings"
	"unicode/utf8"
)

// isExtglobType reports whether c followed by '(' opens an extglob.
func isExtglobType(c byte) bool {
	switch c {
	case '@', '?', '*', '+', '!':
		return true
	}
	return false
}

// opener is a '{' or extglob "X(" that checkSyntax has not seen closed yet.
type opener struct {
	text string // "{" or the two-character extglob opener, e.g. "@("
	at   int    // byte offset in the pattern
}

// checkSyntax walks the whole pattern once, before brace expansion, so that
// every error carries a column in the pattern as the user wrote it.
func checkSyntax(pattern string) error {
	var open []opener
	// innermost returns the most recent unclosed opener of the given kind.
	innermost := func(brace bool) (opener, bool) {
		for i := len(open) - 1; i >= 0; i-- {
			if (open[i].text == "{") == brace {
				return open[i], true
			}
		}
		return opener{}, false
	}
	for i := 0; i < len(pattern); {
		c := pattern[i]
		switch {
		case c == '\\':
			if i+1 >= len(pattern) {
				return syntaxError(pattern, i, "trailing backslash escapes nothing")
			}
			_, size := utf8.DecodeRuneInString(pattern[i+1:])
			i += 1 + size
			continue
		case c == '[':
			_, end, err := parseClass(pattern, i)
			if err != nil {
				return err
			}
			i = end
			continue
		case isExtglobType(c) && i+1 < len(pattern) && pattern[i+1] == '(':
			open = append(open, opener{text: pattern[i : i+2], at: i})
			i += 2
			continue
		case c == '{':
			open = append(open, opener{text: "{", at: i})
		case c == '}' || c == ')':
			brace := c == '}'
			if len(open) > 0 && (open[len(open)-1].text == "{") == brace {
				open = open[:len(open)-1]
				break
			}
			if _, ok := innermost(brace); ok {
				top := open[len(open)-1]
				return syntaxError(pattern, top.at, "unclosed '%s' (found '%c' at column %d first)", top.text, c, column(pattern, i))
			}
			// Nothing of its kind is open: a literal '}' or ')', as in
			// "jquery(1).js".
		case c == '/':
			if ext, ok := innermost(false); ok {
				return syntaxError(pattern, i, "'/' inside the extglob '%s' opened at column %d; an extglob cannot span path segments", ext.text, column(pattern, ext.at))
			}
		}
		i++
	}
	if len(open) > 0 {
		top := open[len(open)-1]
		return syntaxError(pattern, top.at, "unclosed '%s'", top.text)
	}
	return nil
}

// parseClass checks the bracket expression starting at pattern[start] ==
// '[' and returns the offset just past its closing ']'. A ']' right after
// the opening (or after '!'/'^') is a member, as in shells.
func parseClass(pattern string, start int) (struct{}, int, *SyntaxError) {
	i := start + 1
	if i < len(pattern) && (pattern[i] == '!' || pattern[i] == '^') {
		i++
	}
	// A class cannot span path segments, so it must close before any '/'.
	segmentEnd := strings.IndexByte(pattern[i:], '/')
	if segmentEnd < 0 {
		segmentEnd = len(pattern)
	} else {
		segmentEnd += i
	}
	unclosed := func() *SyntaxError { return syntaxError(pattern, start, "unclosed '['") }
	first := true
	for {
		if i >= segmentEnd {
			return struct{}{}, 0, unclosed()
		}
		if pattern[i] == ']' && !first {
			return struct{}{}, i + 1, nil
		}
		first = false
		if strings.HasPrefix(pattern[i:segmentEnd], "[:") && strings.Contains(pattern[i+2:segmentEnd], ":]") {
			// minimatch 3 has no POSIX classes: "[[:digit:]]" would be the
			// characters "[:digt" followed by a literal "]".
			return struct{}{}, 0, syntaxError(pattern, i, "POSIX classes such as [:alpha:] are not supported by minimatch 3, cdnjs's matcher; list the characters, e.g. [0-9]")
		}
		lo, size, ok := classMember(pattern, i, segmentEnd)
		if !ok {
			return struct{}{}, 0, unclosed()
		}
		memberAt := i
		i += size
		if i+1 < segmentEnd && pattern[i] == '-' && pattern[i+1] != ']' {
			hi, size, ok := classMember(pattern, i+1, segmentEnd)
			if !ok {
				return struct{}{}, 0, unclosed()
			}
			if hi < lo {
				return struct{}{}, 0, syntaxError(pattern, memberAt, "reversed range %s in character class", pattern[memberAt:i+1+size])
			}
			i += 1 + size
		}
	}
}

// classMember decodes one possibly escaped character of a class.
func classMember(pattern string, i, end int) (r rune, size int, ok bool) {
	if pattern[i] == '\\' {
		if i+1 >= end {
			return 0, 0, false
		}
		r, size = utf8.DecodeRuneInString(pattern[i+1 : end])
		return r, size + 1, true
	}
	r, size = utf8.DecodeRuneInString(pattern[i:end])
	return r, size, true
}
