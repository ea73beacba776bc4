package edge

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/edgeflow/edgeflow/internal/publish/catalog"
)

// The fast path (fastserve.go) answers hot file requests itself; these
// tests hold it to net/http's answers, byte for byte but Date and header
// order, and to net/http's handling of connections.

// netHTTPOnly serves s through net/http alone, as the edge did before its
// fast path: the answers the fast path must give.
func netHTTPOnly(t *testing.T, s *Server) *httptest.Server {
	t.Helper()
	ts := serveAsDeployed(http.HandlerFunc(s.ServeHTTP), nil)
	t.Cleanup(ts.Close)
	return ts
}

func fastListenerOf(t *testing.T, ts *httptest.Server) *FastListener {
	t.Helper()
	l, ok := ts.Listener.(*FastListener)
	if !ok {
		t.Fatalf("the test server listens on a %T, not the edge's FastListener", ts.Listener)
	}
	return l
}

// rawResponse is one answer read off a raw connection.
type rawResponse struct {
	status int
	header http.Header
	body   []byte
}

// exchange writes raw (one or more requests) on conn at once and reads
// one answer per method in methods.
func exchange(t *testing.T, conn net.Conn, br *bufio.Reader, raw string, methods ...string) []rawResponse {
	t.Helper()
	if _, err := io.WriteString(conn, raw); err != nil {
		t.Fatalf("write %q: %v", raw, err)
	}
	var out []rawResponse
	for _, m := range methods {
		_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
		resp, err := http.ReadResponse(br, &http.Request{Method: m})
		if err != nil {
			t.Fatalf("read the answer to %s (of %q): %v", m, raw, err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatalf("read the body of the answer to %s (of %q): %v", m, raw, err)
		}
		out = append(out, rawResponse{resp.StatusCode, resp.Header, body})
	}
	return out
}

// exchangeOnce sends raw on a connection of its own.
func exchangeOnce(t *testing.T, addr, raw string, methods ...string) []rawResponse {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	return exchange(t, conn, bufio.NewReader(conn), raw, methods...)
}

// sameAnswer reports how got differs from want, Date aside.
func sameAnswer(got, want rawResponse) string {
	var diffs []string
	if got.status != want.status {
		diffs = append(diffs, "status "+http.StatusText(got.status)+", want "+http.StatusText(want.status))
	}
	keys := map[string]bool{}
	for k := range got.header {
		keys[k] = true
	}
	for k := range want.header {
		keys[k] = true
	}
	for k := range keys {
		if k != "Date" && !slices.Equal(got.header[k], want.header[k]) {
			diffs = append(diffs, k+": "+strings.Join(got.header[k], ",")+", want "+strings.Join(want.header[k], ","))
		}
	}
	if len(got.header["Date"]) != len(want.header["Date"]) {
		diffs = append(diffs, "Date: "+strings.Join(got.header["Date"], ","))
	}
	if !bytes.Equal(got.body, want.body) {
		diffs = append(diffs, "a different body")
	}
	slices.Sort(diffs)
	return strings.Join(diffs, "; ")
}

func fileRequest(method, path string, headers ...string) string {
	return method + " /ajax/libs/" + testLib + "/" + testVersion + "/" + path + " HTTP/1.1\r\nHost: edge.test\r\n" +
		strings.Join(append(headers, ""), "\r\n") + "\r\n"
}

// TestFastPathAnswersAsNetHTTPDoes: every answer the fast path gives is
// net/http's for the same request (headers as a set, Date aside), and the
// requests it does not answer get net/http's on its connection.
func TestFastPathAnswersAsNetHTTPDoes(t *testing.T) {
	s, fast, _ := newTestEdge(t, nil)
	plain := netHTTPOnly(t, s)
	l := fastListenerOf(t, fast)
	info := "data/info.json"
	identity := exchangeOnce(t, plain.Listener.Addr().String(), fileRequest("GET", info), "GET")[0]
	gzipTag := exchangeOnce(t, plain.Listener.Addr().String(), fileRequest("GET", info, "Accept-Encoding: gzip"), "GET")[0].header.Get("ETag")
	lastModified := identity.header.Get("Last-Modified")
	if identity.status != 200 || lastModified == "" || gzipTag == "" {
		t.Fatalf("warming: %d, Last-Modified %q, the gzip ETag %q", identity.status, lastModified, gzipTag)
	}
	for _, c := range []struct {
		name, raw, method string
		fast              bool
	}{
		{"identity", fileRequest("GET", info), "GET", true},
		{"gzip", fileRequest("GET", info, "Accept-Encoding: gzip, deflate"), "GET", true},
		{"br", fileRequest("GET", info, "Accept-Encoding: gzip, deflate, br, zstd"), "GET", true},
		{"br preferred by q", fileRequest("GET", "testlib.js", "Accept-Encoding: gzip;q=0.5, br;q=0.9"), "GET", true},
		{"a small file", fileRequest("GET", "testlib.min.js", "accept-encoding: br"), "GET", true},
		{"a png (no compressed twins)", fileRequest("GET", "image.png", "Accept-Encoding: br"), "GET", true},
		{"HEAD", fileRequest("HEAD", info), "HEAD", true},
		{"HEAD gzip", fileRequest("HEAD", info, "Accept-Encoding: gzip"), "HEAD", true},
		{"If-None-Match", fileRequest("GET", info, "Accept-Encoding: gzip", "If-None-Match: W/"+gzipTag), "GET", true},
		{"If-None-Match of another encoding", fileRequest("GET", info, "If-None-Match: "+gzipTag), "GET", true},
		{"If-Modified-Since", fileRequest("GET", info, "If-Modified-Since: "+lastModified), "GET", true},
		{"If-Modified-Since earlier", fileRequest("GET", info, "If-Modified-Since: Mon, 01 Jan 2001 00:00:00 GMT"), "GET", true},
		{"Connection: close", fileRequest("GET", info, "Connection: close"), "GET", true},
		{"Connection: keep-alive", fileRequest("GET", info, "Connection: keep-alive", "X-Other:  spaced  "), "GET", true},
		{"a range", fileRequest("GET", info, "Range: bytes=3-9"), "GET", false},
		{"a file not published", fileRequest("GET", "nope.js"), "GET", false},
		{"a library not published", "GET /ajax/libs/nolib/1.0.0/a.js HTTP/1.1\r\nHost: h\r\n\r\n", "GET", false},
		{"a version range", "GET /ajax/libs/testlib/2/data/info.json HTTP/1.1\r\nHost: h\r\n\r\n", "GET", false},
		{"a query", "GET /ajax/libs/testlib/2.1.0/testlib.js?v=1 HTTP/1.1\r\nHost: h\r\n\r\n", "GET", false},
		{"HTTP/1.0", "GET /ajax/libs/testlib/2.1.0/testlib.js HTTP/1.0\r\nHost: h\r\n\r\n", "GET", false},
		{"a dot segment", "GET /ajax/libs/testlib/2.1.0/../2.1.0/testlib.js HTTP/1.1\r\nHost: h\r\n\r\n", "GET", false},
		{"two Hosts", "GET /ajax/libs/testlib/2.1.0/testlib.js HTTP/1.1\r\nHost: h\r\nHost: i\r\n\r\n", "GET", false},
		{"no Host", "GET /ajax/libs/testlib/2.1.0/testlib.js HTTP/1.1\r\nAccept: */*\r\n\r\n", "GET", false},
		{"a NUL in a header", "GET /ajax/libs/testlib/2.1.0/testlib.js HTTP/1.1\r\nHost: h\r\nX-A: a\x00b\r\n\r\n", "GET", false},
		{"a bad header name", "GET /ajax/libs/testlib/2.1.0/testlib.js HTTP/1.1\r\nHost: h\r\nX A: b\r\n\r\n", "GET", false},
	} {
		exchangeOnce(t, plain.Listener.Addr().String(), c.raw, c.method) // the caches warm
		want := exchangeOnce(t, plain.Listener.Addr().String(), c.raw, c.method)[0]
		before := l.answered.Load()
		got := exchangeOnce(t, fast.Listener.Addr().String(), c.raw, c.method)[0]
		if diff := sameAnswer(got, want); diff != "" {
			t.Errorf("%s: the edge answered %d, net/http %d: %s", c.name, got.status, want.status, diff)
		}
		if answered := l.answered.Load() - before; answered != map[bool]int64{true: 1, false: 0}[c.fast] {
			t.Errorf("%s: the fast path answered %d requests, want %v", c.name, answered, c.fast)
		}
	}
	if p := l.panics.Load(); p != 0 {
		t.Errorf("the fast path panicked %d times", p)
	}
}

// TestFastPathAnswersPipelinedRequestsInOrder: requests sent together get
// their answers in order, each its own.
func TestFastPathAnswersPipelinedRequestsInOrder(t *testing.T) {
	s, fast, _ := newTestEdge(t, nil)
	plain := netHTTPOnly(t, s)
	l := fastListenerOf(t, fast)
	reqs := []string{fileRequest("GET", "testlib.js", "Accept-Encoding: br"), fileRequest("HEAD", "testlib.css"),
		fileRequest("GET", "data/info.json"), fileRequest("GET", "testlib.css", "Accept-Encoding: gzip"), fileRequest("GET", "image.png")}
	methods := []string{"GET", "HEAD", "GET", "GET", "GET"}
	var want []rawResponse
	for i, r := range reqs { // one by one through net/http, once to warm the caches
		exchangeOnce(t, plain.Listener.Addr().String(), r, methods[i])
		want = append(want, exchangeOnce(t, plain.Listener.Addr().String(), r, methods[i])[0])
	}
	before := l.answered.Load()
	got := exchangeOnce(t, fast.Listener.Addr().String(), strings.Join(reqs, ""), methods...)
	for i := range got {
		if diff := sameAnswer(got[i], want[i]); diff != "" {
			t.Errorf("answer %d (%s): %s", i, strings.SplitN(reqs[i], "\r\n", 2)[0], diff)
		}
	}
	if n := l.answered.Load() - before; n != int64(len(reqs)) {
		t.Errorf("the fast path answered %d of the %d pipelined requests", n, len(reqs))
	}
}

// TestFastPathHandsTheConnectionOverMidway: a request the fast path does
// not answer, after ones it did, is net/http's with all that follows on
// that connection, sent one by one or together.
func TestFastPathHandsTheConnectionOverMidway(t *testing.T) {
	s, fast, _ := newTestEdge(t, nil)
	plain := netHTTPOnly(t, s)
	l := fastListenerOf(t, fast)
	get := fileRequest("GET", "testlib.js", "Accept-Encoding: gzip")
	post := "POST /libraries HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nhello"
	exchangeOnce(t, plain.Listener.Addr().String(), get, "GET") // the caches warm
	want := exchangeOnce(t, plain.Listener.Addr().String(), get+post+get, "GET", "POST", "GET")
	if want[0].status != 200 || want[1].status != http.StatusMethodNotAllowed || want[2].status != 200 {
		t.Fatalf("net/http answered %d, %d, %d", want[0].status, want[1].status, want[2].status)
	}
	for _, together := range []bool{false, true} {
		conn, err := net.Dial("tcp", fast.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		br := bufio.NewReader(conn)
		before := l.answered.Load()
		var got []rawResponse
		if together {
			got = exchange(t, conn, br, get+post+get, "GET", "POST", "GET")
		} else {
			got = append(got, exchange(t, conn, br, get, "GET")...)
			got = append(got, exchange(t, conn, br, post, "POST")...)
			got = append(got, exchange(t, conn, br, get, "GET")...)
		}
		conn.Close()
		for i := range got {
			if diff := sameAnswer(got[i], want[i]); diff != "" {
				t.Errorf("together %v, answer %d: %s", together, i, diff)
			}
		}
		if n := l.answered.Load() - before; n != 1 {
			t.Errorf("together %v: the fast path answered %d requests, want the first only", together, n)
		}
	}
}

// TestFastPathReleasesAClientThatStopsReading: a client that stops reading
// a large cached file is let go after WriteIdle, as net/http's writes are.
func TestFastPathReleasesAClientThatStopsReading(t *testing.T) {
	const lib = "fastslowlib"
	data := make([]byte, 24<<20) // more than the socket buffers hold
	rng := rand.New(rand.NewPCG(3, 5))
	for i := range data {
		data[i] = byte(rng.UintN(256))
	}
	if err := publishVersion(context.Background(), testEnv.store, testEnv.buckets, catalog.Package{Name: lib, Filename: "big.bin"}, "1.0.0",
		[]fixtureFile{{Path: "big.bin", Data: data, NoCompression: true}}, time.Now()); err != nil {
		t.Fatal(err)
	}
	_, ts, _ := newTestEdge(t, func(c *Config) {
		c.WriteIdle = 200 * time.Millisecond
		c.MaxCachedFile = 32 << 20
	})
	l := fastListenerOf(t, ts)
	url := ts.URL + "/ajax/libs/" + lib + "/1.0.0/big.bin"
	if resp := get(t, url, nil); resp.StatusCode != 200 || !bytes.Equal(resp.body, data) {
		t.Fatalf("warming: %d, %d bytes", resp.StatusCode, len(resp.body))
	}
	conn, err := net.Dial("tcp", ts.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.(*net.TCPConn).SetReadBuffer(4 << 10)
	before := l.answered.Load()
	if _, err := io.WriteString(conn, "GET /ajax/libs/"+lib+"/1.0.0/big.bin HTTP/1.1\r\nHost: h\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	// The client reads nothing: the answer stops mid-body and the
	// connection is closed once WriteIdle passes without progress.
	waitFor(t, func() bool {
		return l.answered.Load() == before+1 && l.fastConns() == 0
	})
}

// TestShutdownClosesIdleFastPathConnections: the http.Server's Shutdown
// closes the connections the fast path owns once their answers are sent,
// and Serve returns as before.
func TestShutdownClosesIdleFastPathConnections(t *testing.T) {
	s, _, _ := newTestEdge(t, nil)
	hs := &http.Server{Handler: s, ConnContext: ConnContext, IdleTimeout: time.Minute, ReadHeaderTimeout: 10 * time.Second}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	fl := s.FastListener(ln, hs)
	served := make(chan error, 1)
	go func() { served <- hs.Serve(fl) }()
	addr := ln.Addr().String()
	exchangeOnce(t, addr, fileRequest("GET", "testlib.js"), "GET") // warm
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	br := bufio.NewReader(conn)
	before := fl.answered.Load()
	if got := exchange(t, conn, br, fileRequest("GET", "testlib.js"), "GET")[0]; got.status != 200 || fl.answered.Load() != before+1 {
		t.Fatalf("%d; the fast path answered %d", got.status, fl.answered.Load()-before)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := hs.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		t.Fatalf("Serve returned %v, want http.ErrServerClosed", err)
	}
	fl.Drain(30 * time.Second)
	if n := fl.fastConns(); n != 0 {
		t.Errorf("%d fast path connections left after Shutdown and Drain", n)
	}
	_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	if n, err := br.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Errorf("the idle connection after Shutdown: read %d bytes, %v; want it closed (EOF)", n, err)
	}
}

// TestFastPathKeepsTheReadTimeouts: a client that sends half a request
// head, or sends nothing after an answer, is let go after the server's
// ReadHeaderTimeout or IdleTimeout, as net/http lets it go.
func TestFastPathKeepsTheReadTimeouts(t *testing.T) {
	s, _, _ := newTestEdge(t, nil)
	hs := &http.Server{Handler: s, ConnContext: ConnContext, ReadHeaderTimeout: 300 * time.Millisecond, IdleTimeout: 300 * time.Millisecond}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	fl := s.FastListener(ln, hs)
	go func() { _ = hs.Serve(fl) }()
	defer hs.Close()
	addr := ln.Addr().String()
	exchangeOnce(t, addr, fileRequest("GET", "testlib.js"), "GET") // warm
	closedBy := func(conn net.Conn, br *bufio.Reader) error {
		_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
		_, err := br.ReadByte()
		return err
	}
	for _, c := range []struct {
		name       string
		raw        string // sent after one answered request
		answerLast bool
	}{
		{"half a head, first", fileRequest("GET", "testlib.js")[:30], false},
		{"half a head, after an answer", fileRequest("GET", "testlib.js")[:30], true},
		{"nothing after an answer", "", true},
	} {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		br := bufio.NewReader(conn)
		before := fl.answered.Load()
		if c.answerLast {
			if got := exchange(t, conn, br, fileRequest("GET", "testlib.js"), "GET")[0]; got.status != 200 || fl.answered.Load() != before+1 {
				t.Fatalf("%s: %d, the fast path answered %d", c.name, got.status, fl.answered.Load()-before)
			}
		}
		if _, err := io.WriteString(conn, c.raw); err != nil {
			t.Fatal(err)
		}
		if err := closedBy(conn, br); !errors.Is(err, io.EOF) {
			t.Errorf("%s: %v, want the edge to close the connection", c.name, err)
		}
		conn.Close()
	}
	waitFor(t, func() bool { return fl.fastConns() == 0 })
}

// TestFastPathStandsAsideForAWrappedHandler: an http.Server whose handler
// wraps the edge (tracing, a middleware) gets every request.
func TestFastPathStandsAsideForAWrappedHandler(t *testing.T) {
	s, _, _ := newTestEdge(t, nil)
	ts := httptest.NewUnstartedServer(http.HandlerFunc(s.ServeHTTP))
	ts.Listener = s.FastListener(ts.Listener, ts.Config)
	ts.Config.ConnContext = ConnContext
	ts.Start()
	defer ts.Close()
	for range 2 {
		if got := exchangeOnce(t, ts.Listener.Addr().String(), fileRequest("GET", "testlib.js"), "GET")[0]; got.status != 200 || string(got.body) != testLibJS {
			t.Fatalf("%d %q", got.status, got.body)
		}
	}
	if n := fastListenerOf(t, ts).answered.Load(); n != 0 {
		t.Errorf("the fast path answered %d requests for a wrapped handler", n)
	}
}
