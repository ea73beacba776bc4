package keyring

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"strings"
)

// Signer authenticates short messages with HMAC-SHA256 under keys derived
// from a keyring's, one derived key per key and purpose (HMAC(key,
// purpose)), so a MAC made for one purpose never verifies for another and
// never reveals the key it came from. Like the keyring, it signs with the
// primary key and verifies with any listed one, so keys rotate as the
// keyring's do.
type Signer struct {
	ids  []string
	keys map[string][]byte
}

// Signer derives the keyring's signer for a purpose (e.g. "edgeflow redis
// field v1").
func (r *Keyring) Signer(purpose string) *Signer {
	s := &Signer{ids: append([]string(nil), r.ids...), keys: make(map[string][]byte, len(r.ids))}
	for _, id := range r.ids {
		m := hmac.New(sha256.New, r.secrets[id])
		m.Write([]byte(purpose))
		s.keys[id] = m.Sum(nil)
	}
	return s
}

// Sign returns the tag of the message made of parts: "keyid:base64url(mac)".
// Parts are length-prefixed, so no two lists of parts sign alike.
func (s *Signer) Sign(parts ...string) string {
	id := s.ids[0]
	return id + ":" + base64.RawURLEncoding.EncodeToString(s.mac(s.keys[id], parts))
}

// Verify reports whether tag is Sign's tag of parts under any key of the
// ring.
func (s *Signer) Verify(tag string, parts ...string) bool {
	if s == nil {
		return false
	}
	id, b64, ok := strings.Cut(tag, ":")
	key, known := s.keys[id]
	if !ok || !known {
		return false
	}
	got, err := base64.RawURLEncoding.DecodeString(b64)
	return err == nil && hmac.Equal(got, s.mac(key, parts))
}

func (s *Signer) mac(key []byte, parts []string) []byte {
	m := hmac.New(sha256.New, key)
	var n [8]byte
	for _, p := range parts {
		binary.BigEndian.PutUint64(n[:], uint64(len(p)))
		m.Write(n[:])
		m.Write([]byte(p))
	}
	return m.Sum(nil)
}
