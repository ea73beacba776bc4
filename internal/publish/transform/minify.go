package transform

import (
	"bytes"
	"fmt"

	"github.com/tdewolff/minify/v2"
	"github.com/tdewolff/minify/v2/css"
	"github.com/tdewolff/minify/v2/js"
	"github.com/tdewolff/parse/v2"
	"github.com/tdewolff/parse/v2/buffer"
	jsparse "github.com/tdewolff/parse/v2/js"
)

// jsOutputVersion caps the ECMAScript syntax the JS minifier may introduce.
// With 0 ("latest") it rewrites ES5 input into `??`, template literals and
// optional catch bindings, which breaks the browsers an ES5 library targets.
// 2009 (ES5) disables those rewrites; syntax already in the input is kept.
const jsOutputVersion = 2009

// cssOutputVersion is the CSS level the CSS minifier targets (its default).
const cssOutputVersion = 3

// noMinifiers is passed to the CSS minifier, which uses it only to minify the
// contents of data: URIs; registering nothing leaves those contents alone.
var noMinifiers = minify.New()

// Minify minifies a .js, .mjs or .css file with tdewolff/minify. Comments
// starting with "/*!" are kept, and so are leading block comments tagged
// @license or @preserve (the convention terser and esbuild honour). It
// returns an error when the type is not minifiable, the minifier fails, or
// the result would be larger than the input; the caller then publishes only
// the original. data is never modified.
func Minify(p string, data []byte) ([]byte, error) {
	var (
		out []byte
		err error
	)
	switch extension(p) {
	case "js", "mjs":
		out, err = minifyJS(data)
	case "css":
		out, err = minifyCSS(data)
	default:
		return nil, fmt.Errorf("minify %s: no minifier for this file type", p)
	}
	if err != nil {
		return nil, fmt.Errorf("minify %s: %w", p, err)
	}
	if len(out) > len(data) {
		return nil, fmt.Errorf("minify %s: output (%d bytes) is larger than input (%d bytes)", p, len(out), len(data))
	}
	return out, nil
}

func minifyJS(data []byte) ([]byte, error) {
	src := privateCopy(data)
	// The minifier keeps a shebang but drops the line break after it, which
	// would turn the whole script into part of the "#!" line; set it aside.
	var shebang []byte
	if bytes.HasPrefix(src, []byte("#!")) {
		n := skipLine(src, 0)
		shebang, src = src[:n], src[n:]
	}
	src, licenses := markLeadingLicenses(src, true)
	out := bytes.NewBuffer(make([]byte, 0, len(src)+1))
	m := &js.Minifier{Version: jsOutputVersion}
	if err := m.Minify(noMinifiers, out, buffer.NewReader(src), nil); err != nil {
		return nil, err
	}
	minified := out.Bytes()
	// The JS minifier writes bang comments verbatim, so the original text of
	// license comments we marked can be put back exactly.
	for _, l := range licenses {
		minified = bytes.Replace(minified, l.marked, l.original, 1)
	}
	minified = escapeLineSeparators(minified)
	// A minifier bug that emits invalid syntax would ship a broken .min.js
	// to every user of the version; re-parsing is cheap next to brotli.
	if _, err := jsparse.Parse(parse.NewInputBytes(minified), jsparse.Options{}); err != nil {
		return nil, fmt.Errorf("minified output does not parse: %w", err)
	}
	if shebang != nil {
		minified = append(shebang[:len(shebang):len(shebang)], minified...)
	}
	return minified, nil
}

func minifyCSS(data []byte) ([]byte, error) {
	src, _ := markLeadingLicenses(privateCopy(data), false)
	out := bytes.NewBuffer(make([]byte, 0, len(src)))
	// A new Minifier per call: its Minify method writes to its own fields.
	m := &css.Minifier{Version: cssOutputVersion}
	if err := m.Minify(noMinifiers, out, buffer.NewReader(src), nil); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

var (
	lineSeparator      = []byte("\u2028")
	paragraphSeparator = []byte("\u2029")
)

// escapeLineSeparators writes U+2028 and U+2029 as escapes. The minifier
// unescapes them in string literals, but engines before ES2019 reject them
// there as line breaks. A raw one can only occur in a string, template or
// comment of valid output, where the escape means the same (only the raw
// text a tag function sees would differ).
func escapeLineSeparators(b []byte) []byte {
	if bytes.Contains(b, lineSeparator) {
		b = bytes.ReplaceAll(b, lineSeparator, []byte(`\u2028`))
	}
	if bytes.Contains(b, paragraphSeparator) {
		b = bytes.ReplaceAll(b, paragraphSeparator, []byte(`\u2029`))
	}
	return b
}

// licenseComment is a leading comment before and after marking it as "/*!".
type licenseComment struct {
	original, marked []byte
}

// privateCopy copies data for the minifiers, which, given a buffer.Reader,
// parse their input in place and rewrite parts of it. The spare capacity lets
// the parser append its NUL sentinel, and markLeadingLicenses insert a byte,
// without copying again.
func privateCopy(data []byte) []byte {
	src := make([]byte, len(data), len(data)+2)
	copy(src, data)
	return src
}

// markLeadingLicenses turns block comments of src before its first token that
// mention @license or @preserve into "/*!" comments, which the minifiers
// keep, editing src in place. Only leading comments are considered: before
// any code there is no regular expression or string a "/*" could belong to.
// lineComments enables "//" comments (JS, not CSS).
func markLeadingLicenses(src []byte, lineComments bool) ([]byte, []licenseComment) {
	var licenses []licenseComment
	i := 0
	if bytes.HasPrefix(src, utf8BOM) {
		i = len(utf8BOM)
	}
	for i < len(src) {
		switch {
		case isSpace(src[i]):
			i++
		case lineComments && bytes.HasPrefix(src[i:], []byte("//")):
			i = skipLine(src, i)
		case bytes.HasPrefix(src[i:], []byte("/*")):
			end := bytes.Index(src[i+2:], []byte("*/"))
			if end < 0 {
				return src, licenses
			}
			end += i + 4
			comment := src[i:end]
			if comment[2] != '!' && (bytes.Contains(comment, []byte("@license")) || bytes.Contains(comment, []byte("@preserve"))) {
				original := bytes.Clone(comment)
				if comment[2] == '*' && len(comment) > 4 {
					comment[2] = '!' // "/** @license" → "/*! @license"
				} else {
					src = append(src[:i+2], append([]byte{'!'}, src[i+2:]...)...)
					end++
				}
				licenses = append(licenses, licenseComment{original: original, marked: bytes.Clone(src[i:end])})
			}
			i = end
		default:
			return src, licenses
		}
	}
	return src, licenses
}

var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

func skipLine(b []byte, i int) int {
	if n := bytes.IndexByte(b[i:], '\n'); n >= 0 {
		return i + n + 1
	}
	return len(b)
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}
