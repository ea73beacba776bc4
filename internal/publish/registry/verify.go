package registry

import (
	"bytes"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"strings"
)

// ErrIntegrity is wrapped by Verify's error when the bytes do not match the
// published digest, so callers can treat a corrupt or tampered tarball as a
// permanent failure of that download rather than a transient one.
var ErrIntegrity = errors.New("integrity mismatch")

// integrityAlgorithms lists the SRI algorithms understood, strongest first.
var integrityAlgorithms = []struct {
	name string
	new  func() hash.Hash
}{
	{"sha512", sha512.New},
	{"sha384", sha512.New384},
	{"sha256", sha256.New},
	{"sha1", sha1.New},
}

// Verifier hashes a tarball as it streams by and checks it against the
// registry's digest. It is an io.Writer: read through
// io.TeeReader(body, verifier), then call Verify after the last byte.
type Verifier struct {
	algorithm string
	expected  [][]byte // any one matching is enough, as in SRI
	hash      hash.Hash
	// encode shows digests in errors the way the registry wrote them.
	encode func([]byte) string
}

// NewVerifier prepares a check against npm's dist.integrity (an SRI string,
// possibly several space-separated hashes; the strongest supported algorithm
// is used) or, when integrity has no supported hash, the hex SHA-1 shasum.
// It fails when neither gives a usable digest.
func NewVerifier(integrity, shasum string) (*Verifier, error) {
	digests := map[string][][]byte{}
	var malformed []string
	for _, token := range strings.Fields(integrity) {
		algorithm, encoded, ok := strings.Cut(token, "-")
		if !ok {
			malformed = append(malformed, token)
			continue
		}
		// SRI allows options after '?'; none affect the digest.
		encoded, _, _ = strings.Cut(encoded, "?")
		digest, err := base64.StdEncoding.DecodeString(encoded)
		if err != nil {
			malformed = append(malformed, token)
			continue
		}
		digests[algorithm] = append(digests[algorithm], digest)
	}
	for _, algo := range integrityAlgorithms {
		expected := digests[algo.name]
		if len(expected) == 0 {
			continue
		}
		h := algo.new()
		for _, digest := range expected {
			if len(digest) != h.Size() {
				return nil, fmt.Errorf("integrity %s digest is %d bytes, want %d", algo.name, len(digest), h.Size())
			}
		}
		return &Verifier{algorithm: algo.name, expected: expected, hash: h, encode: base64.StdEncoding.EncodeToString}, nil
	}

	if shasum = strings.TrimSpace(shasum); shasum != "" {
		digest, err := hex.DecodeString(shasum)
		if err != nil || len(digest) != sha1.Size {
			return nil, fmt.Errorf("shasum %q is not a hex SHA-1 digest", truncate(shasum))
		}
		return &Verifier{algorithm: "sha1", expected: [][]byte{digest}, hash: sha1.New(), encode: hex.EncodeToString}, nil
	}
	if len(malformed) > 0 {
		return nil, fmt.Errorf("integrity %q has no usable hash and there is no shasum", truncate(integrity))
	}
	if integrity != "" {
		return nil, fmt.Errorf("integrity %q uses no supported algorithm (sha512, sha384, sha256, sha1) and there is no shasum", truncate(integrity))
	}
	return nil, errors.New("no integrity or shasum to verify against")
}

// Write hashes p; it never fails.
func (v *Verifier) Write(p []byte) (int, error) { return v.hash.Write(p) }

// Algorithm names the hash being checked, e.g. "sha512".
func (v *Verifier) Algorithm() string { return v.algorithm }

// Verify compares the digest of everything written with the expected one.
func (v *Verifier) Verify() error {
	got := v.hash.Sum(nil)
	for _, want := range v.expected {
		if bytes.Equal(got, want) {
			return nil
		}
	}
	return fmt.Errorf("%w: expected %s-%s, got %s-%s", ErrIntegrity,
		v.algorithm, truncate(v.encode(v.expected[0])),
		v.algorithm, truncate(v.encode(got)))
}

// truncate shortens a digest or header for an error message.
func truncate(s string) string {
	const keep = 16
	if len(s) <= keep {
		return s
	}
	return s[:keep] + "…"
}
