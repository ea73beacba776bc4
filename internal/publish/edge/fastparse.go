package edge

import "bytes"

// The fast path's request parser (fastserve.go) accepts only the plainest
// form of the edge's commonest request: a GET or HEAD of a file, HTTP/1.1,
// an origin-form path of a few safe characters, no query, one valid Host,
// no body, no Range, no Expect or Upgrade, every line ending in CRLF and
// every header line a token, a colon and a value of visible characters. It
// is stricter than net/http on purpose: whatever it accepts, net/http
// accepts with the same meaning (FuzzFastRequestParse checks it); whatever
// it does not, net/http is handed as it came, and answers as before.

// fastRequest is what the fast path needs of a request. The slices point
// into the connection's read buffer and live until the request is answered.
type fastRequest struct {
	head bool   // HEAD, else GET
	path []byte // "/ajax/libs/..."
	// The values, trimmed, of the headers that select the answer; nil
	// when absent (an empty value is what net/http's Get gives for both).
	acceptEncoding, ifNoneMatch, ifModifiedSince []byte
	close                                        bool // Connection: close
}

const fileRoutePrefix = "/ajax/libs/"

// parseFastRequest parses a request head (the request line and header
// lines, each ending in CRLF, then an empty line). ok is false for a
// request the fast path leaves to net/http.
func parseFastRequest(head []byte) (req fastRequest, ok bool) {
	line, rest, ok := cutLine(head)
	if !ok {
		return req, false
	}
	switch {
	case bytes.HasPrefix(line, []byte("GET ")):
		line = line[len("GET "):]
	case bytes.HasPrefix(line, []byte("HEAD ")):
		req.head = true
		line = line[len("HEAD "):]
	default:
		return req, false
	}
	target, proto, ok := bytes.Cut(line, []byte(" "))
	if !ok || string(proto) != "HTTP/1.1" || !validFastTarget(target) {
		return req, false
	}
	req.path = target
	var hosts, connections int
	for {
		line, rest, ok = cutLine(rest)
		if !ok {
			return req, false
		}
		if len(line) == 0 {
			break // the empty line ending the head
		}
		name, value, ok := bytes.Cut(line, []byte(":"))
		if !ok || !validHeaderName(name) {
			return req, false // also a continuation line (obs-fold), which starts with a space
		}
		value = trimOWS(value)
		if !validHeaderValue(value) {
			return req, false
		}
		switch {
		case asciiEqualFold(name, "host"):
			hosts++
			if !validFastHost(value) {
				return req, false
			}
		case asciiEqualFold(name, "accept-encoding"):
			if req.acceptEncoding != nil {
				return req, false
			}
			req.acceptEncoding = value
		case asciiEqualFold(name, "if-none-match"):
			if req.ifNoneMatch != nil {
				return req, false
			}
			req.ifNoneMatch = value
		case asciiEqualFold(name, "if-modified-since"):
			if req.ifModifiedSince != nil {
				return req, false
			}
			req.ifModifiedSince = value
		case asciiEqualFold(name, "connection"):
			connections++
			switch {
			case asciiEqualFold(value, "close"):
				req.close = true
			case asciiEqualFold(value, "keep-alive"):
			default:
				return req, false
			}
		case asciiEqualFold(name, "content-length"), asciiEqualFold(name, "transfer-encoding"),
			asciiEqualFold(name, "range"), asciiEqualFold(name, "expect"), asciiEqualFold(name, "upgrade"),
			asciiEqualFold(name, "http2-settings"), asciiEqualFold(name, "trailer"):
			// A body, a part, an interim answer or another protocol: net/http's.
			return req, false
		}
	}
	if hosts != 1 || connections > 1 || len(rest) != 0 {
		return req, false
	}
	return req, true
}

// cutLine splits off the first line, which must end in CRLF and hold no
// other CR or LF.
func cutLine(b []byte) (line, rest []byte, ok bool) {
	i := bytes.IndexByte(b, '\n')
	if i < 1 || b[i-1] != '\r' {
		return nil, nil, false
	}
	line = b[:i-1]
	if bytes.IndexByte(line, '\r') >= 0 {
		return nil, nil, false
	}
	return line, b[i+1:], true
}

// validFastTarget accepts "/ajax/libs/" and a path of the characters that
// need no escaping and that net/http takes as they are: no '%', no query,
// no fragment, nothing a client would have to encode.
func validFastTarget(t []byte) bool {
	if len(t) > maxPathLength || !bytes.HasPrefix(t, []byte(fileRoutePrefix)) {
		return false
	}
	for _, c := range t {
		if !fastPathByte[c] {
			return false
		}
	}
	return true
}

// validFastHost accepts host names, IPv4 and bracketed IPv6 addresses with
// an optional port: a subset of what net/http takes.
func validFastHost(v []byte) bool {
	if len(v) == 0 {
		return false
	}
	for _, c := range v {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_' ||
			c == ':' || c == '[' || c == ']') {
			return false
		}
	}
	return true
}

// validHeaderName: a non-empty token (RFC 9110 §5.6.2), as net/http requires.
func validHeaderName(n []byte) bool {
	if len(n) == 0 {
		return false
	}
	for _, c := range n {
		if !tokenByte[c] {
			return false
		}
	}
	return true
}

// validHeaderValue: visible characters, spaces and tabs, and obs-text, as
// net/http requires (no other control byte).
func validHeaderValue(v []byte) bool {
	for _, c := range v {
		if c < 0x20 && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}

func trimOWS(v []byte) []byte {
	for len(v) > 0 && (v[0] == ' ' || v[0] == '\t') {
		v = v[1:]
	}
	for len(v) > 0 && (v[len(v)-1] == ' ' || v[len(v)-1] == '\t') {
		v = v[:len(v)-1]
	}
	return v
}

// asciiEqualFold compares b with lower, which is lower case ASCII.
func asciiEqualFold(b []byte, lower string) bool {
	if len(b) != len(lower) {
		return false
	}
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}

var tokenByte, fastPathByte [256]bool

func init() {
	for c := 0; c < 256; c++ {
		alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		tokenByte[c] = alnum || c < 0x80 && bytes.IndexByte([]byte("!#$%&'*+-.^_`|~"), byte(c)) >= 0
		fastPathByte[c] = alnum || c < 0x80 && bytes.IndexByte([]byte("-._~!$&'()*+,=:@/"), byte(c)) >= 0
	}
}
