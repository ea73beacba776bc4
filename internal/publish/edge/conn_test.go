package edge

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
)

// A cached body leaves with its headers in one write however large it is
// (one more per 64 KiB chunk past the first), the bytes unchanged at every
// size around net/http's 4 KiB buffer. Bodies a little shorter than that
// buffer may take two (the headers' length decides), as before.
func TestCachedBodyLeavesWithItsHeadersInOneWrite(t *testing.T) {
	var mu sync.Mutex
	var conns []*coalescingConn
	s := New(Config{Primary: testEnv.store, Buckets: testEnv.buckets, CacheBytes: 64 << 20, MaxCachedFile: 4 << 20})
	ts := serveAsDeployed(s, func(c net.Conn) {
		mu.Lock()
		defer mu.Unlock()
		if cc, ok := c.(*coalescingConn); ok {
			conns = append(conns, cc)
		}
	})
	defer ts.Close()
	client := &http.Client{Transport: &http.Transport{DisableCompression: true, MaxIdleConnsPerHost: 1}}
	defer client.CloseIdleConnections()
	big := fixtureData(t, testVersion, "big.bin")
	url := fileURL(ts.URL, testVersion, "big.bin")
	resp, err := client.Get(url) // the file into the cache
	if err != nil {
		t.Fatal(err)
	}
	var warm bytes.Buffer
	_, _ = warm.ReadFrom(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !bytes.Equal(warm.Bytes(), big) {
		t.Fatalf("warming the cache: %d, %d bytes", resp.StatusCode, warm.Len())
	}

	writes := func() int64 {
		mu.Lock()
		defer mu.Unlock()
		var n int64
		for _, c := range conns {
			n += c.writes.Load()
		}
		return n
	}
	for _, c := range []struct {
		method string
		length int // of the range from byte 7; 0: the whole file
		writes int64
		upTo   int64 // else, at most
	}{
		{"GET", 1, 1, 0}, {"GET", 3000, 1, 0}, {"GET", 3700, 0, 2}, {"GET", 4096, 0, 2}, {"GET", 4097, 1, 0},
		{"GET", 5000, 1, 0}, {"GET", 8200, 1, 0}, {"GET", 50 << 10, 1, 0}, {"GET", 64 << 10, 1, 0},
		{"GET", 64<<10 + 1, 2, 0}, {"GET", 150 << 10, 3, 0},
		{"GET", 0, int64(len(big)+deadlineChunk-1) / deadlineChunk, 0}, {"HEAD", 0, 1, 0},
	} {
		req, err := http.NewRequest(c.method, url, nil)
		if err != nil {
			t.Fatal(err)
		}
		want := big
		if c.length > 0 {
			req.Header.Set("Range", fmt.Sprintf("bytes=7-%d", 7+c.length-1))
			want = big[7 : 7+c.length]
		}
		if c.method == "HEAD" {
			want = nil
		}
		before := writes()
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var body bytes.Buffer
		_, err = body.ReadFrom(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode/100 != 2 || !bytes.Equal(body.Bytes(), want) {
			t.Errorf("%s %d bytes: %d, %d bytes read (%v), want the fixture's %d", c.method, c.length, resp.StatusCode, body.Len(), err, len(want))
		}
		if got := writes() - before; c.writes > 0 && got != c.writes || c.upTo > 0 && got > c.upTo {
			t.Errorf("%s %d bytes: %d writes to the connection, want %d (at most %d)", c.method, c.length, got, c.writes, c.upTo)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(conns) != 1 {
		t.Errorf("%d connections, want every request on one kept alive", len(conns))
	}
}

// Sending what is held with the body (one writev) allocates nothing: it
// happens on every hot file's request over 2 KiB (two allocations each
// before).
func TestCoalescedWriteAllocatesNothing(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := CoalescingListener(ln).Accept()
		if err != nil {
			close(accepted)
			return
		}
		accepted <- c
	}()
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	server, ok := (<-accepted).(*coalescingConn)
	if !ok {
		t.Fatal("the listener did not hand out a coalescingConn")
	}
	defer server.Close()
	headers, body := bytes.Repeat([]byte("h"), 300), bytes.Repeat([]byte("b"), 5000)
	drained := make(chan int64)
	go func() {
		n, _ := io.Copy(io.Discard, client)
		drained <- n
	}()
	const rounds = 100
	allocs := testing.AllocsPerRun(rounds, func() {
		server.holdNextWrite(len(body))
		if _, err := server.Write(headers); err != nil {
			t.Fatal(err)
		}
		if _, err := server.Write(body); err != nil {
			t.Fatal(err)
		}
	})
	writes := server.writes.Load()
	server.Close()
	if n := <-drained; n != (rounds+1)*int64(len(headers)+len(body)) {
		t.Errorf("the client read %d bytes, want %d", n, (rounds+1)*(len(headers)+len(body)))
	}
	if writes != rounds+1 {
		t.Errorf("%d writes, want one per response (%d)", writes, rounds+1)
	}
	if allocs > 0 {
		t.Errorf("%.1f allocations per coalesced write, want none", allocs)
	}
}
