package keyring

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// Source says where one purpose's keys come from, in this order: the keys
// themselves in env var Env, a key file named by env var FileEnv, or the
// development key file DevFile in the data directory (which `make run`
// creates once). Each purpose has its own keys.
type Source struct {
	Env     string // e.g. CODEC_KEYS: "id:base64,…"
	FileEnv string // e.g. CODEC_KEYS_FILE: path of a key file
	DevFile string // e.g. codec.keys: file name under <data dir>/keys/
}

// The purposes the project seals for.
var (
	// Codec seals what workflows carry but must not show: Migrate's
	// credentials, and payloads when the payload codec is on.
	Codec = Source{Env: "CODEC_KEYS", FileEnv: "CODEC_KEYS_FILE", DevFile: "codec.keys"}
	// GateCookie seals the waiting room's visitor cookie.
	GateCookie = Source{Env: "GATE_COOKIE_KEYS", FileEnv: "GATE_COOKIE_KEYS_FILE", DevFile: "gate-cookie.keys"}
)

// Sources lists every purpose, for `make run` to create their development files.
var Sources = []Source{Codec, GateCookie}

// DataDir is `make run`'s data directory: $DATA_DIR, else .data at the root
// of the repository containing the working directory.
func DataDir() (string, error) {
	if d := os.Getenv("DATA_DIR"); d != "" {
		return d, nil
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Join(dir, ".data"), nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("DATA_DIR is not set and the working directory is not inside the repository")
		}
		dir = parent
	}
}

// DevPath is where the development key file of s lives in dataDir.
func (s Source) DevPath(dataDir string) string {
	return filepath.Join(dataDir, "keys", s.DevFile)
}

// Load reads the keys of s from the first place that has them. A place that
// is set but malformed is an error, never skipped.
func (s Source) Load() (*Keyring, error) {
	if v := os.Getenv(s.Env); v != "" {
		r, err := Parse(v)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.Env, err)
		}
		return r, nil
	}
	if p := os.Getenv(s.FileEnv); p != "" {
		r, err := LoadFile(p)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.FileEnv, err)
		}
		return r, nil
	}
	dataDir, err := DataDir()
	if err != nil {
		return nil, fmt.Errorf("no keys for %s: set %s or %s (%v)", s.Env, s.Env, s.FileEnv, err)
	}
	path := s.DevPath(dataDir)
	r, err := LoadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("no keys for %s: set %s (\"id:base64key,…\") or %s, or run `make run` once to create the development key file %s",
			s.Env, s.Env, s.FileEnv, path)
	}
	return r, err
}

// LoadFile reads a key file: one "id:base64" per line (or comma separated),
// # comments; the first key is the primary.
func LoadFile(path string) (*Keyring, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	r, err := Parse(string(data))
	if err != nil {
		return nil, fmt.Errorf("key file %s: %w", path, err)
	}
	return r, nil
}

// EnsureDevFile creates the development key file of s in dataDir once
// (mode 0600, in a 0700 directory) with one new random key, and otherwise
// checks that the existing file is valid.
func EnsureDevFile(s Source, dataDir string) (path string, created bool, err error) {
	path = s.DevPath(dataDir)
	suffix := make([]byte, 3)
	if _, err := rand.Read(suffix); err != nil {
		return path, false, err
	}
	created, err = EnsureKeyFile(path, "dev-"+time.Now().UTC().Format("20060102")+"-"+hex.EncodeToString(suffix),
		fmt.Sprintf("Development keys for %s, created by `make run`. Never use them in production.", s.Env))
	return path, created, err
}

// EnsureKeyFile creates a key file once (mode 0600, in a 0700 directory)
// holding one new random key with the given id under a comment, and
// otherwise checks that the existing file is valid. Concurrent callers agree
// on one file: it is written aside and linked into place, so nobody reads it
// half written and a second creator's key is discarded.
func EnsureKeyFile(path, id, comment string) (created bool, err error) {
	if _, err := LoadFile(path); err == nil {
		return false, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return false, err
	}
	key, err := Generate(id)
	if err != nil {
		return false, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return false, err
	}
	content := fmt.Sprintf("# %s\n"+
		"# One \"id:base64\" key per line. The first seals; every listed key opens.\n"+
		"# To rotate: add a new key on top and keep the old ones until nothing sealed with them is left.\n%s\n",
		comment, key.Encode())
	tmp, err := os.CreateTemp(filepath.Dir(path), ".keys-*")
	if err != nil {
		return false, err
	}
	// Linked to path or abandoned, the temporary name goes; left behind, it
	// would be a stray file beside path, readable by no one else (0600).
	defer func() { _ = os.Remove(tmp.Name()) }()
	if _, err := tmp.WriteString(content); err != nil {
		_ = tmp.Close() // the write's error is the one to return
		return false, err
	}
	if err := tmp.Chmod(0o600); err != nil {
		_ = tmp.Close() // the chmod's error is the one to return
		return false, err
	}
	if err := tmp.Close(); err != nil {
		return false, err
	}
	if err := os.Link(tmp.Name(), path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			_, err = LoadFile(path)
			return false, err
		}
		return false, err
	}
	return true, nil
}
