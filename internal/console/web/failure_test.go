package web

import (
	"html"
	"log/slog"
	"net"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/edgeflow/edgeflow/internal/admit/roomclient"
	"github.com/edgeflow/edgeflow/internal/testenv/syncbuf"
)

var requestID = regexp.MustCompile(`\(request ([0-9a-f]+);`)

func TestPagesNameAFailureButNotItsCause(t *testing.T) {
	// A Temporal frontend whose listener hangs up on every connection.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	tc, err := client.NewLazyClient(client.Options{HostPort: ln.Addr().String()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tc.Close)
	var logs syncbuf.Buffer
	now := time.Now()
	o := testPages(&now).o
	o.Rooms, o.Log, o.Timeout = roomclient.Client{C: tc}, slog.New(slog.NewTextHandler(&logs, nil)), 2*time.Second
	h := New(o).Handler()

	// A read-only viewer opens the Manage table.
	rec := do(t, h, "GET", "/", nil, signIn(t, h, "ro-"+secret))
	page := html.UnescapeString(rec.Body.String())
	m := requestID.FindStringSubmatch(page)
	if rec.Code < 500 || !strings.Contains(page, "rooms: Temporal: unreachable (request ") || m == nil {
		t.Fatalf("got %d, want a 5xx and rooms: Temporal: unreachable with a request id:\n%s", rec.Code, page)
	}
	for _, cause := range []string{ln.Addr().String(), "rpc error", "failed reaching server", "tcp"} {
		if strings.Contains(page, cause) {
			t.Errorf("the page holds the cause %q", cause)
		}
	}
	if !strings.Contains(logs.String(), "request_id="+m[1]) || !strings.Contains(logs.String(), "err=") {
		t.Errorf("the log has no line of request %s with its cause:\n%s", m[1], logs.String())
	}
}
