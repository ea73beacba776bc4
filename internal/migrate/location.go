package migrate

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Location is a bucket and an optional key prefix: s3://BUCKET[/PREFIX],
// or gs://BUCKET[/PREFIX] for a source on Google Cloud Storage.
type Location struct {
	Bucket string `json:"bucket"`
	Prefix string `json:"prefix,omitempty"`
	// Provider is empty for S3 (and any S3-compatible store) and
	// ProviderGCS for Google Cloud Storage.
	Provider string `json:"provider,omitempty"`
}

// String is the location in s3:// (or gs://) form.
func (l Location) String() string {
	scheme := "s3://"
	if l.Provider == ProviderGCS {
		scheme = "gs://"
	}
	if l.Prefix == "" {
		return scheme + l.Bucket
	}
	return scheme + l.Bucket + "/" + l.Prefix
}

// ParseLocation reads s3://BUCKET[/PREFIX]. The prefix is kept exactly as
// written after the bucket's slash, trailing slash included: "s3://b/copy/"
// has the prefix "copy/", "s3://b/img" matches img.png and img/a.png alike.
func ParseLocation(s string) (Location, error) {
	rest, ok := strings.CutPrefix(s, "s3://")
	if !ok {
		return Location{}, fmt.Errorf("%q: a location is s3://BUCKET[/PREFIX]", s)
	}
	bucket, prefix, _ := strings.Cut(rest, "/")
	if err := CheckBucketName(bucket); err != nil {
		return Location{}, fmt.Errorf("%q: %w", s, err)
	}
	if !utf8.ValidString(prefix) {
		return Location{}, fmt.Errorf("%q: the prefix is not valid UTF-8", s)
	}
	if len(prefix) > 1024 {
		return Location{}, fmt.Errorf("%q: the prefix is %d bytes; keys are at most 1024", s, len(prefix))
	}
	return Location{Bucket: bucket, Prefix: prefix}, nil
}

// CheckBucketName applies S3's bucket naming rules: 3 to 63 characters of
// lower-case letters, digits, dots and hyphens, starting and ending with a
// letter or digit, no two adjacent dots, and not an IP address.
func CheckBucketName(b string) error {
	switch {
	case b == "":
		return fmt.Errorf("the bucket name is empty")
	case len(b) < 3 || len(b) > 63:
		return fmt.Errorf("bucket %q: a bucket name has 3 to 63 characters", b)
	case net.ParseIP(b) != nil:
		return fmt.Errorf("bucket %q: a bucket name must not be an IP address", b)
	case strings.Contains(b, ".."):
		return fmt.Errorf("bucket %q: a bucket name must not contain \"..\"", b)
	}
	for i, c := range b {
		ok := c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '.' || c == '-'
		if !ok {
			return fmt.Errorf("bucket %q: character %q at %d; use lower-case letters, digits, '.' and '-'", b, c, i)
		}
	}
	if !isAlnum(b[0]) || !isAlnum(b[len(b)-1]) {
		return fmt.Errorf("bucket %q: a bucket name starts and ends with a letter or digit", b)
	}
	return nil
}

func isAlnum(c byte) bool { return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' }

// KeyMap says where a source key lands: the destination prefix is prepended
// to the key as is (s3://dst/copy/ puts a/b.js at copy/a/b.js). With
// StripSourcePrefix, the source prefix is removed first (s3://old/ajax/libs/
// into s3://cdn/ puts ajax/libs/x/1/x.js at x/1/x.js).
type KeyMap struct {
	SourcePrefix      string `json:"sourcePrefix,omitempty"`
	DestPrefix        string `json:"destPrefix,omitempty"`
	StripSourcePrefix bool   `json:"stripSourcePrefix,omitempty"`
}

// Dest is the destination key of source key k.
func (m KeyMap) Dest(k string) string {
	if m.StripSourcePrefix {
		k = strings.TrimPrefix(k, m.SourcePrefix)
	}
	return m.DestPrefix + k
}

// CheckKey reports what makes k unusable as an object key: S3 keys are
// 1 to 1024 bytes of valid UTF-8.
func CheckKey(k string) error {
	switch {
	case k == "":
		return fmt.Errorf("empty key")
	case len(k) > 1024:
		return fmt.Errorf("key of %d bytes; at most 1024", len(k))
	case !utf8.ValidString(k):
		return fmt.Errorf("key %s is not valid UTF-8", strconv.Quote(k))
	}
	return nil
}
