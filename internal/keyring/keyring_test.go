package keyring

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func mustKey(t testing.TB, id string) Key {
	t.Helper()
	k, err := Generate(id)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func mustRing(t testing.TB, keys ...Key) *Keyring {
	t.Helper()
	r, err := New(keys...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestSealOpenRoundTrip(t *testing.T) {
	r := mustRing(t, mustKey(t, "k1"))
	for _, plain := range [][]byte{nil, []byte("x"), bytes.Repeat([]byte("secret"), 1000)} {
		sealed, err := r.Seal(plain, []byte("job-1"))
		if err != nil {
			t.Fatal(err)
		}
		// (A one-byte plaintext shows up in random ciphertext by chance.)
		if len(plain) >= 8 && bytes.Contains(sealed, plain) {
			t.Fatal("sealed value contains the plaintext")
		}
		got, err := r.Open(sealed, []byte("job-1"))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, plain) {
			t.Fatalf("opened %q, sealed %q", got, plain)
		}
	}
}

func TestSealIsRandomized(t *testing.T) {
	r := mustRing(t, mustKey(t, "k1"))
	a, _ := r.Seal([]byte("same"), nil)
	b, _ := r.Seal([]byte("same"), nil)
	if bytes.Equal(a, b) {
		t.Fatal("two seals of the same plaintext are equal: nonces repeat")
	}
}

func TestRotation(t *testing.T) {
	old, next := mustKey(t, "old"), mustKey(t, "new")
	before := mustRing(t, old)
	sealedOld, _ := before.Seal([]byte("a"), nil)

	after := mustRing(t, next, old) // new primary, old still listed
	if after.Primary() != "new" {
		t.Fatalf("primary %q", after.Primary())
	}
	if got, err := after.Open(sealedOld, nil); err != nil || string(got) != "a" {
		t.Fatalf("old value after rotation: %q, %v", got, err)
	}
	sealedNew, _ := after.Seal([]byte("b"), nil)
	if id, _ := KeyID(sealedNew); id != "new" {
		t.Fatalf("sealed with %q, want the primary", id)
	}
	// A ring that dropped the old key says which key is missing.
	retired := mustRing(t, next)
	_, err := retired.Open(sealedOld, nil)
	if !errors.Is(err, ErrOpen) || !strings.Contains(err.Error(), `"old"`) {
		t.Fatalf("open with a retired key: %v", err)
	}
}

func TestOpenRejects(t *testing.T) {
	k := mustKey(t, "k1")
	r := mustRing(t, k)
	sealed, _ := r.Seal([]byte("secret"), []byte("job-1"))

	flipped := append([]byte(nil), sealed...)
	flipped[len(flipped)-1] ^= 1
	sameIDOtherKey := mustRing(t, Key{ID: "k1", Secret: bytes.Repeat([]byte{7}, 32)})
	// Renaming the key id in the header must not let another key try it.
	renamed := append([]byte(nil), sealed...)
	renamed[2] = 'x'
	withX := mustRing(t, k, Key{ID: "x1", Secret: k.Secret})

	cases := []struct {
		name string
		ring *Keyring
		in   []byte
		ad   string
	}{
		{"other associated data", r, sealed, "job-2"},
		{"altered ciphertext", r, flipped, "job-1"},
		{"another key with the same id", sameIDOtherKey, sealed, "job-1"},
		{"key id rewritten", withX, renamed, "job-1"},
		{"truncated", r, sealed[:len(sealed)-17], "job-1"},
		{"empty", r, nil, "job-1"},
		{"unknown format", r, append([]byte{9}, sealed[1:]...), "job-1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := c.ring.Open(c.in, []byte(c.ad))
			if !errors.Is(err, ErrOpen) {
				t.Fatalf("got %q, %v; want ErrOpen", got, err)
			}
			if strings.Contains(err.Error(), "secret") {
				t.Fatalf("error shows the plaintext: %v", err)
			}
		})
	}
}

func TestParse(t *testing.T) {
	a, b := mustKey(t, "a"), mustKey(t, "b.2026_x-1")
	r, err := Parse(a.Encode() + " , " + b.Encode())
	if err != nil {
		t.Fatal(err)
	}
	if got := r.IDs(); len(got) != 2 || got[0] != "a" || got[1] != "b.2026_x-1" {
		t.Fatalf("ids %v", got)
	}
	file := "# comment\n\n" + b.Encode() + "\n" + a.Encode() + "\n"
	if r, err = Parse(file); err != nil || r.Primary() != "b.2026_x-1" {
		t.Fatalf("file form: %v, %v", r, err)
	}
	// URL alphabet without padding is accepted too.
	raw := "u:" + strings.TrimRight(strings.NewReplacer("+", "-", "/", "_").Replace(strings.SplitN(a.Encode(), ":", 2)[1]), "=")
	if _, err := Parse(raw); err != nil {
		t.Fatalf("url base64: %v", err)
	}
}

func TestParseErrorsAreClearAndSecretFree(t *testing.T) {
	secret := "c2VjcmV0LWtleS1tYXRlcmlhbA" // 19 bytes: the wrong size
	cases := []struct{ in, want string }{
		{"", "no keys"},
		{"# only a comment", "no keys"},
		{"nocolon", `key 1: not in the form "id:base64key"`},
		{"k1:" + secret, "key 1 (id k1): 19 bytes; an AES key is 16, 24 or 32 bytes"},
		{mustKey(t, "ok").Encode() + ",k2:!!!notbase64", "key 2: id k2: the key is not base64"},
		{"bad id:" + secret, `key id "bad id"`},
		{":" + secret, "empty key id"},
		{mustKey(t, "d").Encode() + "," + mustKey(t, "d").Encode(), `id "d" is listed twice`},
		{strings.Repeat("i", 40) + ":" + secret, "longer than 32"},
	}
	for _, c := range cases {
		_, err := Parse(c.in)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Parse(%.30q) = %v; want an error containing %q", c.in, err, c.want)
			continue
		}
		if strings.Contains(err.Error(), secret) {
			t.Errorf("error shows key material: %v", err)
		}
	}
}

func TestKeyNeverPrintsSecret(t *testing.T) {
	k := mustKey(t, "k1")
	enc := strings.SplitN(k.Encode(), ":", 2)[1]
	for _, s := range []string{k.String(), fmt.Sprint(k), fmt.Sprintf("%v %+v %#v", k, k, k)} {
		if strings.Contains(s, enc) || strings.Contains(s, string(k.Secret)) {
			t.Fatalf("printed key shows its secret: %s", s)
		}
	}
}

func TestText(t *testing.T) {
	r := mustRing(t, mustKey(t, "k1"))
	s, err := r.SealText([]byte("visitor"), []byte("cookie"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.ContainsAny(s, "+/=") {
		t.Fatalf("not URL-safe: %s", s)
	}
	got, err := r.OpenText(s, []byte("cookie"))
	if err != nil || string(got) != "visitor" {
		t.Fatalf("%q, %v", got, err)
	}
	if _, err := r.OpenText("%%%", nil); !errors.Is(err, ErrOpen) {
		t.Fatalf("garbage: %v", err)
	}
}

func TestLoadPrecedence(t *testing.T) {
	dir := t.TempDir()
	src := Source{Env: "TEST_KEYS", FileEnv: "TEST_KEYS_FILE", DevFile: "test.keys"}
	t.Setenv("DATA_DIR", dir)
	t.Setenv("TEST_KEYS", "")
	t.Setenv("TEST_KEYS_FILE", "")

	_, err := src.Load()
	if err == nil || !strings.Contains(err.Error(), "make run") || !strings.Contains(err.Error(), filepath.Join(dir, "keys", "test.keys")) {
		t.Fatalf("no keys anywhere: %v", err)
	}

	path, created, err := EnsureDevFile(src, dir)
	if err != nil || !created {
		t.Fatalf("EnsureDevFile: %v %v", created, err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("dev key file mode %v, want 0600", fi.Mode().Perm())
	}
	if di, _ := os.Stat(filepath.Dir(path)); di.Mode().Perm() != 0o700 {
		t.Fatalf("key dir mode %v, want 0700", di.Mode().Perm())
	}
	dev, err := src.Load()
	if err != nil {
		t.Fatal(err)
	}
	// Created once: a second call keeps the same key, so every process agrees.
	if _, created, err := EnsureDevFile(src, dir); err != nil || created {
		t.Fatalf("second EnsureDevFile: created=%v %v", created, err)
	}
	again, _ := src.Load()
	sealed, _ := dev.Seal([]byte("x"), nil)
	if _, err := again.Open(sealed, nil); err != nil {
		t.Fatalf("a second load opens nothing the first sealed: %v", err)
	}

	file := filepath.Join(dir, "other.keys")
	if err := os.WriteFile(file, []byte(mustKey(t, "fromfile").Encode()+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TEST_KEYS_FILE", file)
	if r, err := src.Load(); err != nil || r.Primary() != "fromfile" {
		t.Fatalf("file over dev file: %v %v", r, err)
	}
	t.Setenv("TEST_KEYS", mustKey(t, "fromenv").Encode())
	if r, err := src.Load(); err != nil || r.Primary() != "fromenv" {
		t.Fatalf("env over file: %v %v", r, err)
	}
	// Set but broken is an error, not a silent fall back to the dev file.
	t.Setenv("TEST_KEYS", "broken")
	if _, err := src.Load(); err == nil || !strings.HasPrefix(err.Error(), "TEST_KEYS: ") {
		t.Fatalf("malformed env: %v", err)
	}
	t.Setenv("TEST_KEYS", "")
	if err := os.WriteFile(file, []byte("k:short\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := src.Load(); err == nil || !strings.Contains(err.Error(), file) {
		t.Fatalf("malformed file: %v", err)
	}
}

func TestEnsureDevFileConcurrent(t *testing.T) {
	dir := t.TempDir()
	src := Source{Env: "X", FileEnv: "X_FILE", DevFile: "x.keys"}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	createdCount := make(chan bool, 8)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, created, err := EnsureDevFile(src, dir)
			errs <- err
			createdCount <- created
		}()
	}
	wg.Wait()
	close(errs)
	close(createdCount)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	n := 0
	for c := range createdCount {
		if c {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d callers created the file, want exactly 1", n)
	}
	entries, _ := os.ReadDir(filepath.Join(dir, "keys"))
	if len(entries) != 1 {
		t.Fatalf("left behind: %v", entries)
	}
}

func FuzzOpen(f *testing.F) {
	k := Key{ID: "fuzz", Secret: bytes.Repeat([]byte{1}, 32)}
	r, _ := New(k)
	good, _ := r.Seal([]byte("hello"), []byte("ad"))
	f.Add(good, []byte("ad"))
	f.Add([]byte{1, 4, 'f', 'u', 'z', 'z'}, []byte(""))
	f.Add([]byte{1, 0}, []byte("ad"))
	f.Add([]byte{1, 255, 'a'}, []byte("ad"))
	f.Fuzz(func(t *testing.T, sealed, ad []byte) {
		plain, err := r.Open(sealed, ad)
		if err != nil {
			if !errors.Is(err, ErrOpen) {
				t.Fatalf("error not ErrOpen: %v", err)
			}
			return
		}
		// Only a genuine seal opens: the fuzzer cannot forge a tag, so
		// anything that opens must be the corpus's good seal (or a re-seal of it).
		again, err := r.Seal(plain, ad)
		if err != nil {
			t.Fatal(err)
		}
		if back, err := r.Open(again, ad); err != nil || !bytes.Equal(back, plain) {
			t.Fatalf("re-seal of opened value: %q %v", back, err)
		}
	})
}
