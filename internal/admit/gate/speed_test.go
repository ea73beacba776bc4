package gate

import (
	"net/http"
	"net/http/httputil"
	"sync/atomic"
	"testing"
	"time"

	"github.com/edgeflow/edgeflow/internal/admit"
)

// setCookie is the gate's cookie value a response sets ("" if none).
func setCookie(r result) string {
	for _, c := range (&http.Response{Header: r.header}).Cookies() {
		if c.Name == CookieName && c.MaxAge >= 0 {
			return c.Value
		}
	}
	return ""
}

// A visitor whose browser has not taken its renewal yet is sent the same
// renewal again, not one sealed anew on every request, until that renewal
// would be renewed itself.
func TestRenewalIsSealedOncePerCookieAndInterval(t *testing.T) {
	h := newHarness(t, admit.Settings{Name: "shop"})
	v := newVisitor()
	mustOrigin(t, h.get(v, "http://shop.example/"), "first visit")
	old := v.clone() // a browser that keeps this cookie

	h.advance(11 * time.Second) // past the renewal interval (10 s of a 60-s minute)
	first := h.get(old.clone(), "http://shop.example/a")
	mustOrigin(t, first, "stale cookie")
	renewed := setCookie(first)
	if renewed == "" {
		t.Fatal("a cookie past the renewal interval was not renewed")
	}
	h.advance(2 * time.Second)
	again := h.get(old.clone(), "http://shop.example/b")
	mustOrigin(t, again, "the same stale cookie")
	if got := setCookie(again); got != renewed {
		t.Errorf("the same cookie got another renewal %q, want the first %q again", got, renewed)
	}
	ck, _, err := h.g.codec.Open(renewed, "shop", h.clock())
	if err != nil {
		t.Fatal(err)
	}
	if want := t0.Add(16 * time.Second).UnixMilli(); ck.LastCheckInTime != want {
		t.Errorf("renewal checked in at %d, want %d (the first renewal's time)", ck.LastCheckInTime, want)
	}
	// The browser that took it passes without a renewal.
	took := newVisitor()
	took.cookies[CookieName] = renewed
	if r := h.get(took, "http://shop.example/c"); setCookie(r) != "" {
		t.Error("the renewal was renewed again at once")
	}

	h.advance(10 * time.Second) // the renewal itself is due now
	later := h.get(old.clone(), "http://shop.example/d")
	got := setCookie(later)
	if got == "" || got == renewed {
		t.Fatalf("a renewal past its own interval was sent again (%q)", got)
	}
	if ck, _, err := h.g.codec.Open(got, "shop", h.clock()); err != nil || ck.LastCheckInTime != h.clock().UnixMilli() {
		t.Errorf("new renewal %+v, %v: want checked in now", ck, err)
	}
}

// countingPool counts the buffers taken from the pool it wraps.
type countingPool struct {
	httputil.BufferPool
	gets atomic.Int64
}

func (p *countingPool) Get() []byte { p.gets.Add(1); return p.BufferPool.Get() }

// A proxied request copies the origin's answer through a pooled buffer:
// unpooled, the reverse proxy allocates 32 KiB for every request, most of
// what a proxied request allocates.
func TestProxiedRequestsShareCopyBuffers(t *testing.T) {
	pool := &countingPool{BufferPool: copyBuffers}
	copyBuffers = pool
	t.Cleanup(func() { copyBuffers = pool.BufferPool })
	h := newHarness(t, admit.Settings{Name: "shop"})
	v := newVisitor()
	for range 10 {
		mustOrigin(t, h.get(v, "http://shop.example/"), "admitted visitor")
	}
	if got := pool.gets.Load(); got != 10 {
		t.Errorf("%d buffers taken from the pool for 10 proxied requests, want 10", got)
	}
}
