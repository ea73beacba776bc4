package admit

import (
	"errors"
	"strings"
)

// Request paths are judged and forwarded in one canonical form, so that an
// origin never reads a path differently from the gate that judged it:
// unreserved characters (RFC 3986: letters, digits, - . _ ~) decoded, every
// other escape kept with upper-case hex, characters a path may not hold raw
// escaped, dot-segments resolved, doubled slashes collapsed. Routes are
// compared with the decoded form of it, with ";" segment parameters left out
// (servlet containers ignore them).

// Why a request path is refused.
var (
	// ErrEncodedSlash: an encoded "/" or "\" (or a raw "\"), which origins
	// disagree on: some decode it into a separator, some do not.
	ErrEncodedSlash = errors.New("the path holds an encoded slash or a backslash")
	// ErrBadPath: not a path ("*", a relative path, a broken escape, a dot
	// segment with parameters like "..;x" that servlet containers resolve).
	ErrBadPath = errors.New("the path is not a valid absolute path")
)

const upperHex = "0123456789ABCDEF"

func unreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~'
}

// rawOK reports whether a path may hold c unescaped: unreserved, the
// sub-delims, ':', '@' and '/'.
func rawOK(c byte) bool {
	return unreserved(c) || c == '/' || c == ':' || c == '@' || strings.IndexByte("!$&'()*+,;=", c) >= 0
}

func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// CanonicalPath returns the canonical form of a request's path as it was
// sent (escaped; "" is "/"), or ErrEncodedSlash or ErrBadPath.
func CanonicalPath(escaped string) (string, error) {
	if escaped == "" {
		return "/", nil
	}
	if escaped[0] != '/' {
		return "", ErrBadPath
	}
	var b strings.Builder
	b.Grow(len(escaped))
	for i := 0; i < len(escaped); i++ {
		c := escaped[i]
		if c == '%' {
			if i+2 >= len(escaped) {
				return "", ErrBadPath
			}
			hi, ok1 := unhex(escaped[i+1])
			lo, ok2 := unhex(escaped[i+2])
			if !ok1 || !ok2 {
				return "", ErrBadPath
			}
			i += 2
			c = hi<<4 | lo
			if c == '/' || c == '\\' {
				return "", ErrEncodedSlash
			}
			writeByte(&b, c, unreserved(c))
			continue
		}
		if c == '\\' {
			return "", ErrEncodedSlash
		}
		writeByte(&b, c, rawOK(c))
	}
	return resolveDots(b.String())
}

// resolveDots removes "." and ".." segments (RFC 3986 section 5.2.4) and
// empty segments, keeping a trailing slash; p starts with "/".
func resolveDots(p string) (string, error) {
	if !strings.Contains(p, "//") && !strings.Contains(p, "/.") {
		return p, nil // the common case, without allocating
	}
	segs := strings.Split(p[1:], "/")
	out := make([]string, 0, len(segs))
	trailing := false
	for i, s := range segs {
		last := i == len(segs)-1
		switch s {
		case "", ".":
			trailing = last
			continue
		case "..":
			if len(out) > 0 {
				out = out[:len(out)-1]
			}
			trailing = last
			continue
		}
		if base, _, ok := strings.Cut(s, ";"); ok && (base == "." || base == "..") {
			return "", ErrBadPath
		}
		out = append(out, s)
		trailing = false
	}
	c := "/" + strings.Join(out, "/")
	if trailing && len(out) > 0 {
		c += "/"
	}
	return c, nil
}

// RoutePathProblem says why a room's path can never match a request (it is
// not in the decoded canonical form requests are compared in), or "".
func RoutePathProblem(p string) string {
	switch {
	case strings.Contains(p, "%"):
		return "must be written decoded (e.g. /café/, not /caf%C3%A9/): requests are matched on their decoded path"
	case strings.Contains(p, `\`):
		return `must not hold a backslash: requests with one are refused`
	case strings.Contains(p, ";"):
		return `must not hold ";": requests are matched without their ";" segment parameters`
	case strings.Contains(p, "//"):
		return "must not hold an empty segment (//): requests are matched with doubled slashes collapsed"
	}
	for seg := range strings.SplitSeq(p[1:], "/") {
		if seg == "." || seg == ".." {
			return "must not hold a . or .. segment: requests are matched with them resolved"
		}
	}
	for i := 0; i < len(p); i++ {
		if p[i] < 0x20 || p[i] == 0x7f {
			return "must not hold control characters"
		}
	}
	return ""
}

// SegmentParamsRemoved drops the ";" parameters of each segment of a
// decoded path: "/shop;v=1/cart;jsessionid=x" is "/shop/cart".
func SegmentParamsRemoved(p string) string {
	if !strings.Contains(p, ";") {
		return p
	}
	var b strings.Builder
	b.Grow(len(p))
	for i := 0; i < len(p); i++ {
		if p[i] != ';' {
			b.WriteByte(p[i])
			continue
		}
		for i+1 < len(p) && p[i+1] != '/' {
			i++
		}
	}
	return b.String()
}

// writeByte writes c as is when raw, else percent-encoded in upper-case hex.
func writeByte(b *strings.Builder, c byte, raw bool) {
	if raw {
		b.WriteByte(c)
		return
	}
	b.WriteByte('%')
	b.WriteByte(upperHex[c>>4])
	b.WriteByte(upperHex[c&15])
}
