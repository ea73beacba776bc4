package console

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const (
	rwSecret = "rw-secret-0123456789"
	roSecret = "ro-secret-0123456789"
)

func testTokens(t *testing.T) Tokens {
	t.Helper()
	ts, err := ParseTokens([]string{"admin:" + rwSecret, "viewer:" + roSecret + ":ro"}, "test")
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

func TestParseTokensRefusesBadEntriesWithoutEchoingSecrets(t *testing.T) {
	for _, c := range []struct{ entry, want string }{
		{"admin", "want name:secret"},
		{"admin:short", "at least 16"},
		{"bad name:" + rwSecret, "name must be"},
		{"admin:" + rwSecret + ":rx", "ro (read-only) or rw"},
		{"a:b:c:d", "want name:secret"},
	} {
		_, err := ParseTokens([]string{c.entry}, "CONSOLE_TOKENS")
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "CONSOLE_TOKENS: entry 1") {
			t.Errorf("%q: got %v, want an error naming the entry and %q", c.entry, err, c.want)
		}
		if err != nil && (strings.Contains(err.Error(), rwSecret) || strings.Contains(err.Error(), "short")) {
			t.Errorf("%q: the error shows the secret: %v", c.entry, err)
		}
	}
	if _, err := ParseTokens([]string{"a:" + rwSecret, "a:" + roSecret}, "f"); err == nil || !strings.Contains(err.Error(), "twice") {
		t.Errorf("a duplicate name: got %v", err)
	}
	if _, err := ParseTokens([]string{"# only a comment", ""}, "f"); err == nil || !strings.Contains(err.Error(), "no tokens") {
		t.Errorf("no entries: got %v", err)
	}
}

func TestAuthenticate(t *testing.T) {
	ts := testTokens(t)
	for _, c := range []struct {
		header       string
		name         string
		ok, readOnly bool
	}{
		{"Bearer " + rwSecret, "admin", true, false},
		{"Bearer " + roSecret, "viewer", true, true},
		{"Bearer " + rwSecret + "x", "", false, false},
		{"Bearer ", "", false, false},
		{"Basic " + rwSecret, "", false, false},
		{rwSecret, "", false, false},
		{"", "", false, false},
	} {
		tok, ok := ts.Authenticate(c.header)
		if ok != c.ok || tok.Name != c.name || tok.ReadOnly != c.readOnly {
			t.Errorf("%q: got %q ok=%v ro=%v, want %q ok=%v ro=%v", c.header, tok.Name, ok, tok.ReadOnly, c.name, c.ok, c.readOnly)
		}
	}
}

func TestEnsureDevTokensCreatesOnceReadWritePrivate(t *testing.T) {
	dir := t.TempDir()
	path := DevTokensPath(dir)
	created, err := EnsureDevTokens(path)
	if err != nil || !created {
		t.Fatalf("first call: created=%v err=%v", created, err)
	}
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", info.Mode().Perm())
	}
	first, _ := os.ReadFile(path)
	if created, err := EnsureDevTokens(path); err != nil || created {
		t.Fatalf("second call: created=%v err=%v, want the file kept", created, err)
	}
	if again, _ := os.ReadFile(path); string(again) != string(first) {
		t.Error("the second call changed the file")
	}
	ts, from, err := LoadTokens(func(string) string { return "" }, dir)
	if err != nil || from != path || len(ts) != 1 || ts[0].ReadOnly {
		t.Fatalf("LoadTokens: %v from %s err %v, want one read-write token from %s", ts, from, err, path)
	}
}

func TestLoadTokensPrecedence(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "tokens")
	if err := os.WriteFile(file, []byte("# comment\nfile:"+rwSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"CONSOLE_TOKENS": "env:" + rwSecret + ",envro:" + roSecret + ":ro", "CONSOLE_TOKENS_FILE": file}
	ts, from, err := LoadTokens(func(k string) string { return env[k] }, dir)
	if err != nil || from != "CONSOLE_TOKENS" || len(ts) != 2 || ts[0].Name != "env" || !ts[1].ReadOnly {
		t.Fatalf("CONSOLE_TOKENS first: got %v from %s, %v", ts, from, err)
	}
	delete(env, "CONSOLE_TOKENS")
	ts, from, err = LoadTokens(func(k string) string { return env[k] }, dir)
	if err != nil || from != file || len(ts) != 1 || ts[0].Name != "file" {
		t.Fatalf("CONSOLE_TOKENS_FILE next: got %v from %s, %v", ts, from, err)
	}
	env["CONSOLE_TOKENS_FILE"] = filepath.Join(dir, "missing")
	if _, _, err := LoadTokens(func(k string) string { return env[k] }, dir); err == nil || !strings.Contains(err.Error(), "CONSOLE_TOKENS_FILE") {
		t.Errorf("a missing CONSOLE_TOKENS_FILE: got %v", err)
	}
	delete(env, "CONSOLE_TOKENS_FILE")
	if _, _, err := LoadTokens(func(k string) string { return env[k] }, dir); err == nil || !strings.Contains(err.Error(), "make run") {
		t.Errorf("no tokens anywhere: got %v", err)
	}
}
