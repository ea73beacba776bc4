package migrate

import (
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"unicode/utf8"
)

// ProviderGCS marks a location on Google Cloud Storage (gs://).
const ProviderGCS = "gcs"

// EnvSourceGCSCredentialsFile names a service-account key file (JSON) for a
// gs:// source. Unset, the workers use their application default
// credentials (GOOGLE_APPLICATION_CREDENTIALS, the metadata server, ...).
const EnvSourceGCSCredentialsFile = "MIGRATE_SOURCE_GCS_CREDENTIALS_FILE"

// EnvSourceGCSKey is a gs:// source's service-account key itself (its
// JSON), for callers that cannot name a file on the starter's machine: the
// console's API takes it in a start's credentials. It wins over the file.
const EnvSourceGCSKey = "MIGRATE_SOURCE_GCS_KEY"

// maxGCSKeyFile bounds what is read as a key file (one is about 2 KiB).
const maxGCSKeyFile = 64 << 10

// ParseSourceLocation reads a source: s3://BUCKET[/PREFIX] as ParseLocation,
// or gs://BUCKET[/PREFIX] on Google Cloud Storage.
func ParseSourceLocation(s string) (Location, error) {
	rest, ok := strings.CutPrefix(s, "gs://")
	if !ok {
		l, err := ParseLocation(s)
		if err != nil && !strings.HasPrefix(s, "s3://") {
			return l, fmt.Errorf("%q: a source is s3://BUCKET[/PREFIX] or gs://BUCKET[/PREFIX]", s)
		}
		return l, err
	}
	bucket, prefix, _ := strings.Cut(rest, "/")
	if err := CheckGCSBucketName(bucket); err != nil {
		return Location{}, fmt.Errorf("%q: %w", s, err)
	}
	if !utf8.ValidString(prefix) {
		return Location{}, fmt.Errorf("%q: the prefix is not valid UTF-8", s)
	}
	if len(prefix) > 1024 {
		return Location{}, fmt.Errorf("%q: the prefix is %d bytes; object names are at most 1024", s, len(prefix))
	}
	return Location{Bucket: bucket, Prefix: prefix, Provider: ProviderGCS}, nil
}

// CheckGCSBucketName applies Google Cloud Storage's bucket naming rules
// ("Bucket names" in its documentation): lower-case letters, digits, '-',
// '_' and '.', starting and ending with a letter or digit, 3 to 63
// characters (up to 222 with dots, each dot-separated part at most 63), not
// an IP address, not starting with "goog".
func CheckGCSBucketName(b string) error {
	switch {
	case b == "":
		return fmt.Errorf("the bucket name is empty")
	case len(b) < 3 || len(b) > 222 || len(b) > 63 && !strings.Contains(b, "."):
		return fmt.Errorf("bucket %q: a bucket name has 3 to 63 characters (222 with dots)", b)
	case net.ParseIP(b) != nil:
		return fmt.Errorf("bucket %q: a bucket name must not be an IP address", b)
	case strings.HasPrefix(b, "goog"):
		return fmt.Errorf("bucket %q: a bucket name must not start with \"goog\"", b)
	}
	for _, part := range strings.Split(b, ".") {
		if len(part) == 0 || len(part) > 63 {
			return fmt.Errorf("bucket %q: each dot-separated part has 1 to 63 characters", b)
		}
	}
	for i, c := range b {
		ok := c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '.' || c == '-' || c == '_'
		if !ok {
			return fmt.Errorf("bucket %q: character %q at %d; use lower-case letters, digits, '.', '-' and '_'", b, c, i)
		}
	}
	if !isAlnum(b[0]) || !isAlnum(b[len(b)-1]) {
		return fmt.Errorf("bucket %q: a bucket name starts and ends with a letter or digit", b)
	}
	return nil
}

// readGCSKey reads the key file named by EnvSourceGCSCredentialsFile. Its
// errors name the file, never its contents.
func readGCSKey(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("%s: %w", EnvSourceGCSCredentialsFile, err)
	}
	defer func() { _ = f.Close() }() // read-only
	data, err := io.ReadAll(io.LimitReader(f, maxGCSKeyFile+1))
	switch {
	case err != nil:
		return "", fmt.Errorf("%s: read %s: %w", EnvSourceGCSCredentialsFile, path, err)
	case len(data) == 0:
		return "", fmt.Errorf("%s: %s is empty", EnvSourceGCSCredentialsFile, path)
	case len(data) > maxGCSKeyFile:
		return "", fmt.Errorf("%s: %s is larger than %d bytes; a key file is about 2 KiB", EnvSourceGCSCredentialsFile, path, maxGCSKeyFile)
	}
	return string(data), nil
}
