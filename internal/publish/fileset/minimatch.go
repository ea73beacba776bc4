package fileset

import (
	"regexp"
	"strings"
)

// This file translates one path segment of a glob into a regular expression
// exactly as minimatch 3 (the matcher of node-glob 7, cdnjs's reference)
// does, quirks included: most of all, a "!(…)" followed by more of the
// segment is a negative lookahead over the alternatives *and* the rest of
// the segment, unanchored, so "!(*cjs).+(js|map)" refuses "tippy.cjs.js.map"
// because "tippy.cjs" + ".js" matches a prefix of it. The expression is then
// run by the matcher in jsregex.go, which needs no backtracking.

const (
	mmQmark = "[^/]"
	mmStar  = mmQmark + "*?"
)

// mmSpecials are the characters minimatch escapes in the expression.
const mmSpecials = "().*{}+?[]^$\\!"

type mmPatternList struct {
	typ         byte
	reStart     int
	open, close string
	reEnd       int
}

func mmOpenClose(t byte) (string, string) {
	if t == '!' {
		return "(?:(?!(?:", "))[^/]*?)"
	}
	switch t {
	case '?':
		return "(?:", ")?"
	case '+':
		return "(?:", ")+"
	case '*':
		return "(?:", ")*"
	}
	return "(?:", ")"
}

// maxExpressionBytes bounds the expression mmParseBounded builds; see
// maxProgramSize.
const maxExpressionBytes = 256 << 10

// mmParseBounded is minimatch 3's parse() of one segment with the options
// node-glob 7 uses (dot, nocase, noext and nobrace off). It returns the
// expression source (without ^ and $) and whether the segment has any magic;
// a segment without magic is matched literally, unescaped. An expression that
// would grow past maxExpressionBytes comes back as "" with tooBig set.
func mmParseBounded(pattern string, isSub bool) (string, bool, bool) {
	chars := []rune(pattern)
	// The expression is rewritten in place by the fix-ups below, as
	// minimatch does; a string keeps that simple.
	s := ""
	hasMagic := false
	escaping := false
	var stack []*mmPatternList
	var negativeLists []*mmPatternList
	var stateChar byte
	inClass := false
	reClassStart, classStart := -1, -1
	patternStart := `(?!\.)`
	if len(chars) > 0 && chars[0] == '.' {
		patternStart = ""
	}
	clearStateChar := func() {
		switch stateChar {
		case 0:
			return
		case '*':
			s += mmStar
			hasMagic = true
		case '?':
			s += mmQmark
			hasMagic = true
		default:
			s += `\` + string(stateChar)
		}
		stateChar = 0
	}
	for i := 0; i < len(chars); i++ {
		c := chars[i]
		if escaping && c < 128 && strings.ContainsRune(mmSpecials, c) {
			s += `\` + string(c)
			escaping = false
			continue
		}
		switch c {
		case '\\':
			clearStateChar()
			escaping = true
			continue
		case '?', '*', '+', '@', '!':
			if inClass {
				if c == '!' && i == classStart+1 {
					c = '^'
				}
				s += string(c)
				continue
			}
			if c == '*' && stateChar == '*' {
				continue
			}
			clearStateChar()
			stateChar = byte(c)
			continue
		case '(':
			if inClass {
				s += "("
				continue
			}
			if stateChar == 0 {
				s += `\(`
				continue
			}
			open, closeStr := mmOpenClose(stateChar)
			stack = append(stack, &mmPatternList{typ: stateChar, reStart: len(s), open: open, close: closeStr})
			if stateChar == '!' {
				s += "(?:(?!(?:"
			} else {
				s += "(?:"
			}
			stateChar = 0
			continue
		case ')':
			if inClass || len(stack) == 0 {
				s += `\)`
				continue
			}
			clearStateChar()
			hasMagic = true
			pl := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			s += pl.close
			if pl.typ == '!' {
				negativeLists = append(negativeLists, pl)
			}
			pl.reEnd = len(s)
			continue
		case '|':
			if inClass || len(stack) == 0 || escaping {
				s += `\|`
				escaping = false
				continue
			}
			clearStateChar()
			s += "|"
			continue
		case '[':
			clearStateChar()
			if inClass {
				s += `\[`
				continue
			}
			inClass = true
			classStart = i
			reClassStart = len(s)
			s += "["
			continue
		case ']':
			if i == classStart+1 || !inClass {
				s += `\]`
				escaping = false
				continue
			}
			cs := string(chars[classStart+1 : i])
			if !jsClassValid(cs) {
				sp, spMagic, tooBig := mmParseBounded(cs, true)
				if tooBig {
					return "", true, true
				}
				s = s[:reClassStart] + `\[` + sp + `\]`
				hasMagic = hasMagic || spMagic
				inClass = false
				continue
			}
			hasMagic = true
			inClass = false
			s += "]"
			continue
		default:
			clearStateChar()
			if escaping {
				escaping = false
			} else if c < 128 && strings.ContainsRune(mmSpecials, c) && !(c == '^' && inClass) {
				s += `\`
			}
			s += string(c)
		}
	}
	if inClass {
		cs := string(chars[classStart+1:])
		sp, spMagic, tooBig := mmParseBounded(cs, true)
		if tooBig {
			return "", true, true
		}
		s = s[:reClassStart] + `\[` + sp
		hasMagic = hasMagic || spMagic
	}
	for len(stack) > 0 {
		pl := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		tail := s[pl.reStart+len(pl.open):]
		tail = mmEscapePipes(tail)
		t := `\` + string(pl.typ)
		switch pl.typ {
		case '*':
			t = mmStar
		case '?':
			t = mmQmark
		}
		hasMagic = true
		s = s[:pl.reStart] + t + `\(` + tail
	}
	clearStateChar()
	if escaping {
		s += `\\`
	}
	addPatternStart := len(s) > 0 && (s[0] == '[' || s[0] == '.' || s[0] == '(')
	for n := len(negativeLists) - 1; n >= 0; n-- {
		nl := negativeLists[n]
		nlBefore := s[:nl.reStart]
		nlFirst := s[nl.reStart : nl.reEnd-8]
		nlLast := s[nl.reEnd-8 : nl.reEnd]
		nlAfter := s[nl.reEnd:]
		nlLast += nlAfter
		openParensBefore := strings.Count(nlBefore, "(")
		cleanAfter := nlAfter
		for range openParensBefore {
			cleanAfter = mmRemoveFirstClose(cleanAfter)
		}
		nlAfter = cleanAfter
		dollar := ""
		if nlAfter == "" && !isSub {
			dollar = "$"
		}
		if len(nlBefore)+len(nlFirst)+len(nlAfter)+len(dollar)+len(nlLast) > maxExpressionBytes {
			return "", true, true
		}
		s = nlBefore + nlFirst + nlAfter + dollar + nlLast
	}
	if s != "" && hasMagic {
		s = "(?=.)" + s
	}
	if addPatternStart {
		s = patternStart + s
	}
	return s, hasMagic, false
}

var (
	mmPipeRE  = regexp.MustCompile(`((?:\\{2}){0,64})(\\?)\|`)
	mmCloseRE = regexp.MustCompile(`\)[+*?]?`)
)

// mmEscapePipes escapes the '|' of an unclosed pattern list, as minimatch
// does: pairs of backslashes are doubled and a lone '|' gets one.
func mmEscapePipes(tail string) string {
	return mmPipeRE.ReplaceAllStringFunc(tail, func(m string) string {
		sub := mmPipeRE.FindStringSubmatch(m)
		esc := sub[2]
		if esc == "" {
			esc = `\`
		}
		return sub[1] + sub[1] + esc + "|"
	})
}

// mmRemoveFirstClose removes the first ")" (with its quantifier), as
// minimatch's String.replace with a non-global expression does.
func mmRemoveFirstClose(s string) string {
	loc := mmCloseRE.FindStringIndex(s)
	if loc == nil {
		return s
	}
	return s[:loc[0]] + s[loc[1]:]
}

// mmUnescape is minimatch's globUnescape: "\x" becomes "x".
func mmUnescape(s string) string {
	var b strings.Builder
	chars := []rune(s)
	for i := 0; i < len(chars); i++ {
		if chars[i] == '\\' && i+1 < len(chars) {
			i++
		}
		b.WriteRune(chars[i])
	}
	return b.String()
}

// jsClassValid reports whether "[" + body + "]" is a valid JavaScript
// regular expression, which is how minimatch decides whether a bracket
// expression is a class or literal text: in practice, whether a range is
// reversed or the body ends in a lone backslash.
func jsClassValid(body string) bool {
	chars := []rune(body)
	if len(chars) > 0 && chars[0] == '^' {
		chars = chars[1:]
	}
	// "[]…" is an empty class followed by more expression; the rest is
	// accepted as JavaScript's lenient grammar accepts a stray "]".
	if len(chars) > 0 && chars[0] == ']' {
		return true
	}
	var prev rune = -1 // the last single character, a range's possible start
	for i := 0; i < len(chars); i++ {
		c, single := chars[i], true
		if c == '\\' {
			if i+1 >= len(chars) {
				return false // escapes the closing ']'
			}
			i++
			c, single = jsClassEscape(chars, &i)
		}
		if c == '-' && single && prev >= 0 && i+1 < len(chars) {
			// a range prev-next
			j := i + 1
			hi, hiSingle := chars[j], true
			if hi == '\\' {
				if j+1 >= len(chars) {
					return false
				}
				j++
				hi, hiSingle = jsClassEscape(chars, &j)
			}
			if hiSingle && hi < prev {
				return false
			}
			i = j
			prev = -1
			continue
		}
		if single {
			prev = c
		} else {
			prev = -1
		}
	}
	return true
}

// jsClassEscape decodes the escape whose letter is at chars[*i] inside a
// class; single is false for the class escapes \d \D \w \W \s \S.
func jsClassEscape(chars []rune, i *int) (rune, bool) {
	switch c := chars[*i]; c {
	case 'd', 'D', 'w', 'W', 's', 'S':
		return c, false
	case 'b':
		return '\b', true
	case 'n':
		return '\n', true
	case 't':
		return '\t', true
	case 'r':
		return '\r', true
	case 'f':
		return '\f', true
	case 'v':
		return '\v', true
	case '0':
		return 0, true
	default:
		return c, true
	}
}
