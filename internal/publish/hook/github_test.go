package hook_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/edgeflow/edgeflow/internal/publish/catalog"
	"github.com/edgeflow/edgeflow/internal/publish/hook"
)

const secret = "It's a Secret to Everybody"

// GitHub's own example in "Validating webhook deliveries": this secret and
// body give this signature.
func TestSignatureOfGitHubsExample(t *testing.T) {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte("Hello, World!"))
	if got := hex.EncodeToString(mac.Sum(nil)); got != "757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17" {
		t.Fatalf("HMAC of GitHub's example: %s", got)
	}
}

type started struct{ name, delivery string }

func newHook(t *testing.T) (*hook.GitHub, *[]started) {
	t.Helper()
	var calls []started
	git := func(name, target string) catalog.Package {
		return catalog.Package{Name: name, Autoupdate: catalog.Autoupdate{Source: catalog.SourceGit, Target: target}}
	}
	h := &hook.GitHub{
		Secret: []byte(secret),
		Catalog: func() ([]catalog.Package, error) {
			return []catalog.Package{
				git("tagged-lib", "https://github.com/Owner/Tagged.git"),
				{Name: "npm-lib", Autoupdate: catalog.Autoupdate{Source: catalog.SourceNPM, Target: "owner/tagged"}},
				git("other", "owner/other"),
			}, nil
		},
		Start: func(_ context.Context, name, delivery string) (string, error) {
			calls = append(calls, started{name, delivery})
			return "publish-hook/" + name + "/" + delivery, nil
		},
	}
	return h, &calls
}

func sign(body string, key string) string {
	mac := hmac.New(sha256.New, []byte(key))
	mac.Write([]byte(body))
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

func deliver(h http.Handler, event, body, signature string) (*httptest.ResponseRecorder, hook.Answer) {
	r := httptest.NewRequest(http.MethodPost, "/hooks/github", strings.NewReader(body))
	r.Header.Set("X-GitHub-Event", event)
	r.Header.Set("X-GitHub-Delivery", "72d3162e-cc78-11e3-81ab-4c9367dc0958")
	if signature != "" {
		r.Header.Set(hook.SignatureHeader, signature)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	var a hook.Answer
	_ = json.Unmarshal(w.Body.Bytes(), &a)
	return w, a
}

const releaseBody = `{"action":"published","release":{"tag_name":"v2.0.0"},"repository":{"full_name":"owner/tagged"}}`

// A delivery without a signature, with a malformed one or with one made
// with another secret is refused (401) before its body is read, and
// starts nothing.
func TestHookRefusesBadSignatures(t *testing.T) {
	h, calls := newHook(t)
	for what, sig := range map[string]string{
		"missing":        "",
		"other secret":   sign(releaseBody, "not the secret"),
		"other body":     sign(releaseBody+" ", secret),
		"sha1":           "sha1=" + strings.Repeat("0", 40),
		"not hex":        "sha256=" + strings.Repeat("z", 64),
		"truncated":      sign(releaseBody, secret)[:40],
		"no prefix":      strings.TrimPrefix(sign(releaseBody, secret), "sha256="),
		"secret as text": "sha256=" + secret,
	} {
		w, a := deliver(h, "release", releaseBody, sig)
		if w.Code != http.StatusUnauthorized || !strings.Contains(a.Message, hook.SignatureHeader) {
			t.Errorf("%s signature: %d %q, want 401 naming the header", what, w.Code, a.Message)
		}
	}
	if len(*calls) != 0 {
		t.Errorf("checks started: %v", *calls)
	}
}

// A signed release or tag of a followed repository starts the check of
// the entries that follow it (whatever form their target is written in and
// whatever the case), with the delivery's ID.
func TestHookStartsTheCheckOfTheRepositorysLibrary(t *testing.T) {
	h, calls := newHook(t)
	w, a := deliver(h, "release", releaseBody, sign(releaseBody, secret))
	if w.Code != http.StatusAccepted || len(a.Started) != 1 || a.Started[0].Name != "tagged-lib" {
		t.Fatalf("release: %d %+v", w.Code, a)
	}
	tag := `{"ref":"v2.0.1","ref_type":"tag","repository":{"full_name":"Owner/Tagged"}}`
	if w, a = deliver(h, "create", tag, sign(tag, secret)); w.Code != http.StatusAccepted || len(a.Started) != 1 {
		t.Fatalf("tag: %d %+v", w.Code, a)
	}
	want := []started{{"tagged-lib", "72d3162e-cc78-11e3-81ab-4c9367dc0958"}, {"tagged-lib", "72d3162e-cc78-11e3-81ab-4c9367dc0958"}}
	if len(*calls) != 2 || (*calls)[0] != want[0] || (*calls)[1] != want[1] {
		t.Errorf("checks started: %v", *calls)
	}
}

// Signed events that make no tag, and repositories no entry follows,
// start nothing and say why.
func TestHookStartsNothingElse(t *testing.T) {
	h, calls := newHook(t)
	for _, c := range []struct {
		event, body string
		status      int
	}{
		{"create", `{"ref":"main","ref_type":"branch","repository":{"full_name":"owner/tagged"}}`, http.StatusAccepted},
		{"release", `{"action":"edited","repository":{"full_name":"owner/tagged"}}`, http.StatusAccepted},
		{"push", `{"ref":"refs/heads/main","repository":{"full_name":"owner/tagged"}}`, http.StatusAccepted},
		{"release", `{"action":"published","repository":{"full_name":"someone/else"}}`, http.StatusNotFound},
		{"release", `{"action":"published","repository":{}}`, http.StatusBadRequest},
		{"release", `not json`, http.StatusBadRequest},
		{"ping", `{"zen":"Design for failure."}`, http.StatusOK},
	} {
		w, a := deliver(h, c.event, c.body, sign(c.body, secret))
		if w.Code != c.status || a.Message == "" {
			t.Errorf("%s %s: %d %q, want %d with a message", c.event, c.body, w.Code, a.Message, c.status)
		}
	}
	if len(*calls) != 0 {
		t.Errorf("checks started: %v", *calls)
	}
}

// A body over the bound, a hook without a secret and a GET are refused.
func TestHookBounds(t *testing.T) {
	h, calls := newHook(t)
	big := `{"action":"published","pad":"` + strings.Repeat("x", hook.MaxBody) + `"}`
	if w, _ := deliver(h, "release", big, sign(big, secret)); w.Code != http.StatusRequestEntityTooLarge {
		t.Errorf("a body over %d bytes: %d", hook.MaxBody, w.Code)
	}
	unset := *h
	unset.Secret = nil
	if w, a := deliver(&unset, "release", releaseBody, sign(releaseBody, "")); w.Code != http.StatusServiceUnavailable || !strings.Contains(a.Message, "PUBLISH_WEBHOOK_SECRET") {
		t.Errorf("no secret: %d %q", w.Code, a.Message)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/hooks/github", nil))
	if w.Code != http.StatusMethodNotAllowed {
		t.Errorf("GET: %d", w.Code)
	}
	if len(*calls) != 0 {
		t.Errorf("checks started: %v", *calls)
	}
}
