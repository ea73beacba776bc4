package gate

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/edgeflow/edgeflow/internal/admit"
	"github.com/edgeflow/edgeflow/internal/keyring"
)

var t0 = time.Date(2026, 3, 14, 15, 9, 0, 0, time.UTC)

func testKey(t testing.TB, id string) keyring.Key {
	t.Helper()
	k, err := keyring.Generate(id)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func testRing(t testing.TB, keys ...keyring.Key) *keyring.Keyring {
	t.Helper()
	r, err := keyring.New(keys...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// errTruncated stands for either error a truncated cookie may give.
var errTruncated = errors.New("truncated: malformed or tampered")

func admittedCookie(room string, now time.Time) *Cookie {
	ms := now.UnixMilli()
	return &Cookie{
		Ticket:    admit.Ticket{Room: room, BucketID: admit.MinuteOf(now, time.Minute).UnixMilli(), AcceptedAt: ms, LastCheckInTime: ms},
		VisitorID: "v-123", Expires: now.Add(6 * time.Minute).UnixMilli(),
	}
}

func TestCookieRoundTrip(t *testing.T) {
	c := Codec{Keys: testRing(t, testKey(t, "k1"))}
	in := admittedCookie("shop", t0)
	in.Attempts, in.RefreshIntervalSeconds = 3, 19
	v, err := c.Seal(in)
	if err != nil {
		t.Fatal(err)
	}
	out, primary, err := c.Open(v, "shop", t0.Add(time.Minute))
	if err != nil || !primary {
		t.Fatalf("Open: %v (primary %v)", err, primary)
	}
	if *out != *in {
		t.Fatalf("round trip: got %+v, want %+v", *out, *in)
	}
	if len(v) > 400 {
		t.Errorf("cookie value is %d bytes; keep it small, it travels with every request", len(v))
	}
	if strings.Contains(v, "shop") || strings.Contains(v, "v-123") {
		t.Error("the cookie shows its content: it must be sealed, not just signed")
	}
}

// Every way a cookie can be wrong makes its bearer a new visitor, with the
// reason told apart for logs.
func TestCookieThatDoesNotOpen(t *testing.T) {
	old, current, stranger := testKey(t, "k-old"), testKey(t, "k-new"), testKey(t, "k-other")
	gate := Codec{Keys: testRing(t, current, old)}
	valid, err := gate.Seal(admittedCookie("shop", t0))
	if err != nil {
		t.Fatal(err)
	}
	seal := func(c Codec, ck *Cookie) string {
		v, err := c.Seal(ck)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	raw, _ := base64.RawURLEncoding.DecodeString(valid)
	flip := func(i int) string {
		b := append([]byte(nil), raw...)
		b[i] ^= 0x01
		return base64.RawURLEncoding.EncodeToString(b)
	}
	// Both ids have five letters: the header keeps its length.
	renamedRaw := append([]byte(nil), raw...)
	copy(renamedRaw[2:], "k-old")
	renamed := base64.RawURLEncoding.EncodeToString(renamedRaw)
	otherRoom := admittedCookie("blog", t0)
	for _, c := range []struct {
		name  string
		value string
		room  string
		now   time.Time
		want  error
	}{
		{"a flipped bit in the ciphertext", flip(len(raw) - 20), "shop", t0, ErrCookieTampered},
		{"a flipped bit in the tag", flip(len(raw) - 1), "shop", t0, ErrCookieTampered},
		{"a flipped bit in the nonce", flip(2 + len("k-new") + 3), "shop", t0, ErrCookieTampered},
		{"the key id renamed to another key of the gate", renamed, "shop", t0, ErrCookieTampered},
		{"truncated by one character", valid[:len(valid)-1], "shop", t0, errTruncated},
		{"truncated by two characters", valid[:len(valid)-2], "shop", t0, errTruncated},
		{"truncated to half", valid[:len(valid)/2], "shop", t0, errTruncated},
		{"truncated into its header", valid[:3], "shop", t0, ErrCookieMalformed},
		{"empty", "", "shop", t0, ErrCookieMalformed},
		{"not base64", "!!!" + valid, "shop", t0, ErrCookieMalformed},
		{"too long to be ours", strings.Repeat("A", MaxCookieBytes+1), "shop", t0, ErrCookieMalformed},
		{"another room's cookie, presented here", seal(gate, otherRoom), "shop", t0, ErrCookieTampered},
		{"sealed with a key this gate does not have", seal(Codec{Keys: testRing(t, stranger)}, admittedCookie("shop", t0)), "shop", t0, ErrCookieUnknown},
		{"expired", valid, "shop", t0.Add(6 * time.Minute), ErrCookieExpired},
		{"long expired", valid, "shop", t0.Add(24 * time.Hour), ErrCookieExpired},
	} {
		t.Run(c.name, func(t *testing.T) {
			ck, _, err := gate.Open(c.value, c.room, c.now)
			if c.want == errTruncated && (errors.Is(err, ErrCookieTampered) || errors.Is(err, ErrCookieMalformed)) {
				return // cut inside a base64 quantum it is malformed, else it fails authentication
			}
			if ck != nil || !errors.Is(err, c.want) {
				t.Fatalf("Open = %+v, %v; want no cookie and %v", ck, err, c.want)
			}
			if strings.Contains(err.Error(), string(current.Secret)) {
				t.Fatal("an error shows key material")
			}
		})
	}
}

// A room's cookie is bound to the room: the same bytes under the other
// room's cookie name still do not open there.
func TestCookieSwapBetweenRooms(t *testing.T) {
	c := Codec{Keys: testRing(t, testKey(t, "k1"))}
	shop, err := c.Seal(admittedCookie("shop", t0))
	if err != nil {
		t.Fatal(err)
	}
	if ck, _, err := c.Open(shop, "blog", t0); ck != nil || err == nil {
		t.Fatalf("shop's cookie opened for blog: %+v", ck)
	}
	if ck, _, err := c.Open(shop, "shop", t0); ck == nil || err != nil {
		t.Fatalf("shop's cookie does not open for shop: %v", err)
	}
}

// Keys rotate: a new key goes first and seals; cookies sealed with the old
// one keep opening (and are resealed), until the old key is dropped.
func TestCookieKeyRotation(t *testing.T) {
	k1, k2 := testKey(t, "k1"), testKey(t, "k2")
	before := Codec{Keys: testRing(t, k1)}
	during := Codec{Keys: testRing(t, k2, k1)}
	after := Codec{Keys: testRing(t, k2)}

	oldCookie, _ := before.Seal(admittedCookie("shop", t0))
	ck, primary, err := during.Open(oldCookie, "shop", t0)
	if err != nil || ck == nil {
		t.Fatalf("a cookie of the old key does not open during rotation: %v", err)
	}
	if primary {
		t.Error("a cookie of the old key is reported as sealed with the primary: it would never be resealed")
	}
	newCookie, _ := during.Seal(ck)
	if raw, _ := base64.RawURLEncoding.DecodeString(newCookie); keyIDOf(raw) != "k2" {
		t.Errorf("resealed with %q, want the new primary k2", keyIDOf(raw))
	}
	if _, primary, err := during.Open(newCookie, "shop", t0); err != nil || !primary {
		t.Errorf("the resealed cookie: %v, primary %v", err, primary)
	}
	if _, _, err := after.Open(oldCookie, "shop", t0); !errors.Is(err, ErrCookieUnknown) {
		t.Errorf("after the old key is dropped its cookies must not open: %v", err)
	}
	if _, _, err := after.Open(newCookie, "shop", t0); err != nil {
		t.Errorf("the resealed cookie no longer opens after rotation: %v", err)
	}
}

func TestCookieAttributes(t *testing.T) {
	for _, c := range []struct {
		samesite, secure string
		https            bool
		want             string // in the Set-Cookie header
		wantSecure       bool
	}{
		{"auto", "auto", true, "SameSite=None", true},
		{"auto", "auto", false, "SameSite=Lax", false},
		{"auto", "always", false, "SameSite=Lax", true},
		{"auto", "never", true, "SameSite=Lax", false},
		{"lax", "auto", true, "SameSite=Lax", true},
		{"strict", "auto", false, "SameSite=Strict", false},
		{"none", "auto", false, "SameSite=None", true}, // browsers drop None without Secure
		{"none", "always", true, "SameSite=None", true},
	} {
		s := admit.Settings{AlwaysUseHTTPS: c.https, CookieAttributes: admit.CookieAttributes{SameSite: c.samesite, Secure: c.secure}}
		h := attributesFor(s, "n", "/").header("v", t0, t0.Add(time.Minute))
		if !strings.Contains(h, c.want) || strings.Contains(h, "Secure") != c.wantSecure || !strings.Contains(h, "HttpOnly") {
			t.Errorf("samesite %s, secure %s, https %v: %s; want %s, Secure %v, HttpOnly", c.samesite, c.secure, c.https, h, c.want, c.wantSecure)
		}
	}
	del := attributesFor(admit.Settings{}, "n", "/").header("", t0, time.Time{})
	if !strings.Contains(del, "Max-Age=0") {
		t.Errorf("deleting header %q lacks Max-Age=0", del)
	}
}

func TestCookieNameAndPath(t *testing.T) {
	if CookieNameFor("") != "__edgeflow_waitingroom" || CookieNameFor("shop") != "__edgeflow_waitingroom_shop" {
		t.Errorf("names: %q %q", CookieNameFor(""), CookieNameFor("shop"))
	}
	for _, c := range []struct {
		path  string
		extra []string
		want  string
	}{
		{"/", nil, "/"},
		{"/shop/", nil, "/shop/"},
		{"/shop", nil, "/"},
		{"/shop/cart", nil, "/shop/"},
		{"/shop/", []string{"/shop/checkout/"}, "/shop/"},
		{"/shop/", []string{"/checkout/"}, "/"},
		{"/shop/a", []string{"/shop/b"}, "/shop/"},
		{"/café/", nil, "/caf%C3%A9/"}, // as browsers send it
		{"/a\"b/", nil, "/a%22b/"},
	} {
		s := admit.Settings{Path: c.path}
		for _, p := range c.extra {
			s.AdditionalRoutes = append(s.AdditionalRoutes, admit.Route{Path: p})
		}
		if got := cookiePath(s); got != c.want {
			t.Errorf("cookiePath(%s + %v) = %s, want %s", c.path, c.extra, got, c.want)
		}
	}
	if got := cookiePath(admit.Settings{Path: "/shop/", PathCaseInsensitive: true}); got != "/" {
		t.Errorf("a room matching paths in any case: cookie path %q, want / (browsers compare paths by case)", got)
	}
	// http.Cookie keeps the name and path as given.
	if h := (cookieAttributes{name: CookieNameFor("x"), path: "/a/"}).header("v", t0, t0.Add(time.Second)); !strings.HasPrefix(h, CookieNameFor("x")+"=v; Path=/a/") {
		t.Errorf("header %q", h)
	}
}

func keyIDOf(raw []byte) string {
	id, _ := keyring.KeyID(raw)
	return id
}

// A queued visitor's first cookie says it has not come back yet (Fresh);
// every other cookie is laid out exactly as before the flag existed.
func TestCookieFreshFlag(t *testing.T) {
	c := Codec{Keys: testRing(t, testKey(t, "k1"))}
	in := &Cookie{Ticket: admit.Ticket{Room: "shop", BucketID: t0.UnixMilli(), LastCheckInTime: t0.UnixMilli(), RefreshIntervalSeconds: 1, Fresh: true},
		VisitorID: "v-1", Expires: t0.Add(time.Hour).UnixMilli()}
	v, err := c.Seal(in)
	if err != nil {
		t.Fatal(err)
	}
	out, _, err := c.Open(v, "shop", t0)
	if err != nil || *out != *in {
		t.Fatalf("round trip: %+v, %v", out, err)
	}
	plain := *in
	plain.Fresh = false
	if got, want := len(in.encode()), len(plain.encode())+1; got != want {
		t.Fatalf("a fresh cookie is %d bytes, want one more than another's (%d)", got, want)
	}
	for _, bad := range [][]byte{append(plain.encode(), 2), append(plain.encode(), 1, 0)} {
		if _, err := decodeCookie(bad); err == nil {
			t.Errorf("flags %v opened", bad[len(plain.encode()):])
		}
	}
}
