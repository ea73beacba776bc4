package migrate

import (
	"fmt"
	"regexp"
	"strings"
)

// CompileGlob turns a filter pattern into a regular expression over a key
// below the source prefix, with rclone's pattern rules ("Rclone
// Filtering", "Pattern syntax"):
//
//   - any run of characters but "/"
//     **      any run of characters, "/" included
//     ?       one character but "/"
//     [...]   a character class ([a-z], [!0-9] or [^0-9], [[:alpha:]], \d);
//     a negated class never matches "/"
//     {a,b}   alternatives, which may nest and hold patterns
//     \c      the character c itself; \d \s \w (and \D \S \W) are classes
//
// A pattern starting with "/" matches the whole key from the root; any
// other matches a tail of the key that starts at a "/" or at the key's
// start ("file.jpg" matches "file.jpg" and "dir/file.jpg", never
// "afile.jpg"). rclone's regular expressions ({{...}}) are not taken, and
// a pattern ending in "/" (rclone's directory rule, which matches no
// object) is refused with what to write instead. Errors say where the
// pattern is wrong. Go's regular expressions run in linear time, so no
// pattern is slow to match.
func CompileGlob(pattern string) (*regexp.Regexp, error) {
	switch {
	case pattern == "":
		return nil, fmt.Errorf("the pattern is empty")
	case strings.HasSuffix(pattern, "/"):
		return nil, fmt.Errorf("a pattern ending in \"/\" matches no key; write %s** for every key under it", pattern)
	}
	var re strings.Builder
	body := pattern
	if rest, ok := strings.CutPrefix(pattern, "/"); ok {
		re.WriteString("^")
		body = rest
	} else {
		re.WriteString("(?:^|/)")
	}
	at := func(i int) string { return fmt.Sprintf("at character %d", len(pattern)-len(body)+i+1) }
	runes := []rune(body)
	depth := 0
	for i := 0; i < len(runes); i++ {
		c := runes[i]
		switch c {
		case '\\':
			if i+1 == len(runes) {
				return nil, fmt.Errorf("%s: the pattern ends in an escape (\\)", at(i))
			}
			i++
			if strings.ContainsRune("dDsSwW", runes[i]) {
				re.WriteString(`\` + string(runes[i]))
			} else {
				re.WriteString(regexp.QuoteMeta(string(runes[i])))
			}
		case '*':
			n := 1
			for i+1 < len(runes) && runes[i+1] == '*' {
				n++
				i++
			}
			switch n {
			case 1:
				re.WriteString(`[^/]*`)
			case 2:
				re.WriteString(`.*`)
			default:
				return nil, fmt.Errorf("%s: %d stars in a row; * is within a path segment, ** across them", at(i-n+1), n)
			}
		case '?':
			re.WriteString(`[^/]`)
		case '[':
			class, next, err := globClass(runes, i)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", at(i), err)
			}
			re.WriteString(class)
			i = next
		case ']':
			return nil, fmt.Errorf("%s: \"]\" closes no character class (\\] is the character)", at(i))
		case '{':
			if i+1 < len(runes) && runes[i+1] == '{' {
				return nil, fmt.Errorf("%s: regular expressions ({{...}}) are not supported; use *, **, ?, [...] and {a,b}", at(i))
			}
			depth++
			re.WriteString("(?:")
		case '}':
			if depth == 0 {
				return nil, fmt.Errorf("%s: \"}\" closes no alternatives (\\} is the character)", at(i))
			}
			depth--
			re.WriteString(")")
		case ',':
			if depth > 0 {
				re.WriteString("|")
			} else {
				re.WriteString(",")
			}
		default:
			re.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	if depth > 0 {
		return nil, fmt.Errorf("%d \"{\" not closed by \"}\"", depth)
	}
	re.WriteString("$")
	out, err := regexp.Compile(re.String())
	if err != nil {
		return nil, fmt.Errorf("not a pattern: %v", err)
	}
	return out, nil
}

// globClass reads the character class that opens at runes[start] ("[")
// and returns it as a regular expression and the index of its "]".
func globClass(runes []rune, start int) (string, int, error) {
	var b strings.Builder
	b.WriteString("[")
	i := start + 1
	if i < len(runes) && (runes[i] == '!' || runes[i] == '^') {
		b.WriteString("^/") // a negated class stays within a path segment
		i++
	}
	empty := true
	for ; i < len(runes); i++ {
		c := runes[i]
		switch {
		case c == ']':
			if empty {
				return "", 0, fmt.Errorf("an empty character class []")
			}
			b.WriteString("]")
			if _, err := regexp.Compile(b.String()); err != nil {
				return "", 0, fmt.Errorf("character class %s: %v", string(runes[start:i+1]), err)
			}
			return b.String(), i, nil
		case c == '\\' && i+1 < len(runes):
			i++
			if strings.ContainsRune("dDsSwW", runes[i]) {
				b.WriteString(`\` + string(runes[i]))
			} else {
				b.WriteString(regexp.QuoteMeta(string(runes[i])))
			}
		case c == '[' && i+1 < len(runes) && runes[i+1] == ':':
			end := strings.Index(string(runes[i:]), ":]")
			if end < 0 {
				return "", 0, fmt.Errorf("\"[:\" without \":]\"")
			}
			named := string(runes[i:])[:end+2]
			b.WriteString(named)
			i += len([]rune(named)) - 1
		case c == '[':
			b.WriteString(`\[`)
		default:
			b.WriteRune(c)
		}
		empty = false
	}
	return "", 0, fmt.Errorf("\"[\" not closed by \"]\"")
}
