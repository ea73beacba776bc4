package registry

import (
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"io"
	"strings"
	"testing"
)

var (
	payload      = []byte("the bytes of a tarball, streamed")
	otherPayload = []byte("something else entirely")
)

func sri(algorithm string, sum []byte) string {
	return algorithm + "-" + base64.StdEncoding.EncodeToString(sum)
}

func sha512Of(b []byte) []byte { s := sha512.Sum512(b); return s[:] }
func sha384Of(b []byte) []byte { s := sha512.Sum384(b); return s[:] }
func sha256Of(b []byte) []byte { s := sha256.Sum256(b); return s[:] }
func sha1Of(b []byte) []byte   { s := sha1.Sum(b); return s[:] }

// stream reads payload through the verifier the way the pipeline does.
func stream(t *testing.T, v *Verifier, data []byte) {
	t.Helper()
	if _, err := io.Copy(io.Discard, io.TeeReader(strings.NewReader(string(data)), v)); err != nil {
		t.Fatal(err)
	}
}

func TestVerifierMatches(t *testing.T) {
	tests := []struct {
		name, integrity, shasum, wantAlgorithm string
	}{
		{"sha512", sri("sha512", sha512Of(payload)), "", "sha512"},
		{"strongest of several wins even when a weaker one is wrong",
			sri("sha1", sha1Of(otherPayload)) + " " + sri("sha512", sha512Of(payload)), "", "sha512"},
		{"sha384 over sha256", sri("sha256", sha256Of(otherPayload)) + " " + sri("sha384", sha384Of(payload)), "", "sha384"},
		{"any of two sha512 digests", sri("sha512", sha512Of(otherPayload)) + " " + sri("sha512", sha512Of(payload)), "", "sha512"},
		{"SRI options ignored", sri("sha256", sha256Of(payload)) + "?foo", "", "sha256"},
		{"sha1 shasum fallback", "", hex.EncodeToString(sha1Of(payload)), "sha1"},
		{"unsupported integrity falls back to shasum", "md5-AAAAAAAAAAAAAAAAAAAAAA==", hex.EncodeToString(sha1Of(payload)), "sha1"},
		{"integrity preferred over shasum", sri("sha512", sha512Of(payload)), hex.EncodeToString(sha1Of(otherPayload)), "sha512"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := NewVerifier(tt.integrity, tt.shasum)
			if err != nil {
				t.Fatal(err)
			}
			if v.Algorithm() != tt.wantAlgorithm {
				t.Errorf("algorithm = %s, want %s", v.Algorithm(), tt.wantAlgorithm)
			}
			stream(t, v, payload)
			if err := v.Verify(); err != nil {
				t.Errorf("Verify: %v", err)
			}
		})
	}
}

func TestVerifierMismatch(t *testing.T) {
	tests := []struct {
		name, integrity, shasum string
		wantIn                  []string
	}{
		{"sha512", sri("sha512", sha512Of(payload)), "", []string{
			"expected sha512-" + base64.StdEncoding.EncodeToString(sha512Of(payload))[:16] + "…",
			"got sha512-" + base64.StdEncoding.EncodeToString(sha512Of(otherPayload))[:16] + "…",
		}},
		{"sha1 shasum in hex", "", hex.EncodeToString(sha1Of(payload)), []string{
			"expected sha1-" + hex.EncodeToString(sha1Of(payload))[:16] + "…",
			"got sha1-" + hex.EncodeToString(sha1Of(otherPayload))[:16] + "…",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := NewVerifier(tt.integrity, tt.shasum)
			if err != nil {
				t.Fatal(err)
			}
			stream(t, v, otherPayload)
			err = v.Verify()
			if !errors.Is(err, ErrIntegrity) {
				t.Fatalf("Verify = %v, want ErrIntegrity", err)
			}
			for _, s := range tt.wantIn {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q lacks %q", err, s)
				}
			}
		})
	}
}

func TestNewVerifierRejects(t *testing.T) {
	tests := []struct{ name, integrity, shasum, wantIn string }{
		{"nothing", "", "", "no integrity or shasum"},
		{"unsupported only", "md5-AAAAAAAAAAAAAAAAAAAAAA==", "", "no supported algorithm"},
		{"bad base64", "sha512-!!!", "", "no usable hash"},
		{"wrong digest length", "sha512-" + base64.StdEncoding.EncodeToString([]byte("short")), "", "5 bytes, want 64"},
		{"bad shasum", "", "not-hex", "not a hex SHA-1"},
		{"short shasum", "", "abcd", "not a hex SHA-1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewVerifier(tt.integrity, tt.shasum)
			if err == nil || !strings.Contains(err.Error(), tt.wantIn) {
				t.Errorf("NewVerifier(%q, %q) = %v, want error containing %q", tt.integrity, tt.shasum, err, tt.wantIn)
			}
		})
	}
}
