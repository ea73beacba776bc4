package gate

import (
	"bufio"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/edgeflow/edgeflow/internal/admit"
)

// The origin gets exactly the path the gate judged: dot-segments resolved,
// doubled slashes collapsed, unreserved escapes decoded, the query as sent.
// Encoded slashes and backslashes, which origins disagree on, are refused.
func TestOriginGetsTheJudgedPath(t *testing.T) {
	h := newHarness(t, admit.Settings{Name: "shop", Path: "/shop/", TotalActiveUsers: 1, NewUsersPerMinute: 1, QueueingStatusCode: 429})
	admitted := newVisitor()
	mustOrigin(t, h.get(admitted, "/shop/"), "the room's one visitor")
	if h.get(newVisitor(), "/shop/").status != 429 {
		t.Fatal("the room should be full")
	}
	for _, c := range []struct{ target, uri string }{
		{"/shop/../public", "/public"},
		{"/shop/%2e%2e/public", "/public"},
		{"/shop/%2E%2E/public?next=/shop/%2e%2e/x", "/public?next=/shop/%2e%2e/x"}, // the query is not touched
		{"/public/./a//b/", "/public/a/b/"},
		{"/%7Epublic/%41", "/~public/A"},
		{"/caf%c3%a9/", "/caf%C3%A9/"},
		{"/SHOP/item", "/SHOP/item"}, // a different path for this room (path_case_insensitive false)
	} {
		res := h.get(newVisitor(), c.target)
		if !res.fromOrigin() || res.header.Get("X-Saw-Uri") != c.uri {
			t.Errorf("%s: %d %q, the origin saw %q; want it to see %q", c.target, res.status, res.body, res.header.Get("X-Saw-Uri"), c.uri)
		}
	}
	// The admitted visitor's requests reach the room's pages in the same form.
	for _, c := range []struct{ target, uri string }{
		{"/public/../shop/item", "/shop/item"},
		{"/shop//cart/./x", "/shop/cart/x"},
		{"/shop/cart;jsessionid=abc?x=1", "/shop/cart;jsessionid=abc?x=1"},
	} {
		res := h.get(admitted, c.target)
		if !res.fromOrigin() || res.header.Get("X-Saw-Uri") != c.uri {
			t.Errorf("admitted, %s: %d %q, the origin saw %q; want %q", c.target, res.status, res.body, res.header.Get("X-Saw-Uri"), c.uri)
		}
	}
	// A stranger is judged by the room whatever the spelling.
	for _, target := range []string{"/public/../shop/item", "/public/%2e%2e/shop/item", "//shop//item", "/shop/cart;jsessionid=abc",
		"/shop;v=1/item", "/%73hop/item"} {
		mustQueue(t, h.get(newVisitor(), target), 429, target)
	}
	for _, target := range []string{"/shop/..%2fpublic", "/shop/..%2Fpublic", "/shop/..%5cpublic", "/public/..%2Fshop/item",
		`/shop\..\public`, "/public/..;x/shop/", "/public/%2e%2e;x/shop/"} {
		hits := h.hits.Load()
		if res := h.get(newVisitor(), target); res.status != http.StatusBadRequest || h.hits.Load() != hits {
			t.Errorf("%s: %d %q; want 400 and nothing sent to the origin", target, res.status, res.body)
		}
	}
}

// For an origin that ignores case, the room judges every spelling of its
// paths.
func TestPathCaseInsensitiveRoom(t *testing.T) {
	h := newHarness(t, admit.Settings{Name: "shop", Path: "/shop/", PathCaseInsensitive: true, TotalActiveUsers: 1, NewUsersPerMinute: 1, QueueingStatusCode: 429})
	mustOrigin(t, h.get(newVisitor(), "/shop/"), "the room's one visitor")
	for _, target := range []string{"/SHOP/item", "/Shop/Item", "/%53HOP/x"} {
		mustQueue(t, h.get(newVisitor(), target), 429, target)
	}
	mustOrigin(t, h.get(newVisitor(), "/SHOPPING"), "a path outside the room, in upper case")
}

// recordingTransport is an origin that answers at once, keeping the
// request it got.
type recordingTransport struct {
	mu  sync.Mutex
	out *http.Request
}

func (rt *recordingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	rt.mu.Lock()
	rt.out = r
	rt.mu.Unlock()
	return &http.Response{StatusCode: 200, Header: http.Header{}, Body: io.NopCloser(strings.NewReader("origin")), Request: r}, nil
}

func (rt *recordingTransport) take() *http.Request {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	r := rt.out
	rt.out = nil
	return r
}

// roomOfResponse names the room that judged a request: each of the fuzz
// rooms sets its own cookie (its suffix is its name).
func roomOfResponse(rec *httptest.ResponseRecorder) string {
	for _, c := range rec.Result().Cookies() {
		if name, ok := strings.CutPrefix(c.Name, CookieName+"_"); ok {
			return name
		}
	}
	return ""
}

// FuzzForwardedPath holds the route matcher and the forwarded path
// together: for any request target, the gate answers 400, or the origin
// gets a canonical path (no dot-segments, no empty segments, no encoded
// slash) which, matched again, falls to the room that judged the request,
// with the query as sent (when it parses).
func FuzzForwardedPath(f *testing.F) {
	for _, seed := range []string{"/", "/shop/item", "/shop/../public", "/shop/%2e%2e/public", "/shop/..%2fpublic", "/SHOP/item",
		"/public/../shop/x", "//shop//x", "/shop/cart;jsessionid=abc?a=b", "/Admin/%2E/x", "/caf%c3%a9/", "/shop;x/y", "/public/..;/shop/",
		"http://example.com/shop/a", "/%7Eadmin/", "*", "/a/b/c/../../..//admin"} {
		f.Add(seed)
	}
	rooms := []admit.Settings{{Name: "all"}, {Name: "shop", Path: "/shop/"}, {Name: "shopcart", Path: "/shop/cart"},
		{Name: "admin", Path: "/admin/", PathCaseInsensitive: true}, {Name: "cafe", Path: "/café/"}, {Name: "tilde", Path: "/~admin/"}}
	for i := range rooms {
		// Room enough for every input, so that each reaches the origin.
		rooms[i].CookieSuffix, rooms[i].TotalActiveUsers, rooms[i].NewUsersPerMinute = rooms[i].Name, admit.MaxLimit, admit.MaxLimit
	}
	reg := registryWith(f, rooms...)
	origin := &recordingTransport{}
	g, err := New(Config{Origin: &url.URL{Scheme: "http", Host: "origin.internal"}, Gate: reg.gate, Keys: testRing(f, testKey(f, "k1")),
		Counters: MemoryCounters(), Registry: reg, Logger: quietLogger(), Transport: origin, Now: func() time.Time { return t0.Add(time.Second) }})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, target string) {
		if strings.ContainsAny(target, " \r\n") {
			return
		}
		req, err := http.ReadRequest(bufio.NewReader(strings.NewReader("GET " + target + " HTTP/1.1\r\nHost: example.com\r\n\r\n")))
		if err != nil {
			return // the server refuses it before any handler
		}
		req.RemoteAddr = "192.0.2.1:1234"
		query := req.URL.RawQuery
		rec := httptest.NewRecorder()
		g.ServeHTTP(rec, req)
		out := origin.take()
		if rec.Code == http.StatusBadRequest {
			if out != nil {
				t.Fatalf("%q: 400, yet the origin got %q", target, out.URL.RequestURI())
			}
			return
		}
		if out == nil {
			t.Fatalf("%q: %d, and nothing reached the origin", target, rec.Code)
		}
		p := out.URL.EscapedPath()
		if canon, err := admit.CanonicalPath(p); err != nil || canon != p {
			t.Fatalf("%q: the origin got %q, not canonical (%q, %v)", target, p, canon, err)
		}
		if strings.Contains(p, "//") || strings.Contains(strings.ToLower(p), "%2f") || strings.Contains(strings.ToLower(p), "%5c") {
			t.Fatalf("%q: the origin got %q", target, p)
		}
		for seg := range strings.SplitSeq(p, "/") {
			if seg == "." || seg == ".." {
				t.Fatalf("%q: the origin got a dot-segment in %q", target, p)
			}
		}
		// (A query that does not parse is re-encoded by the reverse proxy,
		// as ever, so that the origin cannot read it differently.)
		if _, err := url.ParseQuery(query); err == nil && out.URL.RawQuery != query {
			t.Fatalf("%q: the query %q reached the origin as %q", target, query, out.URL.RawQuery)
		}
		decoded, err := url.PathUnescape(p)
		if err != nil {
			t.Fatal(err)
		}
		again := ""
		if r := reg.Match("example.com", decoded); r != nil {
			again = r.Name()
		}
		if judged := roomOfResponse(rec); judged != again {
			t.Fatalf("%q: judged by room %q, but the path the origin got (%q) is room %q's", target, judged, p, again)
		}
	})
}
