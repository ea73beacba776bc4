package fileset

import (
	"strings"
	"unicode"
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

// charClass is a bracket expression such as [a-z], [!.] or [[:digit:]].
type charClass struct {
	negated bool
	ranges  []runeRange
	named   []func(rune) bool
}

type runeRange struct{ lo, hi rune }

func (c *charClass) matches(r rune) bool {
	in := false
	for _, rr := range c.ranges {
		if rr.lo <= r && r <= rr.hi {
			in = true
			break
		}
	}
	if !in {
		for _, f := range c.named {
			if f(r) {
				in = true
				break
			}
		}
	}
	return in != c.negated
}

// posixClasses mirrors the named classes minimatch accepts, with the same
// Unicode reading of each.
var posixClasses = map[string]func(rune) bool{
	"alnum": func(r rune) bool { return unicode.In(r, unicode.L, unicode.Nl, unicode.Nd) },
	"alpha": func(r rune) bool { return unicode.In(r, unicode.L, unicode.Nl) },
	"ascii": func(r rune) bool { return r <= 0x7f },
	"blank": func(r rune) bool { return r == '\t' || unicode.Is(unicode.Zs, r) },
	"cntrl": func(r rune) bool { return unicode.Is(unicode.Cc, r) },
	"digit": func(r rune) bool { return unicode.Is(unicode.Nd, r) },
	"graph": func(r rune) bool { return !unicode.In(r, unicode.Z, unicode.C) },
	"lower": func(r rune) bool { return unicode.Is(unicode.Ll, r) },
	"print": func(r rune) bool { return !unicode.Is(unicode.C, r) },
	"punct": func(r rune) bool { return unicode.Is(unicode.P, r) },
	"space": func(r rune) bool { return strings.ContainsRune("\t\r\n\v\f", r) || unicode.Is(unicode.Z, r) },
	"upper": func(r rune) bool { return unicode.Is(unicode.Lu, r) },
	"word":  func(r rune) bool { return unicode.In(r, unicode.L, unicode.Nl, unicode.Nd, unicode.Pc) },
	"xdigit": func(r rune) bool {
		return '0' <= r && r <= '9' || 'a' <= r && r <= 'f' || 'A' <= r && r <= 'F'
	},
}

// parseClass parses the bracket expression starting at pattern[start] ==
// '[' and returns it with the offset just past its closing ']'. A ']' right
// after the opening (or after '!'/'^') is a member, as in shells.
func parseClass(pattern string, start int) (*charClass, int, *SyntaxError) {
	class := &charClass{}
	i := start + 1
	if i < len(pattern) && (pattern[i] == '!' || pattern[i] == '^') {
		class.negated = true
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
			return nil, 0, unclosed()
		}
		if pattern[i] == ']' && !first {
			return class, i + 1, nil
		}
		first = false
		if strings.HasPrefix(pattern[i:segmentEnd], "[:") {
			if end := strings.Index(pattern[i+2:segmentEnd], ":]"); end >= 0 {
				name := pattern[i+2 : i+2+end]
				f, ok := posixClasses[name]
				if !ok {
					return nil, 0, syntaxError(pattern, i, "unknown character class [:%s:]", name)
				}
				class.named = append(class.named, f)
				i += 2 + end + 2
				continue
			}
		}
		lo, size, ok := classMember(pattern, i, segmentEnd)
		if !ok {
			return nil, 0, unclosed()
		}
		memberAt := i
		i += size
		if i+1 < segmentEnd && pattern[i] == '-' && pattern[i+1] != ']' {
			hi, size, ok := classMember(pattern, i+1, segmentEnd)
			if !ok {
				return nil, 0, unclosed()
			}
			if hi < lo {
				return nil, 0, syntaxError(pattern, memberAt, "reversed range %s in character class", pattern[memberAt:i+1+size])
			}
			class.ranges = append(class.ranges, runeRange{lo, hi})
			i += 1 + size
			continue
		}
		class.ranges = append(class.ranges, runeRange{lo, lo})
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

// nodeKind says what one element of a segment pattern matches.
type nodeKind uint8

const (
	nodeLiteral nodeKind = iota // one exact character
	nodeAnyRune                 // '?'
	nodeStar                    // '*'
	nodeClass                   // [...]
	nodeExtglob                 // @(...) ?(...) *(...) +(...) !(...)
)

type node struct {
	kind  nodeKind
	r     rune
	class *charClass
	ext   byte     // extglob type character
	alts  [][]node // extglob alternatives
}

// segmentParser parses one brace-free, slash-free piece of a pattern.
type segmentParser struct {
	s string
	i int
}

func parseSegment(s string) ([]node, error) {
	p := &segmentParser{s: s}
	nodes, err := p.sequence(false)
	if err != nil {
		return nil, err
	}
	if p.i < len(s) {
		return nil, syntaxError(s, p.i, "unexpected '%c'", s[p.i])
	}
	return nodes, nil
}

// sequence parses nodes until the end of the segment or, inside an extglob,
// until the '|' or ')' that ends the alternative.
func (p *segmentParser) sequence(inExtglob bool) ([]node, error) {
	var nodes []node
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch {
		case inExtglob && (c == '|' || c == ')'):
			return nodes, nil
		case c == '\\':
			if p.i+1 >= len(p.s) {
				return nil, syntaxError(p.s, p.i, "trailing backslash escapes nothing")
			}
			r, size := utf8.DecodeRuneInString(p.s[p.i+1:])
			nodes = append(nodes, node{kind: nodeLiteral, r: r})
			p.i += 1 + size
		case c == '[':
			class, end, err := parseClass(p.s, p.i)
			if err != nil {
				return nil, err
			}
			nodes = append(nodes, node{kind: nodeClass, class: class})
			p.i = end
		case isExtglobType(c) && p.i+1 < len(p.s) && p.s[p.i+1] == '(':
			ext, err := p.extglob()
			if err != nil {
				return nil, err
			}
			nodes = append(nodes, ext)
		case c == '*':
			// "a**b" is "a*b": stars only span segments as a whole segment.
			if len(nodes) == 0 || nodes[len(nodes)-1].kind != nodeStar {
				nodes = append(nodes, node{kind: nodeStar})
			}
			p.i++
		case c == '?':
			nodes = append(nodes, node{kind: nodeAnyRune})
			p.i++
		default:
			r, size := utf8.DecodeRuneInString(p.s[p.i:])
			nodes = append(nodes, node{kind: nodeLiteral, r: r})
			p.i += size
		}
	}
	return nodes, nil
}

// extglob parses "X(alt|alt...)" with p.i at X.
func (p *segmentParser) extglob() (node, error) {
	start := p.i
	n := node{kind: nodeExtglob, ext: p.s[p.i]}
	p.i += 2
	for {
		alt, err := p.sequence(true)
		if err != nil {
			return node{}, err
		}
		n.alts = append(n.alts, alt)
		if p.i >= len(p.s) {
			return node{}, syntaxError(p.s, start, "unclosed '%s'", p.s[start:start+2])
		}
		p.i++
		if p.s[p.i-1] == ')' {
			return n, nil
		}
	}
}

// literalText returns the text a wildcard-free segment stands for.
func literalText(nodes []node) (string, bool) {
	var b strings.Builder
	for _, n := range nodes {
		if n.kind != nodeLiteral {
			return "", false
		}
		b.WriteRune(n.r)
	}
	return b.String(), true
}
