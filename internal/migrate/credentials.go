package migrate

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/edgeflow/edgeflow/internal/keyring"
)

// Credentials are the keys of one side of a job, in plain text. They exist
// only in the starter (read from the environment or a file) and inside a
// migrate activity (opened from SealedCredentials). They refuse to be
// printed or marshalled, so they cannot reach a log or a workflow by mistake.
type Credentials struct {
	AccessKey    string
	SecretKey    string
	SessionToken string
	// GCSKey is a Google Cloud Storage service-account key file (JSON);
	// empty for S3, and for GCS with the worker's default credentials.
	GCSKey string
}

// String never shows the keys.
func (c Credentials) String() string { return "credentials (redacted)" }

// GoString keeps %#v from showing the keys.
func (c Credentials) GoString() string { return c.String() }

// MarshalJSON refuses: credentials cross process boundaries only sealed.
func (c Credentials) MarshalJSON() ([]byte, error) {
	return nil, errors.New("plain credentials must not be marshalled: seal them")
}

// IsZero reports whether no key is set.
func (c Credentials) IsZero() bool {
	return c.AccessKey == "" && c.SecretKey == "" && c.SessionToken == "" && c.GCSKey == ""
}

// sealedPayload is the plaintext inside SealedCredentials.
type sealedPayload struct {
	AccessKey    string `json:"a"`
	SecretKey    string `json:"s"`
	SessionToken string `json:"t,omitempty"`
	GCSKey       string `json:"g,omitempty"`
}

// SealedCredentials are Credentials sealed with the codec keyring for one
// side of one job. The starter seals them, only the migrate activities open
// them, and everything in between (workflow input, history, Web UI, logs)
// sees ciphertext only: they print and marshal as base64 of the sealed bytes.
type SealedCredentials struct {
	sealed []byte
}

// Sides of a job, which sealed credentials are bound to.
const (
	SideSource = "source"
	SideDest   = "destination"
)

// StoreBinding is the store one side's credentials are sealed to: they
// open only for a job side that names the same store, so an input copied
// from a history with another endpoint (or bucket, or prefix) cannot send
// them elsewhere.
type StoreBinding struct {
	Provider string   `json:"provider,omitempty"`
	Endpoint string   `json:"endpoint,omitempty"` // host:port; empty on GCS
	Secure   bool     `json:"secure,omitempty"`
	Bucket   string   `json:"bucket"`
	Prefix   string   `json:"prefix,omitempty"`
	Pinned   []string `json:"pinned,omitempty"`
}

// The versions of the associated data. v1 (before stores were bound) named
// the job and side only; v2 adds the store.
const (
	bindingV1 = "edgeflow migrate credentials\x00"
	bindingV2 = "edgeflow migrate credentials v2\x00"
)

// binding is the associated data: credentials sealed for one job's source
// on one store do not open as another job's, as the same job's
// destination, or for another store.
func binding(job, side string, store StoreBinding) []byte {
	b, _ := json.Marshal(store) // plain strings and bools: never fails
	return []byte(bindingV2 + job + "\x00" + side + "\x00" + string(b))
}

// SealCredentials seals c for the given side of job, bound to its store.
func SealCredentials(r *keyring.Keyring, c Credentials, job, side string, store StoreBinding) (SealedCredentials, error) {
	plain, err := json.Marshal(sealedPayload(c))
	if err != nil {
		return SealedCredentials{}, err
	}
	b, err := r.Seal(plain, binding(job, side, store))
	if err != nil {
		return SealedCredentials{}, err
	}
	return SealedCredentials{sealed: b}, nil
}

// ErrUnboundCredentials is a value sealed before credentials were bound to
// their store (v1): nothing says which store it was meant for, so it is
// refused; starting the job again seals it anew.
var ErrUnboundCredentials = errors.New("sealed by an older version without binding them to their store: start the job again to seal them anew")

// Open returns the credentials; the keyring must hold the key they were
// sealed with, and job, side and store must be the ones they were sealed
// for. Errors name the side and store, never a secret.
func (s SealedCredentials) Open(r *keyring.Keyring, job, side string, store StoreBinding) (Credentials, error) {
	if s.IsZero() {
		return Credentials{}, fmt.Errorf("%s credentials of job %s: none were sealed", side, job)
	}
	plain, err := r.Open(s.sealed, binding(job, side, store))
	if err != nil {
		if _, v1 := r.Open(s.sealed, []byte(bindingV1+job+"\x00"+side)); v1 == nil {
			return Credentials{}, fmt.Errorf("%s credentials of job %s: %w", side, job, ErrUnboundCredentials)
		}
		return Credentials{}, fmt.Errorf("%s credentials of job %s do not open for %s: %w (sealed for another job, side or store, or CODEC_KEYS differ between the starter and the migrate workers)",
			side, job, store, err)
	}
	var p sealedPayload
	if err := json.Unmarshal(plain, &p); err != nil {
		return Credentials{}, fmt.Errorf("%s credentials of job %s: malformed inside", side, job)
	}
	return Credentials(p), nil
}

// String names the store for errors: its location and endpoint.
func (b StoreBinding) String() string {
	loc := Location{Bucket: b.Bucket, Prefix: b.Prefix, Provider: b.Provider}.String()
	if b.Endpoint == "" {
		return loc
	}
	return loc + " on " + b.Endpoint
}

// IsZero reports whether nothing is sealed.
func (s SealedCredentials) IsZero() bool { return len(s.sealed) == 0 }

// KeyID is the id of the key they were sealed with.
func (s SealedCredentials) KeyID() string {
	id, _ := keyring.KeyID(s.sealed)
	return id
}

// String is the ciphertext.
func (s SealedCredentials) String() string {
	return "sealed:" + base64.StdEncoding.EncodeToString(s.sealed)
}

// GoString is the ciphertext.
func (s SealedCredentials) GoString() string { return s.String() }

// MarshalJSON writes the ciphertext as a base64 string.
func (s SealedCredentials) MarshalJSON() ([]byte, error) {
	if s.IsZero() {
		return []byte(`""`), nil
	}
	return json.Marshal(base64.StdEncoding.EncodeToString(s.sealed))
}

// UnmarshalJSON reads what MarshalJSON wrote.
func (s *SealedCredentials) UnmarshalJSON(b []byte) error {
	var text string
	if err := json.Unmarshal(b, &text); err != nil {
		return fmt.Errorf("sealed credentials: %w", err)
	}
	raw, err := base64.StdEncoding.DecodeString(text)
	if err != nil {
		return fmt.Errorf("sealed credentials: not base64")
	}
	s.sealed = raw
	return nil
}

// The environment variables (and credentials-file entries) credentials come from.
const (
	EnvSourceAccessKey    = "MIGRATE_SOURCE_ACCESS_KEY"
	EnvSourceSecretKey    = "MIGRATE_SOURCE_SECRET_KEY"
	EnvSourceSessionToken = "MIGRATE_SOURCE_SESSION_TOKEN"
	EnvDestAccessKey      = "MIGRATE_DEST_ACCESS_KEY"
	EnvDestSecretKey      = "MIGRATE_DEST_SECRET_KEY"
	EnvDestSessionToken   = "MIGRATE_DEST_SESSION_TOKEN"
)

var credentialNames = []string{EnvSourceAccessKey, EnvSourceSecretKey, EnvSourceSessionToken,
	EnvDestAccessKey, EnvDestSecretKey, EnvDestSessionToken, EnvSourceGCSCredentialsFile, EnvSourceGCSKey}

// LoadCredentials reads both sides' credentials: each variable from the
// environment (getenv), else from the credentials file at path (when path
// is set). The file holds NAME=VALUE lines with the same names; # starts a
// comment line and values may be quoted. Missing keys are an error that
// says which variable to set. Errors never contain a value.
func LoadCredentials(getenv func(string) string, path string) (source, dest Credentials, err error) {
	return LoadCredentialsFor(getenv, path, "")
}

// LoadCredentialsFor is LoadCredentials for a source of the given provider:
// for ProviderGCS the source needs no S3 keys, and its key is the file
// named by EnvSourceGCSCredentialsFile, read here to be sealed, or none
// (the workers' application default credentials).
func LoadCredentialsFor(getenv func(string) string, path, sourceProvider string) (source, dest Credentials, err error) {
	file := map[string]string{}
	if path != "" {
		if file, err = readCredentialsFile(path); err != nil {
			return source, dest, err
		}
	}
	get := func(name string) string {
		if v := getenv(name); v != "" {
			return v
		}
		return file[name]
	}
	where := "the environment"
	if path != "" {
		where += " or " + path
	}
	return CredentialsFrom(get, where, sourceProvider)
}

// CredentialsFrom reads both sides' credentials by their names with get,
// which says where they come from (where, in errors); the rules of
// LoadCredentialsFor. Errors never contain a value.
func CredentialsFrom(get func(string) string, where, sourceProvider string) (source, dest Credentials, err error) {
	source = Credentials{AccessKey: get(EnvSourceAccessKey), SecretKey: get(EnvSourceSecretKey), SessionToken: get(EnvSourceSessionToken)}
	dest = Credentials{AccessKey: get(EnvDestAccessKey), SecretKey: get(EnvDestSecretKey), SessionToken: get(EnvDestSessionToken)}
	required := map[string]string{EnvSourceAccessKey: source.AccessKey, EnvSourceSecretKey: source.SecretKey,
		EnvDestAccessKey: dest.AccessKey, EnvDestSecretKey: dest.SecretKey}
	if sourceProvider == ProviderGCS {
		source = Credentials{}
		if key := get(EnvSourceGCSKey); key != "" {
			if len(key) > maxGCSKeyFile {
				return source, dest, fmt.Errorf("credentials: %s is larger than %d bytes; a key file is about 2 KiB", EnvSourceGCSKey, maxGCSKeyFile)
			}
			source.GCSKey = key
		} else if keyFile := get(EnvSourceGCSCredentialsFile); keyFile != "" {
			if source.GCSKey, err = readGCSKey(keyFile); err != nil {
				return source, dest, fmt.Errorf("credentials: %w", err)
			}
		}
		delete(required, EnvSourceAccessKey)
		delete(required, EnvSourceSecretKey)
	}
	var missing []string
	for name, v := range required {
		if v == "" {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		return source, dest, fmt.Errorf("credentials: %s not set in %s (credentials are never taken from flags)", strings.Join(missing, ", "), where)
	}
	return source, dest, nil
}

func readCredentialsFile(path string) (map[string]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("credentials file: %w", err)
	}
	out := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		line = strings.TrimPrefix(line, "export ")
		name, value, ok := strings.Cut(line, "=")
		name = strings.TrimSpace(name)
		if !ok {
			return nil, fmt.Errorf("credentials file %s:%d: want NAME=VALUE", path, n)
		}
		known := false
		for _, k := range credentialNames {
			known = known || k == name
		}
		if !known {
			return nil, fmt.Errorf("credentials file %s:%d: unknown name %q (known: %s)", path, n, name, strings.Join(credentialNames, ", "))
		}
		value = strings.TrimSpace(value)
		if len(value) >= 2 && (value[0] == '"' || value[0] == '\'') && value[len(value)-1] == value[0] {
			value = value[1 : len(value)-1]
		}
		out[name] = value
	}
	return out, sc.Err()
}
