package edge

import (
	"encoding/base64"
	"encoding/hex"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/edgeflow/edgeflow/internal/publish/metadata"
)

// encoding is one stored representation of a file.
type encoding uint8

const (
	encIdentity encoding = iota
	encBrotli
	encGzip
)

// token is the Content-Encoding value.
func (e encoding) token() string {
	switch e {
	case encBrotli:
		return "br"
	case encGzip:
		return "gzip"
	}
	return ""
}

// suffix is the key suffix of the stored representation.
func (e encoding) suffix() string {
	switch e {
	case encBrotli:
		return metadata.BrotliSuffix
	case encGzip:
		return metadata.GzipSuffix
	}
	return ""
}

// size is the byte length of the representation (0 when it is not stored).
func (e encoding) size(f metadata.File) int64 {
	switch e {
	case encBrotli:
		return f.BrotliSize
	case encGzip:
		return f.GzipSize
	}
	return f.Size
}

// negotiateEncoding picks the representation by the Accept-Encoding header:
// the stored one with the highest q-value, preferring brotli, then gzip, then
// identity at equal q. Without the header, identity is sent. When nothing
// acceptable is stored (identity;q=0 and no usable compression), identity is
// sent all the same, which RFC 9110 allows instead of a 406.
func negotiateEncoding(header string, f metadata.File) encoding {
	if header == "" || f.BrotliSize == 0 && f.GzipSize == 0 {
		return encIdentity
	}
	qBrotli, qGzip, qIdentity, qAny := -1.0, -1.0, -1.0, -1.0 // -1: not mentioned
	for part := range strings.SplitSeq(header, ",") {
		coding, params, _ := strings.Cut(part, ";")
		q := 1.0
		for param := range strings.SplitSeq(params, ";") {
			k, v, _ := strings.Cut(param, "=")
			if strings.EqualFold(strings.TrimSpace(k), "q") {
				parsed, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
				if err != nil || parsed < 0 || parsed > 1 {
					parsed = 0 // an unreadable weight does not make a coding acceptable
				}
				q = parsed
			}
		}
		switch strings.ToLower(strings.TrimSpace(coding)) {
		case "br":
			qBrotli = q
		case "gzip", "x-gzip":
			qGzip = q
		case "identity":
			qIdentity = q
		case "*":
			qAny = q
		}
	}
	effective := func(q float64) float64 {
		switch {
		case q >= 0:
			return q
		case qAny >= 0:
			return qAny
		}
		return 0
	}
	best, bestQ := encIdentity, effective(qIdentity)
	if qIdentity < 0 && qAny < 0 {
		bestQ = 1 // identity is acceptable unless excluded
	}
	if q := effective(qGzip); f.GzipSize > 0 && q > 0 && q >= bestQ {
		best, bestQ = encGzip, q
	}
	if q := effective(qBrotli); f.BrotliSize > 0 && q > 0 && q >= bestQ {
		best = encBrotli
	}
	return best
}

// entityTag is the strong ETag of one representation: the first 16 hex
// digits of the file's integrity digest plus the encoding, so equal content
// has equal tags across versions and the tag never depends on the store.
func entityTag(ver *metadata.Version, f metadata.File, enc encoding) string {
	digest := sriPrefixHex(f.SRI)
	if digest == "" {
		// No usable SRI: fall back to the identity of the published file,
		// which is immutable too.
		digest = strconv.FormatUint(fnv64(ver.Name+"@"+ver.Version+"/"+f.Path), 16) + "-" + strconv.FormatInt(f.Size, 16)
	}
	switch enc {
	case encBrotli:
		return `"` + digest + `-br"`
	case encGzip:
		return `"` + digest + `-gz"`
	}
	return `"` + digest + `"`
}

// sriPrefixHex returns the first 8 bytes of an SRI digest ("sha512-<base64>") in hex.
func sriPrefixHex(sri string) string {
	_, b64, ok := strings.Cut(sri, "-")
	if !ok || len(b64) < 12 {
		return ""
	}
	// 12 base64 characters decode to 9 bytes, enough for 8.
	var buf [9]byte
	if _, err := base64.StdEncoding.Decode(buf[:], []byte(b64[:12])); err != nil {
		return ""
	}
	return hex.EncodeToString(buf[:8])
}

func fnv64(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}

// contentTypeOf is the version document's type, with a UTF-8 charset added
// to textual types that lack one.
func contentTypeOf(f metadata.File) string {
	ct := f.ContentType
	if ct == "" {
		return "application/octet-stream"
	}
	if strings.Contains(ct, "charset=") {
		return ct
	}
	base := strings.ToLower(strings.TrimSpace(strings.SplitN(ct, ";", 2)[0]))
	if strings.HasPrefix(base, "text/") || strings.HasSuffix(base, "+json") || strings.HasSuffix(base, "+xml") ||
		base == "application/javascript" || base == "application/json" || base == "application/xml" {
		return ct + "; charset=utf-8"
	}
	return ct
}

// notModified evaluates If-None-Match, or If-Modified-Since when there is no
// If-None-Match (RFC 9110 §13.2.2).
func notModified(r *http.Request, tag string, lastModified time.Time) bool {
	return notModifiedBy(r.Header.Get("If-None-Match"), r.Header.Get("If-Modified-Since"), tag, lastModified)
}

// notModifiedBy is notModified of the two headers' values.
func notModifiedBy(inm, ims, tag string, lastModified time.Time) bool {
	if inm != "" {
		return etagListMatches(inm, tag)
	}
	if ims != "" && !lastModified.IsZero() {
		t, err := http.ParseTime(ims)
		return err == nil && !lastModified.After(t)
	}
	return false
}

// etagListMatches is the weak comparison of If-None-Match against tag.
func etagListMatches(list, tag string) bool {
	tag = strings.TrimPrefix(tag, "W/")
	for candidate := range strings.SplitSeq(list, ",") {
		candidate = strings.TrimSpace(candidate)
		if candidate == "*" || strings.TrimPrefix(candidate, "W/") == tag {
			return true
		}
	}
	return false
}

// ifRangeMatches reports whether a Range may be honoured given If-Range: an
// entity tag must match strongly, a date must equal Last-Modified.
func ifRangeMatches(ifRange, identityTag string, lastModified time.Time) bool {
	switch {
	case ifRange == "":
		return true
	case strings.HasPrefix(ifRange, `"`):
		return ifRange == identityTag
	case strings.HasPrefix(ifRange, "W/"):
		return false
	}
	t, err := http.ParseTime(ifRange)
	return err == nil && !lastModified.IsZero() && lastModified.Equal(t)
}

// byteRange is [start, start+length).
type byteRange struct{ start, length int64 }

// parseRange reads a single-range "bytes=" header against a body of size
// bytes. It returns nil, false when the header is to be ignored (another
// unit, several ranges, bad syntax: the whole body is sent) and nil, true
// when the range cannot be satisfied (416).
func parseRange(header string, size int64) (*byteRange, bool) {
	spec, ok := strings.CutPrefix(header, "bytes=")
	if !ok || strings.Contains(spec, ",") {
		return nil, false
	}
	first, last, ok := strings.Cut(strings.TrimSpace(spec), "-")
	if !ok {
		return nil, false
	}
	first, last = strings.TrimSpace(first), strings.TrimSpace(last)
	if first == "" {
		n, ok := parseDigits(last)
		if !ok {
			return nil, false
		}
		if n == 0 || size == 0 {
			return nil, true
		}
		n = min(n, size)
		return &byteRange{start: size - n, length: n}, false
	}
	start, ok := parseDigits(first)
	if !ok {
		return nil, false
	}
	end := size - 1
	if last != "" {
		if end, ok = parseDigits(last); !ok || end < start {
			return nil, false
		}
	}
	if start >= size {
		return nil, true
	}
	end = min(end, size-1)
	return &byteRange{start: start, length: end - start + 1}, false
}

// parseDigits parses a non-empty run of decimal digits (no sign, no spaces).
func parseDigits(s string) (int64, bool) {
	if s == "" || len(s) > 18 {
		return 0, false
	}
	var n int64
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
		n = n*10 + int64(s[i]-'0')
	}
	return n, true
}
