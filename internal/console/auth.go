package console

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// Token is one API token: a name (logged), a secret (never logged) and
// whether it may only read.
type Token struct {
	Name     string
	ReadOnly bool
	sum      [sha256.Size]byte // of the secret: compared in constant time, whatever its length
}

// Tokens are the console's API tokens.
type Tokens []Token

var tokenName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)

// minSecret keeps a guessable secret out: the dev file's are 43 characters.
const minSecret = 16

// ParseTokens reads `name:secret[:ro]` entries, one per element; where names
// the source in errors (CONSOLE_TOKENS, a file's path). Errors name the
// entry by position and name, never the secret.
func ParseTokens(entries []string, where string) (Tokens, error) {
	var out Tokens
	seen := map[string]bool{}
	for i, e := range entries {
		e = strings.TrimSpace(e)
		if e == "" || strings.HasPrefix(e, "#") {
			continue
		}
		parts := strings.Split(e, ":")
		if len(parts) < 2 || len(parts) > 3 {
			return nil, fmt.Errorf("%s: entry %d: want name:secret or name:secret:ro", where, i+1)
		}
		t := Token{Name: parts[0]}
		if !tokenName.MatchString(t.Name) {
			return nil, fmt.Errorf("%s: entry %d: name must be 1-64 letters, digits, '.', '-' or '_'", where, i+1)
		}
		if seen[t.Name] {
			return nil, fmt.Errorf("%s: entry %d: name %q given twice", where, i+1, t.Name)
		}
		seen[t.Name] = true
		if len(parts[1]) < minSecret {
			return nil, fmt.Errorf("%s: entry %d (%s): the secret must be at least %d characters", where, i+1, t.Name, minSecret)
		}
		if len(parts) == 3 {
			switch parts[2] {
			case "ro":
				t.ReadOnly = true
			case "rw":
			default:
				return nil, fmt.Errorf("%s: entry %d (%s): the third part must be ro (read-only) or rw, got %q", where, i+1, t.Name, parts[2])
			}
		}
		t.sum = sha256.Sum256([]byte(parts[1]))
		out = append(out, t)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no tokens", where)
	}
	return out, nil
}

// DevTokensPath is the development token file under the data directory.
func DevTokensPath(dataDir string) string { return filepath.Join(dataDir, "keys", "console.tokens") }

// LoadTokens reads the tokens from CONSOLE_TOKENS (comma-separated), else
// the file CONSOLE_TOKENS_FILE, else the development file under dataDir.
// It returns where they came from, for the log.
func LoadTokens(getenv func(string) string, dataDir string) (Tokens, string, error) {
	if v := getenv("CONSOLE_TOKENS"); v != "" {
		t, err := ParseTokens(strings.Split(v, ","), "CONSOLE_TOKENS")
		return t, "CONSOLE_TOKENS", err
	}
	path := getenv("CONSOLE_TOKENS_FILE")
	if path == "" {
		path = DevTokensPath(dataDir)
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) && getenv("CONSOLE_TOKENS_FILE") == "" {
		return nil, path, fmt.Errorf("no tokens: set CONSOLE_TOKENS or CONSOLE_TOKENS_FILE (`make run` creates %s)", path)
	}
	if err != nil {
		return nil, path, fmt.Errorf("CONSOLE_TOKENS_FILE: %w", err)
	}
	t, err := ParseTokens(strings.Split(string(data), "\n"), path)
	return t, path, err
}

// EnsureDevTokens creates the development token file once (mode 0600, in a
// 0700 directory) with one read-write token of a random secret; an existing
// file is kept.
func EnsureDevTokens(path string) (created bool, err error) {
	if _, err := os.Stat(path); err == nil {
		return false, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return false, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return false, err
	}
	secret := make([]byte, 32)
	if _, err := rand.Read(secret); err != nil {
		return false, err
	}
	body := "# Console API tokens (name:secret[:ro]), created by `make run`. Never use them in production.\n" +
		"dev:" + base64.RawURLEncoding.EncodeToString(secret) + "\n"
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return false, nil // another process created it meanwhile
	}
	if err != nil {
		return false, err
	}
	if _, err := f.WriteString(body); err != nil {
		_ = f.Close() // the write's error is the one to return
		return false, err
	}
	return true, f.Close()
}

// Authenticate finds the token an `Authorization: Bearer SECRET` header
// carries. Every token is compared, in constant time, so the answer's
// timing tells nothing about which secret came close.
func (ts Tokens) Authenticate(header string) (Token, bool) {
	secret, ok := strings.CutPrefix(header, "Bearer ")
	if !ok || secret == "" {
		return Token{}, false
	}
	sum := sha256.Sum256([]byte(secret))
	var found Token
	match := 0
	for _, t := range ts {
		eq := subtle.ConstantTimeCompare(sum[:], t.sum[:])
		if eq == 1 && match == 0 {
			found = t
		}
		match |= eq
	}
	return found, match == 1
}

// writes reports whether a method changes something (a read-only token's 403).
func writes(method string) bool {
	return method != http.MethodGet && method != http.MethodHead && method != http.MethodOptions
}
