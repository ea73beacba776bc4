package edge

import (
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

// headerOnlyWriter is a ResponseWriter that keeps nothing but its headers
// and takes write deadlines, as net/http's does.
type headerOnlyWriter struct{ h http.Header }

func (w *headerOnlyWriter) Header() http.Header              { return w.h }
func (w *headerOnlyWriter) Write(p []byte) (int, error)      { return len(p), nil }
func (w *headerOnlyWriter) WriteHeader(int)                  {}
func (w *headerOnlyWriter) SetWriteDeadline(time.Time) error { return nil }

// A request for a hot file (its package document, headers and body
// cached) allocates little in the edge: the header map net/http hands every
// request (made here) and its growth to 13 headers (4); the headers
// themselves are built once per file, not per request (the code before
// servedFile made 31 to 33 in all), and a file request does not go through
// the mux's routing (3 more before).
func TestHotFileAllocations(t *testing.T) {
	s, ts, _ := newTestEdge(t, nil)
	for _, ae := range []string{"", "br", "gzip"} {
		url := fileURL(ts.URL, testVersion, "data/info.json")
		if resp := get(t, url, map[string]string{"Accept-Encoding": ae}); resp.StatusCode != 200 {
			t.Fatalf("warming: %d", resp.StatusCode)
		}
		req, err := http.NewRequest(http.MethodGet, url, nil)
		if err != nil {
			t.Fatal(err)
		}
		if ae != "" {
			req.Header.Set("Accept-Encoding", ae)
		}
		w := &headerOnlyWriter{}
		allocs := testing.AllocsPerRun(200, func() {
			w.h = make(http.Header)
			s.ServeHTTP(w, req)
		})
		t.Logf("Accept-Encoding %q: %.1f allocations", ae, allocs)
		if allocs > maxHotFileAllocs {
			t.Errorf("Accept-Encoding %q: %.1f allocations per request, want at most %d", ae, allocs, maxHotFileAllocs)
		}
	}
}

// maxHotFileAllocs is 5 measured on Go 1.26, with a margin of one for the
// runtime's map.
const maxHotFileAllocs = 6

// A hot file request answered by the fast path allocates once: the path
// as a string, for the caches' lookups; net/http's request and header
// maps, context and response are not made.
func TestFastPathHotFileAllocations(t *testing.T) {
	s, ts, _ := newTestEdge(t, nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	go func() { _, _ = io.Copy(io.Discard, client) }()
	server := <-accepted
	if server == nil {
		t.Fatal("no connection accepted")
	}
	defer server.Close()
	fc := newFastConn(s.FastListener(ln, &http.Server{Handler: s}), &coalescingConn{TCPConn: server.(*net.TCPConn)})
	for _, ae := range []string{"", "br", "gzip"} {
		raw := fileRequest("GET", "data/info.json", "Accept-Encoding: "+ae)
		if resp := exchangeOnce(t, ts.Listener.Addr().String(), raw, "GET")[0]; resp.status != 200 { // warming
			t.Fatalf("warming: %d", resp.status)
		}
		req, ok := parseFastRequest([]byte(raw))
		if !ok {
			t.Fatalf("the fast path does not take %q", raw)
		}
		allocs := testing.AllocsPerRun(200, func() {
			if answered, err := fc.answer(&req, false); !answered || err != nil {
				t.Fatalf("not answered (%v)", err)
			}
		})
		t.Logf("Accept-Encoding %q: %.1f allocations", ae, allocs)
		if allocs > 1 {
			t.Errorf("Accept-Encoding %q: %.1f allocations per request, want at most 1", ae, allocs)
		}
	}
}
