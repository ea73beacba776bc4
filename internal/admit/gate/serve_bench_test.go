package gate

import (
	"bytes"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/edgeflow/edgeflow/internal/admit"
)

// memoryOrigin answers every request in memory, so that a benchmark of
// ServeHTTP counts what the gate and its reverse proxy allocate, not what
// a network round trip does.
type memoryOrigin struct{ page []byte }

func (o memoryOrigin) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		_ = r.Body.Close()
	}
	return &http.Response{StatusCode: http.StatusOK, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:        http.Header{"Content-Type": {"text/html; charset=utf-8"}},
		Body:          io.NopCloser(bytes.NewReader(o.page)),
		ContentLength: int64(len(o.page)), Request: r}, nil
}

// discardWriter is a ResponseWriter kept across requests: only its header
// map is cleared, so the benchmark allocates nothing for it.
type discardWriter struct {
	h      http.Header
	status int
}

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (w *discardWriter) WriteHeader(status int)      { w.status = status }

// BenchmarkServeHTTP is one request's cost in the gate itself, by case:
// an admitted visitor with a fresh cookie (in a room without and with
// origin commands), one whose cookie is past the renewal interval (the
// same renewal sent again), a new visitor admitted, and a new visitor
// queued. The clock stands still, so every request takes the same path.
func BenchmarkServeHTTP(b *testing.B) {
	now := t0.Add(5 * time.Second)
	gateID := admit.Gate{DataCenter: "ams", ID: "ams-bench"}
	reg := NewRegistry(gateID)
	rooms := []admit.Settings{
		{Name: "open", TotalActiveUsers: admit.MaxLimit, NewUsersPerMinute: admit.MaxLimit},
		{Name: "revocable", Path: "/revocable/", TotalActiveUsers: admit.MaxLimit, NewUsersPerMinute: admit.MaxLimit,
			EnabledOriginCommands: []string{"revoke"}},
		{Name: "queue", Path: "/queue/", TotalActiveUsers: admit.MaxLimit, NewUsersPerMinute: admit.MaxLimit, QueueAll: true},
	}
	for _, s := range rooms {
		room, err := admit.NewRoom(s, 60, t0)
		if err != nil {
			b.Fatal(err)
		}
		if err := reg.Update(room.Snapshot, nil, now); err != nil {
			b.Fatal(err)
		}
	}
	keys := testRing(b, testKey(b, "bench"))
	g, err := New(Config{Origin: &url.URL{Scheme: "http", Host: "origin.example"}, Gate: gateID, Keys: keys,
		Counters: MemoryCounters(), Registry: reg, Logger: quietLogger(), Now: func() time.Time { return now },
		Transport: memoryOrigin{page: []byte("<!doctype html><p>" + strings.Repeat("hello, visitor. ", 128) + "</p>\n")}})
	if err != nil {
		b.Fatal(err)
	}
	g.renderClock = func() time.Time { return now }

	w := &discardWriter{h: http.Header{}}
	serve := func(target, cookie string) *discardWriter {
		r, err := http.NewRequest(http.MethodGet, "http://shop.example"+target, nil)
		if err != nil {
			b.Fatal(err)
		}
		if cookie != "" {
			r.Header.Set("Cookie", cookie)
		}
		clear(w.h)
		w.status = 0
		g.ServeHTTP(w, r)
		return w
	}
	// admitted is a visitor's Cookie header for the room at target;
	// checkedIn, if set, moves its last check-in back by that much.
	admitted := func(target, room string, checkedIn time.Duration) string {
		set := serve(target, "").h["Set-Cookie"]
		if len(set) != 1 {
			b.Fatalf("%s: Set-Cookie %q, want one cookie", target, set)
		}
		value, _, _ := strings.Cut(strings.TrimPrefix(set[0], CookieName+"="), ";")
		if checkedIn > 0 {
			c, _, err := g.codec.Open(value, room, now)
			if err != nil {
				b.Fatal(err)
			}
			c.LastCheckInTime = now.Add(-checkedIn).UnixMilli()
			c.AcceptedAt = min(c.AcceptedAt, c.LastCheckInTime)
			if value, err = g.codec.Seal(c); err != nil {
				b.Fatal(err)
			}
		}
		return CookieName + "=" + value
	}

	cases := []struct {
		name, target, cookie string
		status               int
	}{
		{"admitted", "/page", admitted("/page", "open", 0), http.StatusOK},
		{"admitted-revocable", "/revocable/page", admitted("/revocable/page", "revocable", 0), http.StatusOK},
		{"renewal", "/page", admitted("/page", "open", 12*time.Second), http.StatusOK},
		{"new-visitor", "/page", "", http.StatusOK},
		{"queued", "/queue/page", "", admit.DefaultQueueingStatusCode},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			tmpl, err := http.NewRequest(http.MethodGet, "http://shop.example"+c.target, nil)
			if err != nil {
				b.Fatal(err)
			}
			if c.cookie != "" {
				tmpl.Header.Set("Cookie", c.cookie)
			}
			b.ReportAllocs()
			for b.Loop() {
				r, u := *tmpl, *tmpl.URL // ServeHTTP sets the request's path
				r.URL = &u
				clear(w.h)
				w.status = 0
				g.ServeHTTP(w, &r)
				if w.status != c.status && !(w.status == 0 && c.status == http.StatusOK) {
					b.Fatalf("status %d, want %d", w.status, c.status)
				}
			}
		})
	}
}
