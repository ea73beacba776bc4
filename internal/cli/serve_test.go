package cli

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"testing"
	"time"
)

// A server shut down by its context lets the request in flight finish,
// then ServeHTTP returns without an error.
func TestServeHTTPDrainsInFlightRequests(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{})
	server := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		close(started)
		time.Sleep(200 * time.Millisecond)
		_, _ = io.WriteString(w, "done")
	})}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	answer := make(chan string, 1)
	err = ServeHTTP(ctx, server, func() error { return server.Serve(ln) }, 5*time.Second,
		slog.New(slog.NewTextHandler(io.Discard, nil)), func() {
			go func() {
				resp, err := http.Get("http://" + ln.Addr().String())
				if err != nil {
					answer <- err.Error()
					return
				}
				defer resp.Body.Close()
				body, _ := io.ReadAll(resp.Body)
				answer <- string(body)
			}()
			go func() { <-started; cancel() }()
		})
	if err != nil {
		t.Fatalf("ServeHTTP: %v", err)
	}
	if got := <-answer; got != "done" {
		t.Fatalf("the request in flight got %q, want it to finish", got)
	}
}
