package faultproxy

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// backend is a stand-in store that accepts everything and counts what
// reached it, with the Host header it saw.
func backend(t *testing.T) (endpoint string, reached *atomic.Int64, hosts chan string) {
	t.Helper()
	reached = &atomic.Int64{}
	hosts = make(chan string, 100)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached.Add(1)
		select {
		case hosts <- r.Host:
		default:
		}
		io.Copy(io.Discard, r.Body)
		io.WriteString(w, "ok")
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://"), reached, hosts
}

func do(t *testing.T, method, url string) (*http.Response, error) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader("body"))
	if err != nil {
		t.Fatal(err)
	}
	// A fresh connection per request: a reset must not poison the next one.
	req.Close = true
	return http.DefaultClient.Do(req)
}

func TestSlowDownNeverReachesTheStore(t *testing.T) {
	ep, reached, _ := backend(t)
	p := New(ep, Faults{SlowDown: 1}, 1)
	defer p.Close()
	resp, err := do(t, http.MethodPut, "http://"+p.Endpoint+"/bucket/key")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), "<Code>SlowDown</Code>") {
		t.Fatalf("got %d %s, want 503 SlowDown", resp.StatusCode, body)
	}
	if reached.Load() != 0 || len(p.Writes()) != 0 {
		t.Fatalf("a refused write reached the store (%d) or was counted (%v)", reached.Load(), p.Writes())
	}
	if c := p.Counts(); c.SlowDowns != 1 || c.Requests != 1 || c.Forwarded != 0 || c.Faults() != 1 {
		t.Fatalf("counts %+v", c)
	}
}

func TestResetDropsTheConnection(t *testing.T) {
	ep, reached, _ := backend(t)
	p := New(ep, Faults{Reset: 1}, 1)
	defer p.Close()
	_, err := do(t, http.MethodGet, "http://"+p.Endpoint+"/bucket/key")
	if err == nil {
		t.Fatal("a reset connection answered")
	}
	if !errors.Is(err, syscall.ECONNRESET) && !errors.Is(err, io.EOF) && !strings.Contains(err.Error(), "EOF") {
		t.Fatalf("error %v, want a reset or EOF", err)
	}
	if reached.Load() != 0 || p.Counts().Resets != 1 {
		t.Fatalf("reached %d, counts %+v", reached.Load(), p.Counts())
	}
}

func TestSpikeStillForwards(t *testing.T) {
	ep, reached, hosts := backend(t)
	p := New(ep, Faults{Spike: 1, SpikeDelay: time.Millisecond}, 1)
	defer p.Close()
	resp, err := do(t, http.MethodPut, "http://"+p.Endpoint+"/bucket/a/b%20c")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || reached.Load() != 1 || p.Counts().Spikes != 1 {
		t.Fatalf("status %d reached %d counts %+v", resp.StatusCode, reached.Load(), p.Counts())
	}
	if got := <-hosts; got != p.Endpoint {
		t.Errorf("the store saw Host %q, want the client's %q (signatures cover it)", got, p.Endpoint)
	}
	if w := p.Writes(); w["bucket/a/b c"] != 1 || len(w) != 1 {
		t.Errorf("writes %v, want bucket/a/b c once", w)
	}
}

func TestWritesCountsObjectsNotParts(t *testing.T) {
	ep, _, _ := backend(t)
	p := New(ep, Faults{}, 1)
	defer p.Close()
	for _, r := range []struct{ method, path string }{
		{http.MethodPut, "/bucket/k"},                           // a put
		{http.MethodPut, "/bucket/k"},                           // the same key again
		{http.MethodPut, "/bucket/big?partNumber=1&uploadId=u"}, // a part: not an object
		{http.MethodPost, "/bucket/big?uploadId=u"},             // completes the upload
		{http.MethodPost, "/bucket/big?uploads"},                // starts one: not a write
		{http.MethodPut, "/newbucket"},                          // creates a bucket
		{http.MethodGet, "/bucket/k"},
	} {
		resp, err := do(t, r.method, "http://"+p.Endpoint+r.path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	w := p.Writes()
	if w["bucket/k"] != 2 || w["bucket/big"] != 1 || len(w) != 2 {
		t.Fatalf("writes %v, want bucket/k twice and bucket/big once", w)
	}
}

func TestFractionsAndSeed(t *testing.T) {
	ep, _, _ := backend(t)
	f := Faults{SlowDown: 0.05, Reset: 0.01, Spike: 0.05, SpikeDelay: time.Microsecond}
	run := func() Counts {
		p := New(ep, f, 42)
		defer p.Close()
		for range 2000 {
			if resp, err := do(t, http.MethodGet, "http://"+p.Endpoint+"/bucket/k"); err == nil {
				resp.Body.Close()
			}
		}
		return p.Counts()
	}
	a, b := run(), run()
	if a != b {
		t.Fatalf("same seed, different faults: %+v and %+v", a, b)
	}
	// 2000 draws: each fraction lands well within a factor of two.
	if a.SlowDowns < 50 || a.SlowDowns > 200 || a.Resets < 5 || a.Resets > 50 || a.Spikes < 50 || a.Spikes > 200 {
		t.Fatalf("counts %+v far from 5%%, 1%%, 5%% of 2000", a)
	}
	if a.Forwarded != a.Requests-a.SlowDowns-a.Resets {
		t.Fatalf("forwarded %d of %d with %d refused", a.Forwarded, a.Requests, a.SlowDowns+a.Resets)
	}
}

func TestSetFaultsTurnsThemOff(t *testing.T) {
	ep, reached, _ := backend(t)
	p := New(ep, Faults{SlowDown: 1}, 1)
	defer p.Close()
	p.SetFaults(Faults{})
	resp, err := do(t, http.MethodGet, "http://"+p.Endpoint+"/bucket/k")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || reached.Load() != 1 {
		t.Fatalf("status %d reached %d", resp.StatusCode, reached.Load())
	}
}

// A client that dies after sending its write (a worker killed mid-request)
// does not stop the write: the store finishes it and the proxy counts it.
func TestWriteCountedWhenTheClientIsGone(t *testing.T) {
	stored := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		close(stored)
		time.Sleep(300 * time.Millisecond) // the client gives up meanwhile
		io.WriteString(w, "ok")
	}))
	defer srv.Close()
	p := New(strings.TrimPrefix(srv.URL, "http://"), Faults{}, 1)
	defer p.Close()
	client := &http.Client{Timeout: 100 * time.Millisecond}
	req, _ := http.NewRequest(http.MethodPut, "http://"+p.Endpoint+"/bucket/key", strings.NewReader("body"))
	if resp, err := client.Do(req); err == nil {
		resp.Body.Close()
		t.Fatal("the client was to give up before the answer")
	}
	<-stored
	deadline := time.Now().Add(10 * time.Second)
	for p.Writes()["bucket/key"] != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("writes %v: the write the store finished was not counted", p.Writes())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Throttle refuses every other one of the next n requests, for certain, and
// then forwards everything again; ResetWrites starts the count afresh.
func TestThrottleEveryOtherThenForwards(t *testing.T) {
	ep, reached, _ := backend(t)
	p := New(ep, Faults{}, 1)
	defer p.Close()
	p.Throttle(4)
	var statuses []int
	for range 6 {
		resp, err := do(t, http.MethodPut, "http://"+p.Endpoint+"/bucket/k")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		statuses = append(statuses, resp.StatusCode)
	}
	want := []int{200, 503, 200, 503, 200, 200}
	for i := range want {
		if statuses[i] != want[i] {
			t.Fatalf("statuses %v, want %v", statuses, want)
		}
	}
	if c := p.Counts(); c.SlowDowns != 2 || c.Forwarded != 4 || reached.Load() != 4 {
		t.Fatalf("counts %+v, reached %d", c, reached.Load())
	}
	if w := p.Writes(); w["bucket/k"] != 4 {
		t.Fatalf("writes %v, want bucket/k 4 times", w)
	}
	p.ResetWrites()
	if w := p.Writes(); len(w) != 0 {
		t.Fatalf("writes %v after ResetWrites", w)
	}
}

// A store that stops mid-request (it read the write, then the connection
// went away) gives no 200: the write is unconfirmed, not counted, since
// the store may or may not have committed it.
func TestWriteUnconfirmedWhenTheStoreStops(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
			conn.Close()
		}
	}))
	defer srv.Close()
	p := New(strings.TrimPrefix(srv.URL, "http://"), Faults{}, 1)
	defer p.Close()
	resp, err := do(t, http.MethodPut, "http://"+p.Endpoint+"/bucket/key")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadGateway {
		t.Fatalf("status %d; want 502 for a store gone mid-request", resp.StatusCode)
	}
	if w, u := p.Writes()["bucket/key"], p.Unconfirmed()["bucket/key"]; w != 0 || u != 1 {
		t.Fatalf("writes %d, unconfirmed %d; want 0 and 1", w, u)
	}
	if _, err := do(t, http.MethodGet, "http://"+p.Endpoint+"/bucket/key"); err != nil {
		t.Fatal(err)
	}
	if u := p.Unconfirmed()["bucket/key"]; u != 1 {
		t.Fatalf("a read counted as an unconfirmed write: %d", u)
	}
	p.ResetWrites()
	if len(p.Unconfirmed()) != 0 {
		t.Fatalf("ResetWrites kept %v", p.Unconfirmed())
	}
}
