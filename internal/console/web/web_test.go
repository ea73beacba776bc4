package web

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"
)

const secret = "web-test-secret-0123456789"

// testPages are pages whose tokens are one read-write "admin" and one
// read-only "viewer", on a clock the test moves.
func testPages(now *time.Time) *Pages {
	return New(Options{
		Authenticate: func(s string) (string, bool, bool) {
			switch s {
			case secret:
				return "admin", false, true
			case "ro-" + secret:
				return "viewer", true, true
			}
			return "", false, false
		},
		Now: func() time.Time { return *now },
	})
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

func do(t *testing.T, h http.Handler, method, path string, form url.Values, cookies ...*http.Cookie) *httptest.ResponseRecorder {
	t.Helper()
	var req *http.Request
	if form != nil {
		req = httptest.NewRequest(method, path, strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	} else {
		req = httptest.NewRequest(method, path, nil)
	}
	for _, c := range cookies {
		req.AddCookie(c)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func cookie(t *testing.T, rec *httptest.ResponseRecorder, name string) *http.Cookie {
	t.Helper()
	for _, c := range rec.Result().Cookies() {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no cookie %s in %v", name, rec.Result().Header["Set-Cookie"])
	return nil
}

// signIn signs in with token and returns the session cookie.
func signIn(t *testing.T, h http.Handler, token string) *http.Cookie {
	t.Helper()
	form := do(t, h, "GET", "/", nil)
	pair := cookie(t, form, signinCookie)
	m := csrfField.FindStringSubmatch(form.Body.String())
	if m == nil {
		t.Fatalf("the sign-in form has no CSRF field:\n%s", form.Body)
	}
	rec := do(t, h, "POST", "/signin", url.Values{"csrf": {m[1]}, "token": {token}}, pair)
	if rec.Code != http.StatusSeeOther {
		t.Fatalf("sign in: %d\n%s", rec.Code, rec.Body)
	}
	return cookie(t, rec, SessionCookie)
}

func TestSignInSetsAStrictHttpOnlySessionCookie(t *testing.T) {
	now := time.Now()
	h := testPages(&now).Handler()
	first := do(t, h, "GET", "/", nil)
	if first.Code != 200 || !strings.Contains(first.Body.String(), `type="password"`) || !strings.Contains(first.Body.String(), `method="post" action="/signin"`) {
		t.Fatalf("the sign-in form: %d\n%s", first.Code, first.Body)
	}
	if csp := first.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || !strings.Contains(csp, "frame-ancestors 'none'") {
		t.Errorf("Content-Security-Policy %q", csp)
	}
	c := signIn(t, h, secret)
	if !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Secure || c.MaxAge <= 0 {
		t.Errorf("session cookie %+v: want HttpOnly, SameSite=Strict, not Secure over plain HTTP, an expiry", c)
	}
	if strings.Contains(c.Value, secret) {
		t.Error("the session cookie carries the token's secret")
	}
}

func TestSessionCookieIsSecureOverTLS(t *testing.T) {
	now := time.Now()
	h := testPages(&now).Handler()
	req := httptest.NewRequest("GET", "https://console.example/", nil)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if c := cookie(t, rec, signinCookie); !c.Secure {
		t.Errorf("over TLS the cookie %+v must be Secure", c)
	}
}

func TestSignInRefusals(t *testing.T) {
	now := time.Now()
	h := testPages(&now).Handler()
	form := do(t, h, "GET", "/", nil)
	pair := cookie(t, form, signinCookie)
	csrf := csrfField.FindStringSubmatch(form.Body.String())[1]
	// No pair cookie: a foreign page posting the form is refused.
	if rec := do(t, h, "POST", "/signin", url.Values{"csrf": {csrf}, "token": {secret}}); rec.Code != http.StatusForbidden || !strings.Contains(rec.Body.String(), "csrf:") {
		t.Errorf("sign-in without the CSRF cookie: %d\n%s", rec.Code, rec.Body)
	}
	rec := do(t, h, "POST", "/signin", url.Values{"csrf": {csrf}, "token": {"not-a-token-at-all"}}, pair)
	if rec.Code != http.StatusUnauthorized || !strings.Contains(rec.Body.String(), "token: not a console token") {
		t.Errorf("a wrong token: %d\n%s", rec.Code, rec.Body)
	}
	for _, c := range rec.Result().Cookies() {
		if c.Name == SessionCookie {
			t.Errorf("a wrong token got a session cookie")
		}
	}
}

func TestEveryPostNeedsTheSessionsCSRFToken(t *testing.T) {
	now := time.Now()
	h := testPages(&now).Handler()
	c := signIn(t, h, secret)
	for _, path := range []string{"/signout", "/rooms", "/rooms/shop/settings", "/rooms/shop/suspend", "/rooms/shop/resume", "/rooms/shop/events", "/rooms/shop/events/launch/cancel"} {
		for _, csrf := range []string{"", "forged"} {
			rec := do(t, h, "POST", path, url.Values{"csrf": {csrf}, "name": {"x"}}, c)
			if rec.Code != http.StatusForbidden || !strings.Contains(rec.Body.String(), "csrf:") {
				t.Errorf("POST %s with csrf %q: %d\n%s", path, csrf, rec.Code, rec.Body)
			}
		}
		if rec := do(t, h, "POST", path, url.Values{}); rec.Code != http.StatusUnauthorized {
			t.Errorf("POST %s without a session: %d", path, rec.Code)
		}
	}
}

// sessionCSRF reads the CSRF token of a session (what its pages render).
func sessionCSRF(t *testing.T, p *Pages, c *http.Cookie) string {
	t.Helper()
	s := p.sessions.m[c.Value]
	if s == nil {
		t.Fatal("no such session")
	}
	return s.csrf
}

func TestReadOnlyTokensCannotWrite(t *testing.T) {
	now := time.Now()
	p := testPages(&now)
	h := p.Handler()
	c := signIn(t, h, "ro-"+secret)
	csrf := sessionCSRF(t, p, c)
	for _, path := range []string{"/rooms", "/rooms/shop/settings", "/rooms/shop/suspend", "/rooms/shop/events"} {
		if rec := do(t, h, "POST", path, url.Values{"csrf": {csrf}}, c); rec.Code != http.StatusForbidden || !strings.Contains(rec.Body.String(), "read-only") {
			t.Errorf("POST %s read-only: %d\n%s", path, rec.Code, rec.Body)
		}
	}
}

func TestSignOutEndsTheSession(t *testing.T) {
	now := time.Now()
	p := testPages(&now)
	h := p.Handler()
	c := signIn(t, h, secret)
	rec := do(t, h, "POST", "/signout", url.Values{"csrf": {sessionCSRF(t, p, c)}}, c)
	if rec.Code != http.StatusSeeOther || cookie(t, rec, SessionCookie).MaxAge >= 0 {
		t.Fatalf("sign out: %d %v", rec.Code, rec.Result().Header["Set-Cookie"])
	}
	// The old cookie, replayed, is no session any more.
	if rec := do(t, h, "GET", "/rooms/shop", nil, c); rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != "/" {
		t.Errorf("after sign-out: %d %s", rec.Code, rec.Header().Get("Location"))
	}
}

func TestSessionsExpire(t *testing.T) {
	now := time.Now()
	p := testPages(&now)
	h := p.Handler()
	c := signIn(t, h, secret)
	csrf := sessionCSRF(t, p, c)
	now = now.Add(DefaultSessionTTL)
	if rec := do(t, h, "GET", "/rooms/shop", nil, c); rec.Code != http.StatusSeeOther {
		t.Errorf("an expired session's page: %d", rec.Code)
	}
	if rec := do(t, h, "POST", "/signout", url.Values{"csrf": {csrf}}, c); rec.Code != http.StatusUnauthorized {
		t.Errorf("an expired session's POST: %d", rec.Code)
	}
	if len(p.sessions.m) != 0 {
		t.Errorf("the expired session is still kept")
	}
}
