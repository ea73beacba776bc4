package fileset

import (
	"fmt"
	"strconv"
	"strings"
)

// expandBraces expands {a,b} alternatives and {1..3} / {a..c} ranges the
// way node's brace-expansion does: first group first, nested groups inside
// the chosen alternative, and a group with neither a top-level comma nor a
// range (such as "{a}") left as literal text. Classes, escapes and extglob
// parentheses are respected, so "[{]" and "@(a,b)" are not split.
func expandBraces(pattern string) ([]string, error) {
	var out []string
	seen := make(map[string]bool)
	generated := 0
	emit := func(s string) error {
		// Count before de-duplicating, or "{a,a}{a,a}..." would recurse
		// exponentially while never growing out.
		if generated++; generated > maxAlternatives {
			return &SyntaxError{Pattern: pattern, Problem: fmt.Sprintf("braces expand to more than %d patterns", maxAlternatives)}
		}
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
		return nil
	}
	if err := expandFrom(pattern, pattern, 0, emit); err != nil {
		return nil, err
	}
	return out, nil
}

// expandFrom expands the first expandable brace group at or after from; s[:from]
// is known to hold none.
func expandFrom(pattern, s string, from int, emit func(string) error) error {
	for i := from; i < len(s); {
		switch s[i] {
		case '\\':
			i += 2
			continue
		case '[':
			if _, end, err := parseClass(s, i); err == nil {
				i = end
				continue
			}
		case '{':
			closeAt, commas, ok := braceGroup(s, i)
			if !ok {
				break
			}
			items, err := braceItems(pattern, s, i, closeAt, commas)
			if err != nil {
				return err
			}
			if items == nil {
				break // literal group; groups nested inside may still expand
			}
			prefix, suffix := s[:i], s[closeAt+1:]
			for _, item := range items {
				if err := expandFrom(pattern, prefix+item+suffix, i, emit); err != nil {
					return err
				}
			}
			return nil
		}
		i++
	}
	return emit(s)
}

// braceGroup finds the '}' matching the '{' at s[open] and the offsets of
// the commas that separate its alternatives.
func braceGroup(s string, open int) (closeAt int, commas []int, ok bool) {
	depth, parens := 0, 0
	for i := open + 1; i < len(s); {
		c := s[i]
		switch {
		case c == '\\':
			i += 2
			continue
		case c == '[':
			if _, end, err := parseClass(s, i); err == nil {
				i = end
				continue
			}
		case isExtglobType(c) && i+1 < len(s) && s[i+1] == '(':
			parens++
			i += 2
			continue
		case c == ')' && parens > 0:
			parens--
		case c == '{':
			depth++
		case c == '}':
			if depth == 0 {
				return i, commas, true
			}
			depth--
		case c == ',' && depth == 0 && parens == 0:
			commas = append(commas, i)
		}
		i++
	}
	return 0, nil, false
}

// braceItems returns what the group s[open:closeAt+1] expands to, or nil
// when it is literal text.
func braceItems(pattern, s string, open, closeAt int, commas []int) ([]string, error) {
	if len(commas) > 0 {
		items := make([]string, 0, len(commas)+1)
		start := open + 1
		for _, c := range commas {
			items = append(items, s[start:c])
			start = c + 1
		}
		return append(items, s[start:closeAt]), nil
	}
	return braceRange(pattern, s[open+1:closeAt])
}

// braceRange expands "1..10", "01..10..3" or "a..e"; anything else is not
// a range and yields nil.
func braceRange(pattern, body string) ([]string, error) {
	parts := strings.Split(body, "..")
	if len(parts) != 2 && len(parts) != 3 {
		return nil, nil
	}
	step := int64(1)
	if len(parts) == 3 {
		if !isInteger(parts[2]) {
			return nil, nil
		}
		n, err := parseBound(pattern, body, parts[2])
		if err != nil {
			return nil, err
		}
		// Like bash, the sign of the step is ignored and zero means one.
		if n < 0 {
			n = -n
		}
		if n != 0 {
			step = n
		}
	}
	switch {
	case isInteger(parts[0]) && isInteger(parts[1]):
		from, err := parseBound(pattern, body, parts[0])
		if err != nil {
			return nil, err
		}
		to, err := parseBound(pattern, body, parts[1])
		if err != nil {
			return nil, err
		}
		width := 0
		if zeroPadded(parts[0]) || zeroPadded(parts[1]) {
			width = max(len(parts[0]), len(parts[1]))
		}
		values, err := rangeValues(pattern, body, from, to, step)
		if err != nil {
			return nil, err
		}
		items := make([]string, len(values))
		for i, v := range values {
			items[i] = padNumber(v, width)
		}
		return items, nil
	case isLetter(parts[0]) && isLetter(parts[1]):
		values, err := rangeValues(pattern, body, int64(parts[0][0]), int64(parts[1][0]), step)
		if err != nil {
			return nil, err
		}
		items := make([]string, len(values))
		for i, v := range values {
			// "{Z..a}" passes through [ \ ] ^ _ `; escape them so they stay
			// literal characters.
			c := string(rune(v))
			if strings.ContainsAny(c, `[\]^*?{}()!@+|,`) {
				c = `\` + c
			}
			items[i] = c
		}
		return items, nil
	}
	return nil, nil
}

// rangeBoundLimit keeps range arithmetic far from int64 overflow.
const rangeBoundLimit = 1_000_000_000_000_000

func parseBound(pattern, body, text string) (int64, error) {
	n, err := strconv.ParseInt(text, 10, 64)
	if err != nil || n > rangeBoundLimit || n < -rangeBoundLimit {
		return 0, &SyntaxError{Pattern: pattern, Problem: fmt.Sprintf("range {%s}: %s is out of range", body, text)}
	}
	return n, nil
}

func rangeValues(pattern, body string, from, to, step int64) ([]int64, error) {
	span := to - from
	if span < 0 {
		span = -span
	}
	if count := span/step + 1; count > maxAlternatives {
		return nil, &SyntaxError{Pattern: pattern, Problem: fmt.Sprintf("range {%s} has %d items; the limit is %d", body, count, maxAlternatives)}
	}
	var values []int64
	if from <= to {
		for v := from; v <= to; v += step {
			values = append(values, v)
		}
	} else {
		for v := from; v >= to; v -= step {
			values = append(values, v)
		}
	}
	return values, nil
}

func isInteger(s string) bool {
	s = strings.TrimPrefix(s, "-")
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func isLetter(s string) bool {
	return len(s) == 1 && ('a' <= s[0] && s[0] <= 'z' || 'A' <= s[0] && s[0] <= 'Z')
}

// zeroPadded reports a bound like "01" or "-01", which asks for padding.
func zeroPadded(s string) bool {
	s = strings.TrimPrefix(s, "-")
	return len(s) > 1 && s[0] == '0'
}

// padNumber pads with zeros to width characters, the sign included, as
// brace-expansion does.
func padNumber(v int64, width int) string {
	s := strconv.FormatInt(v, 10)
	if need := width - len(s); need > 0 {
		if v < 0 {
			return "-" + strings.Repeat("0", need) + s[1:]
		}
		return strings.Repeat("0", need) + s
	}
	return s
}
