package metadata

import (
	"fmt"
	"net/url"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/edgeflow/edgeflow/internal/publish/catalog"
)

// StoredAtError says why a file's storedAt key is refused.
type StoredAtError struct {
	Package, Key, Reason string
}

func (e *StoredAtError) Error() string {
	return fmt.Sprintf("storedAt %q of package %s refused: %s", e.Key, e.Package, e.Reason)
}

// maxKeyBytes is S3's limit on an object key.
const maxKeyBytes = 1024

// CheckStoredAt accepts key as a file's storedAt only when it names an
// object of package name's own tree, <name>/<version>/<path>: every key a
// publish of name writes. A version document is data from a bucket, so
// whoever can write there must not make the pipeline, the edge or the audit
// read or write another package's objects (lib-extra/… for lib), or keys a
// store or proxy might resolve elsewhere: "." and ".." segments, empty
// segments, backslashes, control characters, and those spelled URL-encoded
// (%2e%2e, %2f, %5c). Publishing, the edge and the audit all call it.
func CheckStoredAt(name, key string) error {
	refuse := func(reason string) error { return &StoredAtError{Package: name, Key: key, Reason: reason} }
	switch {
	case !catalog.ValidName(name):
		return refuse("not a valid package name")
	case key == "":
		return refuse("empty")
	case len(key) > maxKeyBytes:
		return refuse(fmt.Sprintf("longer than %d bytes", maxKeyBytes))
	case !utf8.ValidString(key):
		return refuse("not UTF-8")
	}
	rest, ok := strings.CutPrefix(key, name+"/")
	if !ok {
		return refuse(fmt.Sprintf("outside the package's own prefix %s/", name))
	}
	segments := strings.Split(rest, "/")
	if len(segments) < 2 {
		return refuse("names no file under a version (<name>/<version>/<path>)")
	}
	for _, seg := range segments {
		if why := badSegment(seg); why != "" {
			return refuse(why)
		}
	}
	return nil
}

// badSegment says what is wrong with one segment of a key, as written and
// as each round of URL decoding would read it ("" when nothing).
func badSegment(seg string) string {
	for range 4 {
		switch {
		case seg == "":
			return "has an empty segment"
		case seg == "." || seg == "..":
			return fmt.Sprintf("has a %q segment", seg)
		case strings.ContainsAny(seg, "/\\"):
			return "has a backslash, or a slash URL-encoded"
		case strings.ContainsFunc(seg, unicode.IsControl):
			return "has a control character"
		}
		if !strings.Contains(seg, "%") {
			return ""
		}
		decoded, err := url.PathUnescape(seg)
		if err != nil || decoded == seg {
			return "" // a literal '%': stores keep it as written
		}
		seg = decoded
	}
	return "URL-encoded more times than any real file name"
}

// CheckedKey is Key, with a StoredAt refused unless CheckStoredAt accepts
// it for the package name: what every reader of a version document uses.
func (f File) CheckedKey(name, version string) (string, error) {
	if f.StoredAt == "" {
		return FileKey(name, version, f.Path), nil
	}
	if err := CheckStoredAt(name, f.StoredAt); err != nil {
		return "", err
	}
	return f.StoredAt, nil
}
