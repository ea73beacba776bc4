package migrate

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/edgeflow/edgeflow/internal/objectstore"
)

// fakeClock is a clock the test moves.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time          { return c.t }
func (c *fakeClock) advance(d time.Duration) { c.t = c.t.Add(d) }

func netErr(errno syscall.Errno) error {
	return &objectstore.Error{Op: "put", Bucket: "b", Key: "k", Endpoint: "store:9000",
		Err: &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", errno)}, Kind: objectstore.ErrTransient}
}

func answer(status int, code string, kind error) error {
	return &objectstore.Error{Op: "get", Bucket: "b", Key: "k", Endpoint: "store:9000", StatusCode: status, Code: code, Kind: kind}
}

func TestClassifyStoreError(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
		want ErrorClass
	}{
		{"refused", netErr(syscall.ECONNREFUSED), Unreachable},
		{"reset", netErr(syscall.ECONNRESET), StoreFailure},
		{"dns", &objectstore.Error{Op: "get", Err: &net.DNSError{Err: "no such host", Name: "store"}}, StoreFailure},
		{"500", answer(500, "InternalError", objectstore.ErrTransient), StoreFailure},
		{"502", answer(502, "", nil), StoreFailure},
		{"503 is throttling", answer(503, "SlowDown", objectstore.ErrTransient), ObjectClass},
		{"429 is throttling", answer(429, "TooManyRequests", objectstore.ErrTransient), ObjectClass},
		{"403", answer(403, "AccessDenied", objectstore.ErrAccessDenied), Denied},
		{"bad credentials", answer(403, "InvalidAccessKeyId", objectstore.ErrBadCredentials), Denied},
		{"404", answer(404, "NoSuchKey", objectstore.ErrNoSuchKey), ObjectClass},
		{"invalid key", answer(400, "XMinioInvalidObjectName", objectstore.ErrInvalid), ObjectClass},
		{"object changed", errSourceChanged, ObjectClass},
		{"precondition", answer(412, "PreconditionFailed", objectstore.ErrPreconditionFailed), ObjectClass},
		{"cancelled", &objectstore.Error{Op: "get", Err: fmt.Errorf("x: %w", errors.New("context canceled"))}, ObjectClass},
	} {
		if got := ClassifyStoreError(c.err); got != c.want {
			t.Errorf("%s: class %d, want %d", c.name, got, c.want)
		}
	}
}

// One refused connection is enough: nothing listens there.
func TestRefusedIsDownAtOnce(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1000, 0)}
	h := NewStoreHealth(clock.now)
	if v := h.Observe(SideDest, "a", netErr(syscall.ECONNREFUSED)); v != VerdictDown {
		t.Fatalf("verdict %d, want down", v)
	}
	o := h.Down()
	if o == nil || o.Side != SideDest || !o.Since.Equal(clock.t) || !strings.Contains(o.Reason, "connection refused") {
		t.Fatalf("outage %+v", o)
	}
	select {
	case <-h.DownCh():
	default:
		t.Fatal("DownCh not closed")
	}
	// Everything after is waiting too, even an error of another class.
	if v := h.Observe(SideSource, "b", netErr(syscall.ECONNRESET)); v != VerdictDown {
		t.Fatalf("after the trip: verdict %d", v)
	}
	if h.Down().Side != SideDest {
		t.Fatal("the first outage is the one reported")
	}
}

// Three resets on distinct keys within 10 s: down. On one key, or spread
// over more than 10 s, or with successes between: not.
func TestFailuresOnDistinctKeysWithinTheWindow(t *testing.T) {
	reset := netErr(syscall.ECONNRESET)
	t.Run("three keys", func(t *testing.T) {
		clock := &fakeClock{t: time.Unix(1000, 0)}
		h := NewStoreHealth(clock.now)
		for i, k := range []string{"a", "b"} {
			if v := h.Observe(SideSource, k, reset); v != VerdictRetry {
				t.Fatalf("failure %d: verdict %d, want retry", i, v)
			}
			clock.advance(4 * time.Second)
		}
		if v := h.Observe(SideSource, "c", reset); v != VerdictDown {
			t.Fatalf("third key at 8 s: verdict %d, want down", v)
		}
		if o := h.Down(); o.Side != SideSource || !strings.Contains(o.Reason, "3 failures on distinct keys") {
			t.Fatalf("outage %+v", o)
		}
	})
	t.Run("one key", func(t *testing.T) {
		h := NewStoreHealth((&fakeClock{t: time.Unix(1000, 0)}).now)
		for range 10 {
			if v := h.Observe(SideSource, "a", reset); v != VerdictRetry {
				t.Fatalf("verdict %d, want retry", v)
			}
		}
		if h.Down() != nil {
			t.Fatal("one key's failures called the store down")
		}
	})
	t.Run("slower than the window", func(t *testing.T) {
		clock := &fakeClock{t: time.Unix(1000, 0)}
		h := NewStoreHealth(clock.now)
		for _, k := range []string{"a", "b", "c", "d"} {
			if v := h.Observe(SideSource, k, reset); v != VerdictRetry {
				t.Fatalf("%s: verdict %d, want retry", k, v)
			}
			clock.advance(6 * time.Second)
		}
	})
	t.Run("successes between", func(t *testing.T) {
		h := NewStoreHealth((&fakeClock{t: time.Unix(1000, 0)}).now)
		for _, k := range []string{"a", "b", "c", "d", "e"} {
			if v := h.Observe(SideSource, k, reset); v != VerdictRetry {
				t.Fatalf("%s: verdict %d, want retry", k, v)
			}
			h.Succeeded()
		}
	})
	t.Run("sides apart", func(t *testing.T) {
		h := NewStoreHealth((&fakeClock{t: time.Unix(1000, 0)}).now)
		h.Observe(SideSource, "a", reset)
		h.Observe(SideDest, "b", reset)
		h.Observe(SideSource, "c", reset)
		if v := h.Observe(SideDest, "d", reset); v != VerdictRetry || h.Down() != nil {
			t.Fatalf("two failures a side tripped: verdict %d", v)
		}
	})
	t.Run("5xx count with resets", func(t *testing.T) {
		h := NewStoreHealth((&fakeClock{t: time.Unix(1000, 0)}).now)
		h.Observe(SideDest, "a", reset)
		h.Observe(SideDest, "b", answer(500, "InternalError", objectstore.ErrTransient))
		if v := h.Observe(SideDest, "c", answer(504, "", nil)); v != VerdictDown {
			t.Fatalf("verdict %d, want down", v)
		}
	})
	t.Run("throttling never trips", func(t *testing.T) {
		h := NewStoreHealth((&fakeClock{t: time.Unix(1000, 0)}).now)
		for i := range 10 {
			if v := h.Observe(SideDest, fmt.Sprint(i), answer(503, "SlowDown", objectstore.ErrTransient)); v != VerdictObject {
				t.Fatalf("verdict %d, want object (the throttle path)", v)
			}
		}
	})
}

// 403 on three keys makes the store suspect; Trust (the probe passed)
// makes further 403s the objects'; Trip (it failed) calls it down.
func TestDeniedNeedsAProbe(t *testing.T) {
	denied := answer(403, "AccessDenied", objectstore.ErrAccessDenied)
	clock := &fakeClock{t: time.Unix(1000, 0)}
	h := NewStoreHealth(clock.now)
	h.Observe(SideSource, "a", denied)
	h.Observe(SideSource, "b", denied)
	if v := h.Observe(SideSource, "c", denied); v != VerdictSuspect {
		t.Fatalf("verdict %d, want suspect", v)
	}
	if h.Down() != nil {
		t.Fatal("403s alone called the store down")
	}
	h.Trust(SideSource)
	if v := h.Observe(SideSource, "d", denied); v != VerdictObject {
		t.Fatalf("after a passing probe: verdict %d, want object", v)
	}

	h = NewStoreHealth(clock.now)
	for _, k := range []string{"a", "b", "c"} {
		h.Observe(SideDest, k, denied)
	}
	h.Trip(SideDest, "denied, and the probe failed")
	if o := h.Down(); o == nil || o.Side != SideDest {
		t.Fatalf("outage %+v", o)
	}
}

func TestProbeDelayIsCappedAtAMinute(t *testing.T) {
	want := []time.Duration{2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second, 32 * time.Second, time.Minute, time.Minute}
	for n, w := range want {
		if got := ProbeDelay(n); got != w {
			t.Errorf("ProbeDelay(%d) = %s, want %s", n, got, w)
		}
	}
	if ProbeDelay(1000) != time.Minute {
		t.Error("no cap")
	}
}
