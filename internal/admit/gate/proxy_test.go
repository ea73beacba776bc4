package gate

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/edgeflow/edgeflow/internal/admit"
)

func TestOriginRevokesSession(t *testing.T) {
	h := newHarness(t, admit.Settings{Name: "shop", TotalActiveUsers: 1, NewUsersPerMinute: 5, EnabledOriginCommands: []string{"revoke"}})
	a := newVisitor()
	mustOrigin(t, h.get(a, "/"), "admitted")
	kept := a.clone()
	res := h.get(a, "/logout")
	mustOrigin(t, res, "the origin's logout page")
	if res.header.Get(RevokeHeader) != "" {
		t.Error("the origin's command reached the visitor")
	}
	if len(a.cookies) != 0 {
		t.Errorf("the session cookie was not deleted: %v (Set-Cookie %v)", a.cookies, res.header.Values("Set-Cookie"))
	}
	if !strings.Contains(strings.Join(res.header.Values("Set-Cookie"), "\n"), "origin_session=abc") {
		t.Error("the origin's own cookies must still reach the visitor")
	}
	reports := h.reg.Room("shop").Tally().Pending()
	if len(reports) == 0 || len(reports[len(reports)-1].Revoked) != 1 {
		t.Fatalf("the revocation is not reported: %+v", reports)
	}
	// Replaying the cookie held before the revocation does not bring the
	// session back: it is a new visitor, and this minute's one slot is spent.
	mustQueue(t, h.get(kept, "/"), 200, "the revoked session's old cookie")

	// Without the room's permission the command is dropped and the session stays.
	h2 := newHarness(t, admit.Settings{Name: "shop", TotalActiveUsers: 1, NewUsersPerMinute: 5})
	b := newVisitor()
	h2.get(b, "/")
	res = h2.get(b, "/logout")
	if res.header.Get(RevokeHeader) != "" || len(b.cookies) != 1 {
		t.Errorf("revoke not enabled: header %q, cookies %v", res.header.Get(RevokeHeader), b.cookies)
	}
}

func TestOriginErrorsPassedOnHonestly(t *testing.T) {
	h := newHarness(t, admit.Settings{Name: "shop", TotalActiveUsers: 10, NewUsersPerMinute: 10}, func(c *Config) {
		// /slow never answers: the gate's own deadline ends the request.
		c.Transport = NewTransport(OriginTimeouts{Dial: time.Second, ResponseHeader: 200 * time.Millisecond, Idle: time.Second})
	})
	v := newVisitor()
	res := h.get(v, "/broken")
	if res.status != 503 || res.body != "origin is overloaded\n" || res.header.Get("Retry-After") != "7" {
		t.Errorf("the origin's own error: %d %v %q", res.status, res.header, res.body)
	}
	if len(v.cookies) != 1 {
		t.Error("an admitted visitor must get its cookie even when the origin fails")
	}
	res = h.get(v, "/slow")
	if res.status != http.StatusGatewayTimeout || strings.Contains(res.body, "127.0.0.1") {
		t.Errorf("a slow origin: %d %q", res.status, res.body)
	}
	h.origin.Close()
	res = h.get(v, "/")
	if res.status != http.StatusBadGateway || strings.Contains(res.body, "127.0.0.1") || strings.Contains(res.body, "dial") {
		t.Errorf("an unreachable origin: %d %q (no internals)", res.status, res.body)
	}
}

func TestRequestSizeLimit(t *testing.T) {
	h := newHarness(t, admit.Settings{Name: "shop", TotalActiveUsers: 10, NewUsersPerMinute: 10}, func(c *Config) { c.MaxBodyBytes = 1000 })
	v := newVisitor()
	small := httptest.NewRequest(http.MethodPost, "/upload", strings.NewReader(strings.Repeat("x", 1000)))
	if res := h.do(v, small); res.status != 200 || res.body != "got 1000\n" {
		t.Errorf("a body at the limit: %d %q", res.status, res.body)
	}
	big := httptest.NewRequest(http.MethodPost, "/upload", strings.NewReader(strings.Repeat("x", 1001)))
	if res := h.do(v, big); res.status != http.StatusRequestEntityTooLarge {
		t.Errorf("a body over the limit (length known): %d %q", res.status, res.body)
	}
	streamed := httptest.NewRequest(http.MethodPost, "/upload", io.MultiReader(strings.NewReader(strings.Repeat("x", 5000))))
	streamed.ContentLength = -1
	if res := h.do(v, streamed); res.status == 200 {
		t.Errorf("a streamed body over the limit reached the origin whole: %d %q", res.status, res.body)
	}
}

// The origin learns the visitor's address and scheme; headers a visitor
// forges are believed only from a trusted proxy in front.
func TestForwardedHeaders(t *testing.T) {
	for _, trust := range []bool{false, true} {
		h := newHarness(t, admit.Settings{Name: "shop", TotalActiveUsers: 10, NewUsersPerMinute: 10}, func(c *Config) { c.TrustForwarded = trust })
		res := h.get(newVisitor(), "/", "X-Forwarded-For", "203.0.113.9", "X-Forwarded-Proto", "https")
		xff, proto := res.header.Get("X-Saw-Forwarded-For"), res.header.Get("X-Saw-Forwarded-Proto")
		wantXFF, wantProto := "192.0.2.1", "http"
		if trust {
			wantXFF, wantProto = "203.0.113.9, 192.0.2.1", "https"
		}
		if xff != wantXFF || proto != wantProto {
			t.Errorf("trust %v: the origin saw X-Forwarded-For %q and -Proto %q; want %q and %q", trust, xff, proto, wantXFF, wantProto)
		}
		if sc := res.header.Get("Set-Cookie"); strings.Contains(sc, "Secure") {
			t.Errorf("trust %v: a forwarded scheme made the cookie Secure (only always_use_https does): %q", trust, sc)
		}
	}
}

// Headers naming the visitor's address reach the origin only from a
// trusted proxy in front: a visitor could name any address in them.
func TestClientIPHeadersStripped(t *testing.T) {
	sent := map[string]string{"X-Real-IP": "203.0.113.1", "True-Client-IP": "203.0.113.2", "CF-Connecting-IP": "203.0.113.3",
		"X-Client-IP": "203.0.113.4", "X-Cluster-Client-IP": "203.0.113.5", "Fastly-Client-IP": "203.0.113.6"}
	for _, trust := range []bool{false, true} {
		h := newHarness(t, admit.Settings{Name: "shop", TotalActiveUsers: 10, NewUsersPerMinute: 10}, func(c *Config) { c.TrustForwarded = trust })
		var headers []string
		for name, v := range sent {
			headers = append(headers, name, v)
		}
		headers = append(headers, "Forwarded", "for=203.0.113.7")
		res := h.get(newVisitor(), "/", headers...)
		mustOrigin(t, res, "a visitor")
		for name, v := range sent {
			if got, want := res.header.Get("X-Saw-"+name), map[bool]string{true: v}[trust]; got != want {
				t.Errorf("trust %v: the origin got %s %q, want %q", trust, name, got, want)
			}
		}
		if got := res.header.Get("X-Saw-Forwarded"); got != "" {
			t.Errorf("trust %v: the visitor's Forwarded reached the origin: %q", trust, got)
		}
	}
}

// A CORS preflight reaches the origin without a decision: it carries no
// cookie, so judging it would count a new visitor and spend a slot.
func TestCORSPreflightPassesUncounted(t *testing.T) {
	h := newHarness(t, admit.Settings{Name: "shop", TotalActiveUsers: 1, NewUsersPerMinute: 1, QueueingStatusCode: 429})
	mustOrigin(t, h.get(newVisitor(), "/"), "the room's one visitor")
	for range 3 {
		req := httptest.NewRequest(http.MethodOptions, "/api/cart", nil)
		req.Header.Set("Origin", "https://app.example.com")
		req.Header.Set("Access-Control-Request-Method", "POST")
		res := h.do(nil, req)
		mustOrigin(t, res, "a preflight, the room full")
		if sc := res.header.Get("Set-Cookie"); strings.Contains(sc, CookieName) {
			t.Errorf("a preflight got a waiting room cookie: %q", sc)
		}
	}
	n := 0
	for _, r := range h.reg.Room("shop").Tally().Pending() {
		n += r.NewVisitors
	}
	if n != 1 {
		t.Errorf("preflights were counted: %d new visitors, want the one admitted", n)
	}
	// Without both headers an OPTIONS request is judged like any other.
	req := httptest.NewRequest(http.MethodOptions, "/api/cart", nil)
	req.Header.Set("Origin", "https://app.example.com")
	mustQueue(t, h.do(newVisitor(), req), 429, "OPTIONS without Access-Control-Request-Method")
}
