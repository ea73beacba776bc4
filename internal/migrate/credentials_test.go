package migrate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/edgeflow/edgeflow/internal/keyring"
)

func testKeyring(t *testing.T, id string) *keyring.Keyring {
	t.Helper()
	k, err := keyring.Generate(id)
	if err != nil {
		t.Fatal(err)
	}
	r, err := keyring.New(k)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

var testStore = StoreBinding{Endpoint: "s3.example.com:443", Secure: true, Bucket: "src", Prefix: "p/"}

func TestSealedCredentialsShowOnlyCiphertext(t *testing.T) {
	r := testKeyring(t, "k1")
	creds := Credentials{AccessKey: "AKIAEXAMPLEACCESS", SecretKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", SessionToken: "tok-123"}
	sealed, err := SealCredentials(r, creds, "job-1", SideSource, testStore)
	if err != nil {
		t.Fatal(err)
	}
	type input struct {
		Source SealedCredentials `json:"source"`
	}
	js, err := json.Marshal(input{Source: sealed})
	if err != nil {
		t.Fatal(err)
	}
	for _, shown := range []string{string(js), sealed.String(), fmt.Sprintf("%v %+v %#v %s", sealed, sealed, sealed, sealed)} {
		for _, secret := range []string{creds.AccessKey, creds.SecretKey, creds.SessionToken} {
			if strings.Contains(shown, secret) {
				t.Fatalf("sealed credentials show a secret: %s", shown)
			}
		}
	}
	var back input
	if err := json.Unmarshal(js, &back); err != nil {
		t.Fatal(err)
	}
	got, err := back.Source.Open(r, "job-1", SideSource, testStore)
	if err != nil {
		t.Fatal(err)
	}
	if got != creds {
		t.Fatal("round trip changed the credentials")
	}
	if back.Source.KeyID() != "k1" {
		t.Fatalf("key id %q", back.Source.KeyID())
	}
	// Bound to the job and side: no replay into another job or side.
	if _, err := back.Source.Open(r, "job-2", SideSource, testStore); err == nil {
		t.Fatal("opened for another job")
	}
	if _, err := back.Source.Open(r, "job-1", SideDest, testStore); err == nil {
		t.Fatal("source credentials opened as the destination's")
	}
	// Another keyring cannot open them, and says what to check.
	_, err = back.Source.Open(testKeyring(t, "other"), "job-1", SideSource, testStore)
	if err == nil || !strings.Contains(err.Error(), "CODEC_KEYS") {
		t.Fatalf("open with another keyring: %v", err)
	}
	if _, err := (SealedCredentials{}).Open(r, "job-1", SideSource, testStore); err == nil {
		t.Fatal("empty sealed credentials opened")
	}
}

// Credentials are sealed to their store: copied into an input that names
// another provider, endpoint, scheme, bucket, prefix or pinned address,
// they do not open, and the error names the side and store but no secret.
func TestSealedCredentialsOpenOnlyForTheirStore(t *testing.T) {
	r := testKeyring(t, "k1")
	creds := Credentials{AccessKey: "AKIABOUNDACCESS", SecretKey: "bound-secret-value-0123"}
	store := StoreBinding{Endpoint: "s3.example.com:443", Secure: true, Bucket: "victim", Prefix: "data/", Pinned: []string{"203.0.113.7"}}
	sealed, err := SealCredentials(r, creds, "job-1", SideDest, store)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := sealed.Open(r, "job-1", SideDest, store); err != nil || got != creds {
		t.Fatalf("open for the sealed store: %v", err)
	}
	for name, other := range map[string]func(*StoreBinding){
		"endpoint": func(b *StoreBinding) { b.Endpoint = "attacker.example.net:443" },
		"scheme":   func(b *StoreBinding) { b.Secure = false },
		"bucket":   func(b *StoreBinding) { b.Bucket = "attacker" },
		"prefix":   func(b *StoreBinding) { b.Prefix = "" },
		"pinned":   func(b *StoreBinding) { b.Pinned = []string{"198.51.100.9"} },
		"provider": func(b *StoreBinding) { b.Provider = ProviderGCS },
	} {
		b := store
		b.Pinned = slices.Clone(store.Pinned)
		other(&b)
		_, err := sealed.Open(r, "job-1", SideDest, b)
		if err == nil {
			t.Errorf("opened for another %s: %+v", name, b)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, SideDest) || !strings.Contains(msg, b.Bucket) ||
			strings.Contains(msg, creds.SecretKey) || strings.Contains(msg, creds.AccessKey) {
			t.Errorf("another %s: %q, want the side and store named and no key", name, msg)
		}
	}
}

// A value sealed before stores were bound (job and side only) is refused
// with a reason, never opened for whatever store an input names.
func TestUnboundSealedCredentialsAreRefused(t *testing.T) {
	r := testKeyring(t, "k1")
	plain, _ := json.Marshal(sealedPayload{AccessKey: "old-access", SecretKey: "old-secret"})
	old, err := r.Seal(plain, []byte(bindingV1+"job-1\x00"+SideSource))
	if err != nil {
		t.Fatal(err)
	}
	_, err = SealedCredentials{sealed: old}.Open(r, "job-1", SideSource, testStore)
	if !errors.Is(err, ErrUnboundCredentials) || !strings.Contains(err.Error(), "source credentials of job job-1") {
		t.Fatalf("an unbound value: %v, want ErrUnboundCredentials naming the side", err)
	}
}

func TestPlainCredentialsNeverPrintOrMarshal(t *testing.T) {
	c := Credentials{AccessKey: "AKIAEXAMPLEACCESS", SecretKey: "verysecretvalue"}
	for _, s := range []string{c.String(), fmt.Sprintf("%v %+v %#v", c, c, c)} {
		if strings.Contains(s, "AKIAEXAMPLE") || strings.Contains(s, "verysecret") {
			t.Fatalf("printed credentials: %s", s)
		}
	}
	if b, err := json.Marshal(struct{ C Credentials }{c}); err == nil {
		t.Fatalf("plain credentials marshalled: %s", b)
	}
}

func TestLoadCredentials(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "creds")
	content := "# migration keys\n" +
		"MIGRATE_SOURCE_ACCESS_KEY=src-access\n" +
		"export MIGRATE_SOURCE_SECRET_KEY=\"src secret with spaces\"\n" +
		"MIGRATE_DEST_ACCESS_KEY = 'dst-access'\n" +
		"MIGRATE_DEST_SECRET_KEY=dst=secret=with=equals\n"
	if err := os.WriteFile(file, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	getenv := func(k string) string { return env[k] }
	src, dst, err := LoadCredentials(getenv, file)
	if err != nil {
		t.Fatal(err)
	}
	if src.AccessKey != "src-access" || src.SecretKey != "src secret with spaces" || dst.AccessKey != "dst-access" || dst.SecretKey != "dst=secret=with=equals" {
		t.Fatal("file values read wrongly")
	}
	// The environment wins over the file, variable by variable.
	env[EnvDestSecretKey] = "from-env"
	if _, dst, _ = LoadCredentials(getenv, file); dst.SecretKey != "from-env" || dst.AccessKey != "dst-access" {
		t.Fatal("environment does not override the file")
	}
	// Missing keys name the variables to set.
	_, _, err = LoadCredentials(func(string) string { return "" }, "")
	if err == nil || !strings.Contains(err.Error(), EnvSourceAccessKey) || !strings.Contains(err.Error(), EnvDestSecretKey) || !strings.Contains(err.Error(), "never taken from flags") {
		t.Fatalf("missing: %v", err)
	}
	for _, bad := range []struct{ content, want string }{
		{"MIGRATE_SOURCE_ACCESS_KEY\n", ":1: want NAME=VALUE"},
		{"\nAWS_SECRET=shh-value\n", ":2: unknown name \"AWS_SECRET\""},
	} {
		if err := os.WriteFile(file, []byte(bad.content), 0o600); err != nil {
			t.Fatal(err)
		}
		_, _, err := LoadCredentials(getenv, file)
		if err == nil || !strings.Contains(err.Error(), bad.want) || strings.Contains(err.Error(), "shh-value") {
			t.Errorf("bad file %q: %v", bad.content, err)
		}
	}
	if _, _, err := LoadCredentials(getenv, filepath.Join(dir, "missing")); err == nil {
		t.Error("a missing credentials file is not an error")
	}
}

func TestReportWriters(t *testing.T) {
	results := []ObjectResult{
		{Key: "a, \"quoted\"\nkey", Status: StatusCopied, Bytes: 10, Reason: ReasonAbsent, Attempts: 1, Verify: VerifyMatch},
		{Key: "b", Status: StatusFailed, Error: "get b: access denied", Attempts: 5},
	}
	var csvOut bytes.Buffer
	w, err := NewReportWriter(&csvOut, FormatCSV)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range results {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	want := "key,status,bytes,error,reason,attempts,verify\n" +
		"\"a, \"\"quoted\"\"\nkey\",copied,10,,absent at the destination,1,match\n" +
		"b,failed,0,get b: access denied,,5,\n"
	if csvOut.String() != want {
		t.Fatalf("csv:\n%s\nwant:\n%s", csvOut.String(), want)
	}
	var jl bytes.Buffer
	w, _ = NewReportWriter(&jl, FormatJSONLines)
	for _, r := range results {
		_ = w.Write(r)
	}
	_ = w.Close()
	var back []ObjectResult
	if err := ReadJSONLines(&jl, func(r ObjectResult) error { back = append(back, r); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(back) != 2 || back[0] != results[0] || back[1] != results[1] {
		t.Fatalf("jsonl round trip: %+v", back)
	}
	if _, err := NewReportWriter(&jl, "xml"); err == nil {
		t.Fatal("xml accepted")
	}
	err = ReadJSONLines(strings.NewReader("{\"key\":\"a\"}\nnot json\n"), func(ObjectResult) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Fatalf("malformed line: %v", err)
	}
}

func TestKeyListPaging(t *testing.T) {
	keys := []string{"a", "with space ", "+plus", "%25", "ü/ñ", "deep/a/b/c/d/e/f/g", "crlf"}
	list := strings.Join(keys[:6], "\n") + "\n\n" + keys[6] + "\r\n"
	if n, err := CheckKeyList(strings.NewReader(list)); err != nil || n != len(keys) {
		t.Fatalf("CheckKeyList %d %v", n, err)
	}
	for _, pageSize := range []int{1, 2, 3, 7, 100} {
		for _, chunkCap := range []int{20, 25, 64, 1 << 20} { // a chunk always holds a whole line
			var got []string
			token := ""
			for pages := 0; ; pages++ {
				if pages > 100 {
					t.Fatalf("page %d chunk %d: no progress", pageSize, chunkCap)
				}
				off, err := KeyListOffset(token)
				if err != nil {
					t.Fatal(err)
				}
				end := min(int(off)+chunkCap, len(list))
				page, next := KeyListPage([]byte(list[off:end]), off, end == len(list), pageSize)
				if len(page) > pageSize {
					t.Fatalf("page of %d keys, max %d", len(page), pageSize)
				}
				got = append(got, page...)
				if next == "" {
					break
				}
				if next == token {
					t.Fatalf("stuck at %s", token)
				}
				token = next
			}
			if strings.Join(got, "|") != strings.Join(keys, "|") {
				t.Fatalf("page %d chunk %d: got %q", pageSize, chunkCap, got)
			}
		}
	}
	if _, err := CheckKeyList(strings.NewReader("ok\n\xff\n" + strings.Repeat("x", 1100) + "\n")); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Fatalf("bad list: %v", err)
	}
	if _, err := CheckKeyList(strings.NewReader("\n\n")); err == nil {
		t.Fatal("empty list accepted")
	}
	if _, err := KeyListOffset("x"); err == nil {
		t.Fatal("bad token accepted")
	}
}
