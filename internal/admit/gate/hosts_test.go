package gate

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/edgeflow/edgeflow/internal/admit"
)

// With --hosts, a request naming another host (421) or none (400) does not
// reach the origin: a host-scoped room cannot be bypassed by changing the
// Host. A served host that no host-scoped room names still reaches the
// rooms without a host.
func TestHostsAllowList(t *testing.T) {
	reg := registryWith(t, admit.Settings{Name: "tickets", Host: "tickets.example.com", CookieSuffix: "tickets"},
		admit.Settings{Name: "all", CookieSuffix: "all"})
	origin := &recordingTransport{}
	g, err := New(Config{Origin: &url.URL{Scheme: "http", Host: "origin.internal"}, Gate: reg.gate, Keys: testRing(t, testKey(t, "k1")),
		Counters: MemoryCounters(), Registry: reg, Logger: quietLogger(), Transport: origin, Now: func() time.Time { return t0.Add(time.Second) },
		Hosts: []string{"tickets.example.com", "WWW.example.com", "127.0.0.1", "::1"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		host   string
		status int
		room   string
	}{
		{"tickets.example.com", 200, "tickets"},
		{"TICKETS.example.com:8443", 200, "tickets"},
		{"tickets.example.com.", 200, "tickets"},
		{"www.example.com", 200, "all"}, // no host-scoped room for it: the rooms without a host
		{"127.0.0.1:8088", 200, "all"},
		{"[::1]:8088", 200, "all"},
		{"origin.internal", http.StatusMisdirectedRequest, ""},
		{"evil.example", http.StatusMisdirectedRequest, ""},
		{"tickets.example.com.evil.example", http.StatusMisdirectedRequest, ""},
		{"", http.StatusBadRequest, ""}, // HTTP/1.0 without Host
		{":80", http.StatusBadRequest, ""},
	} {
		req := httptest.NewRequest(http.MethodGet, "/x", nil)
		req.Host = c.host
		rec := httptest.NewRecorder()
		g.ServeHTTP(rec, req)
		out := origin.take()
		if rec.Code != c.status || (out != nil) != (c.status == 200) || roomOfResponse(rec) != c.room {
			t.Errorf("Host %q: %d, room %q, origin reached %v; want %d, room %q", c.host, rec.Code, roomOfResponse(rec), out != nil, c.status, c.room)
		}
	}
	if st := g.Status(); len(st.Warnings) != 0 {
		t.Errorf("warnings with --hosts: %v", st.Warnings)
	}
}

// Without --hosts every Host passes, as before; the gate warns at start,
// and on /status while a room names a host.
func TestNoHostsWarns(t *testing.T) {
	var logged bytes.Buffer
	reg := registryWith(t, admit.Settings{Name: "all"})
	g, err := New(Config{Origin: &url.URL{Scheme: "http", Host: "origin.internal"}, Gate: reg.gate, Keys: testRing(t, testKey(t, "k1")),
		Counters: MemoryCounters(), Registry: reg, Logger: slog.New(slog.NewTextHandler(&logged, nil)), Transport: &recordingTransport{},
		Now: func() time.Time { return t0.Add(time.Second) }})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logged.String(), "level=WARN") || !strings.Contains(logged.String(), "--hosts") {
		t.Errorf("no warning at start without --hosts: %q", logged.String())
	}
	for _, host := range []string{"anything.example", ""} {
		req := httptest.NewRequest(http.MethodGet, "/x", nil)
		req.Host = host
		rec := httptest.NewRecorder()
		g.ServeHTTP(rec, req)
		if rec.Code != 200 {
			t.Errorf("Host %q without --hosts: %d", host, rec.Code)
		}
	}
	if st := g.Status(); len(st.Warnings) != 0 {
		t.Errorf("no room names a host, yet: %v", st.Warnings)
	}
	r, err := admit.NewRoom(admit.Settings{Name: "tickets", Host: "tickets.example.com", TotalActiveUsers: 1, NewUsersPerMinute: 1}, 60, t0)
	if err != nil {
		t.Fatal(err)
	}
	if err := reg.Update(r.Snapshot, nil, t0); err != nil {
		t.Fatal(err)
	}
	if st := g.Status(); !slices.Contains(st.Warnings, WarningNoHosts) {
		t.Errorf("a room names a host and every Host is accepted: want a warning, got %v", st.Warnings)
	}
}

func TestParseHosts(t *testing.T) {
	got, err := ParseHosts(" Shop.Example.com, 127.0.0.1,,[::1],shop.example.com ")
	if err != nil || !slices.Equal(got, []string{"shop.example.com", "127.0.0.1", "::1"}) {
		t.Errorf("ParseHosts: %q, %v", got, err)
	}
	if got, err := ParseHosts(" * "); err != nil || got != nil {
		t.Errorf("ParseHosts(*): %q, %v; want every host", got, err)
	}
	if _, err := ParseHosts("*,shop.example.com"); err == nil {
		t.Error("ParseHosts(*,shop.example.com): no error; '*' goes alone")
	}
	for _, none := range []string{"", " , "} {
		if _, err := ParseHosts(none); err == nil {
			t.Errorf("ParseHosts(%q): no error; a gate must be told its hosts or '*'", none)
		}
	}
	for _, bad := range []string{"https://shop.example.com", "shop.example.com:8080", "*.example.com", "shop.example.com/x", "[]"} {
		if _, err := ParseHosts(bad); err == nil || !strings.Contains(err.Error(), bad) {
			t.Errorf("ParseHosts(%q): %v, want an error naming it", bad, err)
		}
	}
}

// FuzzHostDecision: for any Host, the gate never panics, and passes only a
// Host that is one of its hosts (in any case, with a port, a trailing dot,
// an IPv6 address's brackets); no host is 400, any other 421.
func FuzzHostDecision(f *testing.F) {
	allowed := []string{"shop.example.com", "127.0.0.1", "::1"}
	for _, seed := range []string{"shop.example.com", "SHOP.example.com:443", "shop.example.com.", "127.0.0.1:8088", "[::1]:80", "::1",
		"", ":", ":80", "evil.example", "shop.example.com.evil", "shop.example.com:1:2", "[shop.example.com]", "[::1", "shop.example.com]:80"} {
		f.Add(seed)
	}
	reg := registryWith(f, admit.Settings{Name: "tickets", Host: "shop.example.com", CookieSuffix: "tickets",
		TotalActiveUsers: admit.MaxLimit, NewUsersPerMinute: admit.MaxLimit}) // every served request reaches the origin
	origin := &recordingTransport{}
	g, err := New(Config{Origin: &url.URL{Scheme: "http", Host: "origin.internal"}, Gate: reg.gate, Keys: testRing(f, testKey(f, "k1")),
		Counters: MemoryCounters(), Registry: reg, Logger: quietLogger(), Transport: origin, Now: func() time.Time { return t0.Add(time.Second) },
		Hosts: allowed})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, host string) {
		req := httptest.NewRequest(http.MethodGet, "/x", nil)
		req.Host = host
		rec := httptest.NewRecorder()
		g.ServeHTTP(rec, req)
		passed := origin.take() != nil
		switch {
		case rec.Code == http.StatusBadRequest && !passed:
			if normalizeHost(host) != "" {
				t.Fatalf("Host %q (%q) refused as missing", host, normalizeHost(host))
			}
		case rec.Code == http.StatusMisdirectedRequest && !passed:
			if slices.Contains(allowed, normalizeHost(host)) {
				t.Fatalf("Host %q refused, yet it is %q", host, normalizeHost(host))
			}
		case rec.Code == http.StatusOK && passed:
			if !namesAllowedHost(host, allowed) {
				t.Fatalf("Host %q passed, and it is none of %v", host, allowed)
			}
		default:
			t.Fatalf("Host %q: %d, origin reached %v", host, rec.Code, passed)
		}
		// The plainest spellings of a served host always pass.
		for _, a := range allowed {
			if l := strings.ToLower(host); l == a || (!strings.Contains(a, ":") && l == a+":8080") {
				if !passed {
					t.Fatalf("Host %q is %q, yet refused with %d", host, a, rec.Code)
				}
			}
		}
	})
}

// namesAllowedHost is an oracle independent of normalizeHost: host is an
// allowed name in any case, perhaps in brackets, then nothing, a trailing
// dot or a port.
func namesAllowedHost(host string, allowed []string) bool {
	l := strings.ToLower(host)
	bracketed := strings.HasPrefix(l, "[")
	l = strings.TrimPrefix(l, "[")
	for _, a := range allowed {
		rest, ok := strings.CutPrefix(l, a)
		if !ok {
			continue
		}
		if bracketed {
			rest, ok = strings.CutPrefix(rest, "]")
			if !ok {
				continue
			}
		}
		rest = strings.TrimPrefix(rest, ".")
		if rest == "" || strings.HasPrefix(rest, ":") && !strings.Contains(rest[1:], ":") {
			return true
		}
	}
	return false
}
