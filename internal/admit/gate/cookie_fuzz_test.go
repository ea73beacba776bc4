package gate

import (
	"bytes"
	"testing"
	"time"

	"github.com/edgeflow/edgeflow/internal/admit"
	"github.com/edgeflow/edgeflow/internal/keyring"
)

// fuzzCodec seals with a fixed key, so the seed corpus in
// testdata/fuzz holds real cookies that open, and mutations of them.
func fuzzCodec(t testing.TB) Codec {
	return Codec{Keys: testRing(t, keyring.Key{ID: "fuzz", Secret: bytes.Repeat([]byte{0x5a}, keyring.KeySize)})}
}

// fuzzCookie is the cookie the corpus's valid seeds hold (sealed with
// fuzzCodec; each seal has its own nonce).
func fuzzCookie() *Cookie {
	c := admittedCookie("shop", t0)
	c.Expires = t0.Add(time.Hour).UnixMilli()
	return c
}

// FuzzOpenCookie: whatever a visitor sends as the cookie, the gate neither
// panics nor accepts anything but a value a gate sealed, unchanged.
func FuzzOpenCookie(f *testing.F) {
	c := fuzzCodec(f)
	valid, err := c.Seal(fuzzCookie())
	if err != nil {
		f.Fatal(err)
	}
	f.Add(valid)
	f.Add(valid[:len(valid)-1])
	f.Add("")
	f.Add("AQRmdXp6")
	f.Fuzz(func(t *testing.T, value string) {
		ck, _, err := c.Open(value, "shop", t0)
		if err != nil {
			if ck != nil {
				t.Fatal("a cookie came back with an error")
			}
			return
		}
		// It opened: it must be exactly what a gate sealed, which no
		// mutation can produce without the key.
		if ck.Room != "shop" || ck.VisitorID == "" || ck.Expires <= t0.UnixMilli() {
			t.Fatalf("opened an invalid cookie %+v", ck)
		}
		if *ck != *fuzzCookie() {
			t.Fatalf("opened a cookie the test never sealed: %+v", ck)
		}
	})
}

// FuzzCookieRoundTrip: every ticket the engine can write survives sealing
// and opening unchanged, for its own room only.
func FuzzCookieRoundTrip(f *testing.F) {
	c := fuzzCodec(f)
	f.Add("shop", t0.UnixMilli(), t0.UnixMilli(), t0.UnixMilli(), 0, "v-1", int64(0))
	f.Add("a", int64(1), int64(0), int64(2), 17, "x", int64(9))
	f.Fuzz(func(t *testing.T, room string, bucket, accepted, last int64, refresh int, visitor string, tries int64) {
		if !admit.ValidName(room) || visitor == "" || len(visitor) > 64 {
			return
		}
		in := &Cookie{Ticket: admit.Ticket{Room: room, BucketID: bucket, AcceptedAt: accepted, LastCheckInTime: last,
			RefreshIntervalSeconds: refresh}, VisitorID: visitor, Attempts: tries, Expires: t0.Add(time.Hour).UnixMilli()}
		v, err := c.Seal(in)
		if err != nil {
			t.Fatal(err)
		}
		if len(v) > MaxCookieBytes {
			return // the gate never writes one this large: a room name is at most 64 bytes
		}
		out, _, err := c.Open(v, room, t0)
		if err != nil || *out != *in {
			t.Fatalf("round trip: %+v, %v; want %+v", out, err, in)
		}
		if _, _, err := c.Open(v, room+"x", t0); err == nil {
			t.Fatal("a cookie opened for another room")
		}
	})
}
