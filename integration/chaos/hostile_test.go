//go:build chaos

package chaos

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/edgeflow/edgeflow/integration/e2echeck"
)

// hostileHTTP sends the edge process what an attacker would — traversal,
// an oversized header block, a request that never finishes its headers, a
// client that never reads its answer — and checks that each gets a clear
// answer or a closed connection while a well-behaved client is served
// throughout. It returns the requests made and the cases that held.
func hostileHTTP(t *testing.T, edge, name, version, file string) (requests, held, failed int64) {
	t.Helper()
	check := func(ok bool, format string, args ...any) {
		requests++
		if ok {
			held++
			return
		}
		failed++
		t.Errorf("hostile HTTP: "+format, args...)
	}
	good := func() bool {
		body, err := e2echeck.FetchFile(edge, name, version, file, "identity")
		return err == nil && len(body) > 0
	}

	// Traversal, raw on the wire so no client cleans the path first.
	for _, path := range []string{"/ajax/libs/" + name + "/" + version + "/../../../../etc/passwd",
		"/ajax/libs/" + name + "/" + version + "/%2e%2e/%2e%2e/%2e%2e/etc/passwd", "/ajax/libs/..%2f..%2f..%2fetc%2fpasswd",
		"/ajax/libs/" + name + "/" + version + "/..%5c..%5cwindows", "/libraries/..%2fpackages"} {
		status, body := rawRequest(t, edge, "GET "+path+" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
		check(status != http.StatusOK && !strings.Contains(body, "root:"), "%s: %d %.80q", path, status, body)
	}

	// A header block past the edge's 64 KiB bound: 431, no crash.
	big := "GET /ajax/libs/" + name + "/" + version + "/" + file + " HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", 200<<10) + "\r\nConnection: close\r\n\r\n"
	status, _ := rawRequest(t, edge, big)
	// 431, or the connection closed before the client finished sending:
	// either way the edge serves on.
	check((status == http.StatusRequestHeaderFieldsTooLarge || status == 0) && good(), "a 200 KiB header: %d, want 431", status)

	// A body where none belongs is read or refused, never served as a file.
	resp, err := http.Post(edge+"/ajax/libs/"+name+"/"+version+"/"+file, "application/octet-stream", strings.NewReader(strings.Repeat("x", 8<<20)))
	if err == nil {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		check(resp.StatusCode == http.StatusMethodNotAllowed || resp.StatusCode == http.StatusRequestEntityTooLarge, "an 8 MiB POST: %d", resp.StatusCode)
	} else {
		check(true, "")
	}

	// A slow client that never finishes its headers is cut off by the
	// server (ReadHeaderTimeout), while others are served meanwhile.
	slow, err := net.Dial("tcp", strings.TrimPrefix(edge, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	fmt.Fprintf(slow, "GET /ajax/libs/%s/%s/%s HTTP/1.1\r\nHost: x\r\nX-Slow: ", name, version, file)
	check(good(), "a well-behaved client while a slow one holds a connection")
	_ = slow.SetReadDeadline(time.Now().Add(40 * time.Second))
	_, err = slow.Read(make([]byte, 1))
	check(err != nil && !isTimeout(err), "the slow client's connection: %v, want it closed by the edge", err)

	// A client that asks and never reads: the edge's write deadline frees
	// the connection; others are served meanwhile.
	lazy, err := net.Dial("tcp", strings.TrimPrefix(edge, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer lazy.Close()
	for range 50 {
		fmt.Fprintf(lazy, "GET /ajax/libs/%s/%s/%s HTTP/1.1\r\nHost: x\r\n\r\n", name, version, file)
	}
	check(good(), "a well-behaved client while a lazy one does not read")
	return requests, held, failed
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

// rawRequest writes req as is and returns the status and body.
func rawRequest(t *testing.T, edge, req string) (int, string) {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(edge, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
	// Written alongside the read: the server may answer (and stop reading)
	// before the request is all sent.
	go func() { _, _ = io.WriteString(conn, req) }()
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	return resp.StatusCode, string(body)
}
