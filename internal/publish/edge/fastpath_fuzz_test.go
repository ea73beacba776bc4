package edge

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// fastPathSeeds are requests, well formed and not, alone and together.
func fastPathSeeds() []string {
	get := fileRequest("GET", "testlib.js", "Accept-Encoding: br")
	return []string{
		get,
		fileRequest("HEAD", "data/info.json", "Accept-Encoding: gzip", "If-None-Match: *"),
		fileRequest("GET", "data/info.json", "If-Modified-Since: Mon, 06 May 2024 09:08:09 GMT"),
		get + fileRequest("GET", "testlib.css") + fileRequest("HEAD", "image.png"),
		get + "POST /libraries HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\n\r\nhi" + get,
		get + fileRequest("GET", "testlib.css", "Connection: close") + get,
		strings.ReplaceAll(get, "\r\n", "\n"),
		strings.Replace(get, "\r\n", "\r\n \r\n", 1),
		strings.Replace(get, "Host: edge.test", "Host: a\r\nHost: b", 1),
		strings.Replace(get, "Host: edge.test", "Host: a\x00b", 1),
		strings.Replace(get, "Host: edge.test", "Host:a b", 1),
		strings.Replace(get, "Accept-Encoding", "Accept Encoding", 1),
		strings.Replace(get, "Accept-Encoding: br", "X-Big: "+strings.Repeat("x", 5000), 1),
		strings.Replace(get, "HTTP/1.1", "HTTP/1.0", 1),
		strings.Replace(get, "GET ", "get ", 1),
		strings.Replace(get, "GET /", "GET http://edge.test/", 1),
		strings.Replace(get, "testlib.js", "testlib.js?x=1", 1),
		strings.Replace(get, "testlib.js", "%74estlib.js", 1),
		fileRequest("GET", "testlib.js", "Range: bytes=0-3"),
		fileRequest("GET", "testlib.js", "Transfer-Encoding: chunked") + "0\r\n\r\n",
		fileRequest("GET", "testlib.js", "Expect: 100-continue"),
		"\r\n" + get,
		get[:20],
		"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
		"",
	}
}

// FuzzFastRequestParse: whatever request the fast path accepts, net/http
// reads the same: method, path, protocol, Host and the headers that
// choose the answer, and no body. (The path checks come after, in
// answer, as in ServeHTTP.)
func FuzzFastRequestParse(f *testing.F) {
	for _, s := range fastPathSeeds() {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, head []byte) {
		req, ok := parseFastRequest(head)
		if !ok {
			return
		}
		r, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(head)))
		if err != nil {
			t.Fatalf("the fast path accepted %.300q, which net/http refuses: %v", head, err)
		}
		method := map[bool]string{false: "GET", true: "HEAD"}[req.head]
		switch {
		case r.Method != method, r.RequestURI != string(req.path), r.URL.Path != string(req.path), r.URL.RawQuery != "",
			r.ProtoMajor != 1 || r.ProtoMinor != 1, r.ContentLength != 0, len(r.TransferEncoding) != 0, r.Close != req.close,
			r.Host == "":
			t.Fatalf("%.300q: the fast path read %s %q (close %v), net/http %s %q %s (close %v) Host %q", head, method, req.path, req.close, r.Method, r.RequestURI, r.Proto, r.Close, r.Host)
		}
		for name, value := range map[string][]byte{"Accept-Encoding": req.acceptEncoding, "If-None-Match": req.ifNoneMatch, "If-Modified-Since": req.ifModifiedSince} {
			if r.Header.Get(name) != string(value) {
				t.Fatalf("%q: the fast path read %s %q, net/http %q", head, name, value, r.Header.Get(name))
			}
		}
		for _, name := range []string{"Range", "Expect", "Upgrade"} {
			if _, has := r.Header[name]; has {
				t.Fatalf("%q: the fast path accepted a request with %s", head, name)
			}
		}
	})
}

// fuzzEdge is the edge FuzzFastPathConnection sends to, shared by its inputs.
var fuzzEdge struct {
	once sync.Once
	ts   *httptest.Server
	l    *FastListener
}

// FuzzFastPathConnection: arbitrary bytes on a connection never make the
// fast path panic, and what it answers itself is a well-formed 200 or 304
// to a request net/http reads as a GET or HEAD of a file, before anything
// net/http answers on that connection.
func FuzzFastPathConnection(f *testing.F) {
	for _, s := range fastPathSeeds() {
		f.Add([]byte(s))
	}
	fuzzEdge.once.Do(func() {
		s := New(Config{Primary: testEnv.store, Buckets: testEnv.buckets, CacheBytes: 64 << 20})
		fuzzEdge.ts = serveAsDeployed(s, nil)
		fuzzEdge.l = fuzzEdge.ts.Listener.(*FastListener)
		for _, p := range []string{"testlib.js", "testlib.css", "data/info.json", "image.png"} {
			for _, ae := range []string{"", "gzip", "br"} {
				get(f, fileURL(fuzzEdge.ts.URL, testVersion, p), map[string]string{"Accept-Encoding": ae})
			}
		}
	})
	f.Fuzz(func(t *testing.T, in []byte) {
		l := fuzzEdge.l
		conn, err := net.Dial("tcp", fuzzEdge.ts.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		before := l.answered.Load()
		_ = conn.SetDeadline(time.Now().Add(20 * time.Second))
		if _, err := conn.Write(in); err != nil {
			t.Fatalf("write: %v", err)
		}
		_ = conn.(*net.TCPConn).CloseWrite()
		out, err := io.ReadAll(conn) // until the edge closes the connection
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			t.Fatalf("%q: the connection was still open after 20s: %v", in, err)
		}
		answered := l.answered.Load() - before
		if p := l.panics.Load(); p != 0 {
			t.Fatalf("the fast path panicked (%d so far) on %q", p, in)
		}
		reqs := bufio.NewReader(bytes.NewReader(in))
		resps := bufio.NewReader(bytes.NewReader(out))
		for i := range answered {
			r, err := http.ReadRequest(reqs)
			if err != nil || r.Method != "GET" && r.Method != "HEAD" || !strings.HasPrefix(r.URL.Path, fileRoutePrefix) {
				t.Fatalf("%q: the fast path answered request %d, which net/http reads as %v (%v)", in, i, r, err)
			}
			_, _ = io.Copy(io.Discard, r.Body)
			resp, err := http.ReadResponse(resps, r)
			if err != nil {
				t.Fatalf("%q: answer %d: %v (all: %q)", in, i, err, out)
			}
			body, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatalf("%q: answer %d's body: %v", in, i, err)
			}
			if resp.StatusCode != 200 && resp.StatusCode != 304 || resp.Header.Get("Date") == "" || resp.Header.Get("Etag") == "" {
				t.Fatalf("%q: answer %d: %d, headers %v", in, i, resp.StatusCode, resp.Header)
			}
			if n, _ := strconv.Atoi(resp.Header.Get("Content-Length")); resp.StatusCode == 200 && r.Method == "GET" && n != len(body) {
				t.Fatalf("%q: answer %d: Content-Length %d, body %d bytes", in, i, n, len(body))
			}
		}
	})
}
