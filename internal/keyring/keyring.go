// Package keyring seals and opens small secrets with AES-GCM under named keys,
// so keys can rotate: the primary (first) key seals, and every listed key
// opens what it sealed. Sealed values carry the id of their key.
//
// Keys are written as "id:base64", several separated by commas or newlines:
//
//	CODEC_KEYS="k2026b:q1Vb…=,k2026a:Zm9v…="
//
// To rotate, put a new key first and keep the old ones listed until nothing
// sealed with them is left. Key material never appears in errors or output.
package keyring

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
)

// ErrOpen is returned (wrapped) when a sealed value cannot be opened: it was
// altered, sealed with another key, or bound to other associated data.
var ErrOpen = errors.New("sealed value cannot be opened")

// formatV1 is the first byte of every sealed value.
const formatV1 = 1

// MaxIDLen bounds a key id; ids travel in every sealed value.
const MaxIDLen = 32

// KeySize is the size of the keys Generate makes (AES-256).
const KeySize = 32

// Key is one named AES key. Its String never shows the secret.
type Key struct {
	ID     string
	Secret []byte
}

// String names the key without its secret.
func (k Key) String() string { return "key " + k.ID }

// GoString keeps %#v from printing the secret.
func (k Key) GoString() string { return k.String() }

// Encode is the key's text form, "id:base64", as key files and env vars hold it.
func (k Key) Encode() string {
	return k.ID + ":" + base64.StdEncoding.EncodeToString(k.Secret)
}

// Generate makes a new random 256-bit key.
func Generate(id string) (Key, error) {
	if err := checkID(id); err != nil {
		return Key{}, err
	}
	secret := make([]byte, KeySize)
	if _, err := rand.Read(secret); err != nil {
		return Key{}, err
	}
	return Key{ID: id, Secret: secret}, nil
}

// Keyring is a set of keys; the first one is the primary.
type Keyring struct {
	ids   []string
	aeads map[string]cipher.AEAD
	// secrets keep each key's bytes for Signer's derived keys; never shown.
	secrets map[string][]byte
}

// New builds a keyring; keys[0] becomes the primary.
func New(keys ...Key) (*Keyring, error) {
	if len(keys) == 0 {
		return nil, errors.New("no keys")
	}
	r := &Keyring{aeads: make(map[string]cipher.AEAD, len(keys)), secrets: make(map[string][]byte, len(keys))}
	for i, k := range keys {
		if err := checkID(k.ID); err != nil {
			return nil, fmt.Errorf("key %d: %w", i+1, err)
		}
		if _, dup := r.aeads[k.ID]; dup {
			return nil, fmt.Errorf("key %d: id %q is listed twice", i+1, k.ID)
		}
		switch len(k.Secret) {
		case 16, 24, 32:
		default:
			return nil, fmt.Errorf("key %d (id %s): %d bytes; an AES key is 16, 24 or 32 bytes", i+1, k.ID, len(k.Secret))
		}
		block, err := aes.NewCipher(k.Secret)
		if err != nil {
			return nil, fmt.Errorf("key %d (id %s): %w", i+1, k.ID, err)
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, fmt.Errorf("key %d (id %s): %w", i+1, k.ID, err)
		}
		r.aeads[k.ID] = aead
		r.secrets[k.ID] = append([]byte(nil), k.Secret...)
		r.ids = append(r.ids, k.ID)
	}
	return r, nil
}

// Parse reads keys in their text form: "id:base64" entries separated by
// commas or newlines; blank lines and lines starting with # are ignored.
func Parse(text string) (*Keyring, error) {
	var keys []Key
	n := 0
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		for _, entry := range strings.Split(line, ",") {
			entry = strings.TrimSpace(entry)
			if entry == "" {
				continue
			}
			n++
			k, err := parseKey(entry)
			if err != nil {
				return nil, fmt.Errorf("key %d: %w", n, err)
			}
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return nil, errors.New(`no keys (want "id:base64key", several separated by commas or newlines)`)
	}
	return New(keys...)
}

func parseKey(entry string) (Key, error) {
	id, b64, ok := strings.Cut(entry, ":")
	if !ok {
		return Key{}, errors.New(`not in the form "id:base64key"`)
	}
	id = strings.TrimSpace(id)
	if err := checkID(id); err != nil {
		return Key{}, err
	}
	secret, err := decodeBase64(strings.TrimSpace(b64))
	if err != nil {
		return Key{}, fmt.Errorf("id %s: the key is not base64", id)
	}
	return Key{ID: id, Secret: secret}, nil
}

// decodeBase64 accepts standard and URL alphabets, padded or not.
func decodeBase64(s string) ([]byte, error) {
	var err error
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		var b []byte
		if b, err = enc.DecodeString(s); err == nil {
			return b, nil
		}
	}
	return nil, err
}

func checkID(id string) error {
	if id == "" {
		return errors.New("empty key id")
	}
	if len(id) > MaxIDLen {
		return fmt.Errorf("key id %.40q is longer than %d characters", id, MaxIDLen)
	}
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return fmt.Errorf("key id %q: only letters, digits, '-', '_' and '.' are allowed", id)
		}
	}
	return nil
}

// Primary is the id of the key that seals.
func (r *Keyring) Primary() string { return r.ids[0] }

// IDs lists every key id, the primary first.
func (r *Keyring) IDs() []string { return append([]string(nil), r.ids...) }

// Seal encrypts plaintext with the primary key. associatedData is
// authenticated but not stored: Open must be given the same, so a value
// sealed for one purpose (a job, a cookie name) cannot be replayed in another.
//
// Layout: version (1 byte), id length (1), id, nonce (12), ciphertext+tag.
func (r *Keyring) Seal(plaintext, associatedData []byte) ([]byte, error) {
	id := r.ids[0]
	aead := r.aeads[id]
	header := make([]byte, 0, 2+len(id)+aead.NonceSize())
	header = append(header, formatV1, byte(len(id)))
	header = append(header, id...)
	nonce := make([]byte, aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	out := append(header, nonce...)
	return aead.Seal(out, nonce, plaintext, additional(header, associatedData)), nil
}

// Open decrypts a value Seal made with any key of the ring.
func (r *Keyring) Open(sealed, associatedData []byte) ([]byte, error) {
	id, err := KeyID(sealed)
	if err != nil {
		return nil, err
	}
	aead, ok := r.aeads[id]
	if !ok {
		return nil, fmt.Errorf("%w: sealed with key %q, which is not in the keyring (keys: %s)", ErrOpen, id, strings.Join(r.ids, ", "))
	}
	headerLen := 2 + len(id)
	body := sealed[headerLen:]
	if len(body) < aead.NonceSize()+aead.Overhead() {
		return nil, fmt.Errorf("%w: truncated (%d bytes)", ErrOpen, len(sealed))
	}
	nonce, ciphertext := body[:aead.NonceSize()], body[aead.NonceSize():]
	plain, err := aead.Open(nil, nonce, ciphertext, additional(sealed[:headerLen], associatedData))
	if err != nil {
		return nil, fmt.Errorf("%w: authentication failed with key %q (altered, or sealed for other associated data)", ErrOpen, id)
	}
	return plain, nil
}

// KeyID reads the id of the key a value was sealed with, without opening it.
func KeyID(sealed []byte) (string, error) {
	if len(sealed) < 2 {
		return "", fmt.Errorf("%w: too short (%d bytes)", ErrOpen, len(sealed))
	}
	if sealed[0] != formatV1 {
		return "", fmt.Errorf("%w: unknown format %d", ErrOpen, sealed[0])
	}
	n := int(sealed[1])
	if n == 0 || n > MaxIDLen || len(sealed) < 2+n {
		return "", fmt.Errorf("%w: malformed key id", ErrOpen)
	}
	id := string(sealed[2 : 2+n])
	if checkID(id) != nil {
		return "", fmt.Errorf("%w: malformed key id", ErrOpen)
	}
	return id, nil
}

// additional binds the header (format and key id) to the caller's data.
func additional(header, associatedData []byte) []byte {
	ad := make([]byte, 0, len(header)+len(associatedData))
	return append(append(ad, header...), associatedData...)
}

// SealText is Seal in unpadded URL-safe base64, for cookies and headers.
func (r *Keyring) SealText(plaintext, associatedData []byte) (string, error) {
	b, err := r.Seal(plaintext, associatedData)
	if err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// OpenText opens what SealText made.
func (r *Keyring) OpenText(text string, associatedData []byte) ([]byte, error) {
	b, err := base64.RawURLEncoding.DecodeString(text)
	if err != nil {
		return nil, fmt.Errorf("%w: not base64url", ErrOpen)
	}
	return r.Open(b, associatedData)
}
