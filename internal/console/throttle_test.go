package console

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// clock is a time the test moves.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

// throttled is the console with the default throttle (10 failures a
// minute) on a clock the test moves, and 10.0.0.0/8 as its trusted proxies.
func throttled(t *testing.T) (http.Handler, *clock, *Server) {
	t.Helper()
	c := &clock{t: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}
	s := New(Options{Tokens: testTokens(t), Throttle: Throttle{Now: c.now},
		TrustForwarded: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}})
	return s.Handler(), c, s
}

// bearer is one API request from peer (with X-Forwarded-For, if set).
func bearer(h http.Handler, peer, forwardedFor, secret string) *httptest.ResponseRecorder {
	req := httptest.NewRequest("GET", "/api/v1/openapi.json", nil)
	req.RemoteAddr = peer
	if forwardedFor != "" {
		req.Header.Set("X-Forwarded-For", forwardedFor)
	}
	req.Header.Set("Authorization", "Bearer "+secret)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func TestFailedTokensAreThrottledPerAddress(t *testing.T) {
	h, clk, _ := throttled(t)
	m := newThrottleMetrics()
	failuresBefore, throttledBefore := testutil.ToFloat64(m.failures[doorAPI]), testutil.ToFloat64(m.throttled[doorAPI])
	const attacker, other = "192.0.2.1:40000", "192.0.2.2:40000"
	for i := 1; i <= 10; i++ {
		if rec := bearer(h, attacker, "", fmt.Sprintf("guess-%02d-0123456789", i)); rec.Code != http.StatusUnauthorized {
			t.Fatalf("bad token %d: got %d, want 401", i, rec.Code)
		}
	}
	rec := bearer(h, attacker, "", "guess-11-0123456789")
	if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") != "6" || !strings.Contains(rec.Body.String(), `"code": 10002`) {
		t.Fatalf("the 11th bad token: got %d, Retry-After %q, %s; want 429, Retry-After 6 (one failure forgiven every 6 s), code 10002",
			rec.Code, rec.Header().Get("Retry-After"), rec.Body)
	}
	// A right token from the throttled address is not heard either: a 200
	// for the right guess among 429s would leave guessing unthrottled.
	if rec := bearer(h, attacker, "", rwSecret); rec.Code != http.StatusTooManyRequests {
		t.Errorf("a good token from the throttled address: got %d, want 429", rec.Code)
	}
	// Another address is unaffected, its good and bad tokens alike.
	if rec := bearer(h, other, "", rwSecret); rec.Code != http.StatusOK {
		t.Errorf("a good token from another address: got %d, want 200", rec.Code)
	}
	if rec := bearer(h, other, "", "guess-00-0123456789"); rec.Code != http.StatusUnauthorized {
		t.Errorf("a bad token from another address: got %d, want 401", rec.Code)
	}
	// Once a failure is forgiven the address is heard again (one attempt).
	clk.t = clk.t.Add(6 * time.Second)
	if rec := bearer(h, attacker, "", rwSecret); rec.Code != http.StatusOK {
		t.Errorf("a good token 6 s later: got %d, want 200", rec.Code)
	}
	if got := testutil.ToFloat64(m.failures[doorAPI]) - failuresBefore; got != 11 {
		t.Errorf("edgeflow_console_auth_failures_total{door=api} rose by %v, want 11", got)
	}
	if got := testutil.ToFloat64(m.throttled[doorAPI]) - throttledBefore; got != 2 {
		t.Errorf("edgeflow_console_auth_throttled_total{door=api} rose by %v, want 2", got)
	}
}

func TestSuccessfulRequestsAreNotThrottled(t *testing.T) {
	h, _, _ := throttled(t)
	for i := range 100 {
		if rec := bearer(h, "192.0.2.1:40000", "", roSecret); rec.Code != http.StatusOK {
			t.Fatalf("good request %d: got %d", i, rec.Code)
		}
	}
}

func TestForwardedForIsBelievedOnlyFromTrustedProxies(t *testing.T) {
	h, _, _ := throttled(t)
	// From an untrusted peer, X-Forwarded-For is the caller's word: a new
	// one each time does not escape the throttle of the peer.
	for i := 1; i <= 10; i++ {
		bearer(h, "192.0.2.1:40000", fmt.Sprintf("198.51.100.%d", i), "guess-0123456789")
	}
	if rec := bearer(h, "192.0.2.1:40000", "198.51.100.99", "guess-0123456789"); rec.Code != http.StatusTooManyRequests {
		t.Errorf("an untrusted peer naming another client: got %d, want 429", rec.Code)
	}
	// Behind a trusted proxy each client has its own budget, whatever it
	// wrote to the left of the proxy's entry.
	for i := 1; i <= 10; i++ {
		bearer(h, "10.0.0.5:40000", "203.0.113.7, 198.51.100.1", "guess-0123456789")
	}
	if rec := bearer(h, "10.0.0.5:40000", "198.51.100.1", "guess-0123456789"); rec.Code != http.StatusTooManyRequests {
		t.Errorf("the proxied client after 10 failures: got %d, want 429", rec.Code)
	}
	if rec := bearer(h, "10.0.0.5:40000", "198.51.100.2", rwSecret); rec.Code != http.StatusOK {
		t.Errorf("another client of the same proxy: got %d, want 200", rec.Code)
	}
}

func TestFailedSignInsAreThrottled(t *testing.T) {
	h, _, _ := throttled(t)
	const peer = "192.0.2.9:40000"
	signin := func(token string) *httptest.ResponseRecorder {
		form := httptest.NewRequest("GET", "/", nil)
		form.RemoteAddr = peer
		page := httptest.NewRecorder()
		h.ServeHTTP(page, form)
		var pair *http.Cookie
		for _, c := range page.Result().Cookies() {
			if c.Name == "edgeflow-console-signin" {
				pair = c
			}
		}
		if pair == nil {
			t.Fatal("no sign-in cookie")
		}
		req := httptest.NewRequest("POST", "/signin", strings.NewReader(url.Values{"csrf": {pair.Value}, "token": {token}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.RemoteAddr = peer
		req.AddCookie(pair)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	for i := 1; i <= 10; i++ {
		if rec := signin("guess-0123456789"); rec.Code != http.StatusUnauthorized {
			t.Fatalf("bad sign-in %d: got %d, want 401", i, rec.Code)
		}
	}
	if rec := signin(rwSecret); rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") == "" {
		t.Errorf("the 11th sign-in: got %d, Retry-After %q; want 429 with Retry-After", rec.Code, rec.Header().Get("Retry-After"))
	}
	// The pages themselves are not a door: the sign-in form still shows.
	req := httptest.NewRequest("GET", "/", nil)
	req.RemoteAddr = peer
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Errorf("GET / from the throttled address: got %d, want 200", rec.Code)
	}
}

func TestThrottleTableIsBounded(t *testing.T) {
	c := &clock{t: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}
	l := newFailureLimiter(Throttle{MaxAddrs: 100, Now: c.now})
	for i := range 5000 {
		l.failed(netip.AddrFrom4([4]byte{198, 18, byte(i >> 8), byte(i)}))
	}
	if l.size() != 100 {
		t.Errorf("after 5000 addresses failed: %d in the table, want 100", l.size())
	}
	// The most recent are kept.
	last := netip.AddrFrom4([4]byte{198, 18, byte(4999 >> 8), byte(4999 & 0xff)})
	for range 9 {
		l.failed(last)
	}
	if l.wait(last) == 0 {
		t.Error("the latest address's 10 failures were forgotten")
	}
	// An IPv6 host is one client across its /64.
	for i := range 10 {
		l.failed(netip.MustParseAddr(fmt.Sprintf("2001:db8:1:2::%x", i+1)))
	}
	if l.wait(netip.MustParseAddr("2001:db8:1:2:ffff::1")) == 0 {
		t.Error("10 failures across one /64 are not counted together")
	}
	if l.wait(netip.MustParseAddr("2001:db8:1:3::1")) != 0 {
		t.Error("another /64 is throttled")
	}
}
