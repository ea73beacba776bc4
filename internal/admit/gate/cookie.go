package gate

import (
	"encoding/base64"
	"encoding/binary"
	"errors"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/edgeflow/edgeflow/internal/admit"
	"github.com/edgeflow/edgeflow/internal/keyring"
)

// CookieName is the visitor cookie's name; a room's cookie_suffix is
// appended after an underscore, so rooms on one host can keep apart.
const CookieName = "__edgeflow_waitingroom"

// CookieNameFor is the cookie name of a room with this cookie_suffix.
func CookieNameFor(suffix string) string {
	if suffix == "" {
		return CookieName
	}
	return CookieName + "_" + suffix
}

// Cookie is what the visitor cookie holds, sealed: the engine's ticket (the
// room, bucketId, acceptedAt, lastCheckInTime, refreshIntervalSeconds; the
// JSON names are Cloudflare's, for logs and tests — sealed, it is a compact
// binary layout, see encode) and what the gate adds to it.
type Cookie struct {
	admit.Ticket
	// VisitorID names the visitor for as long as it queues or its session
	// runs: random, made by the gate, never chosen by the visitor.
	VisitorID string `json:"vid"`
	// Attempts is how many tries at a slot the visitor had made when this
	// cookie was written. A try is allowed only to a cookie that is the
	// newest the visitor holds (see attemptGuard), so keeping an old cookie
	// and replaying it buys no extra try.
	Attempts int64 `json:"n,omitempty"`
	// Expires is when the cookie stops opening (Unix ms): the end of the
	// session a minute later, or QueuedCookieLifetime after a queued
	// visitor's last check-in.
	Expires int64 `json:"exp"`
}

// QueuedCookieLifetime is how long a queued visitor who stops checking in
// keeps its place in line.
const QueuedCookieLifetime = time.Hour

// MaxCookieBytes bounds the cookie value the gate tries to open; anything
// longer was not made by a gate.
const MaxCookieBytes = 1024

// Why a cookie did not open. Every one of them makes its bearer a new
// visitor; none is ever admitted.
var (
	ErrCookieMalformed = errors.New("cookie: malformed")
	ErrCookieTampered  = errors.New("cookie: altered or truncated")
	ErrCookieUnknown   = errors.New("cookie: sealed with a key this gate does not have")
	ErrCookieOtherRoom = errors.New("cookie: sealed for another room")
	ErrCookieExpired   = errors.New("cookie: expired")
)

// Codec seals and opens visitor cookies with the gates' shared keys
// (keyring.GateCookie): every gate of every data center must hold the same
// keys, so a visitor stays admitted whichever gate answers.
type Codec struct{ Keys *keyring.Keyring }

// cookieAD binds a sealed cookie to its room: a cookie of one room never
// opens for another, whatever its name.
func cookieAD(room string) []byte { return []byte("edgeflow/gate-cookie/v1\x00" + room) }

// Seal writes a cookie value.
func (c Codec) Seal(ck *Cookie) (string, error) {
	return c.Keys.SealText(ck.encode(), cookieAD(ck.Room))
}

// cookieV1 is the first byte of a sealed cookie's plaintext.
const cookieV1 = 1

// encode lays the cookie out compactly (every request of an admitted
// visitor opens it, so it is small and quick to read): the format byte,
// then the room and visitor id length-prefixed, the numbers as varints.
func (ck *Cookie) encode() []byte {
	b := make([]byte, 0, 16+len(ck.Room)+len(ck.VisitorID)+6*binary.MaxVarintLen64)
	b = append(b, cookieV1)
	b = binary.AppendUvarint(b, uint64(len(ck.Room)))
	b = append(b, ck.Room...)
	b = binary.AppendUvarint(b, uint64(len(ck.VisitorID)))
	b = append(b, ck.VisitorID...)
	for _, n := range []int64{ck.BucketID, ck.AcceptedAt, ck.LastCheckInTime, int64(ck.RefreshIntervalSeconds), ck.Attempts, ck.Expires} {
		b = binary.AppendVarint(b, n)
	}
	// Flags follow only when one is set, so that every other cookie reads
	// as before (gates of an older release still open them).
	if ck.Fresh {
		b = binary.AppendUvarint(b, cookieFresh)
	}
	return b
}

// cookieFresh is the flag of admit.Ticket.Fresh.
const cookieFresh = 1

// decodeCookie reads what encode wrote.
func decodeCookie(b []byte) (*Cookie, error) {
	if len(b) == 0 || b[0] != cookieV1 {
		return nil, ErrCookieMalformed
	}
	b = b[1:]
	str := func() (string, bool) {
		n, k := binary.Uvarint(b)
		if k <= 0 || n > uint64(len(b)-k) {
			return "", false
		}
		v := string(b[k : k+int(n)])
		b = b[k+int(n):]
		return v, true
	}
	var ck Cookie
	var ok bool
	if ck.Room, ok = str(); !ok {
		return nil, ErrCookieMalformed
	}
	if ck.VisitorID, ok = str(); !ok {
		return nil, ErrCookieMalformed
	}
	var refresh int64
	for _, p := range []*int64{&ck.BucketID, &ck.AcceptedAt, &ck.LastCheckInTime, &refresh, &ck.Attempts, &ck.Expires} {
		n, k := binary.Varint(b)
		if k <= 0 {
			return nil, ErrCookieMalformed
		}
		*p, b = n, b[k:]
	}
	if len(b) != 0 {
		flags, k := binary.Uvarint(b)
		if k <= 0 || k != len(b) || flags != cookieFresh {
			return nil, ErrCookieMalformed
		}
		ck.Fresh, b = true, b[k:]
	}
	if refresh != int64(int(refresh)) {
		return nil, ErrCookieMalformed
	}
	ck.RefreshIntervalSeconds = int(refresh)
	return &ck, nil
}

// Open opens a cookie value for room at now, and says whether it was sealed
// with the primary key (false: a key being rotated out; reseal it).
func (c Codec) Open(value, room string, now time.Time) (*Cookie, bool, error) {
	if value == "" || len(value) > MaxCookieBytes {
		return nil, false, ErrCookieMalformed
	}
	raw, err := base64.RawURLEncoding.DecodeString(value)
	if err != nil {
		return nil, false, ErrCookieMalformed
	}
	plain, err := c.Keys.Open(raw, cookieAD(room))
	if err != nil {
		return nil, false, c.classify(raw)
	}
	ck, err := decodeCookie(plain)
	if err != nil {
		return nil, false, err
	}
	switch {
	case ck.Room != room:
		// Only a gate holding the keys can seal, so this would be a gate
		// bug; a cookie of another room is still never admitted here.
		return nil, false, ErrCookieOtherRoom
	case ck.VisitorID == "":
		return nil, false, ErrCookieMalformed
	case now.UnixMilli() >= ck.Expires:
		return nil, false, ErrCookieExpired
	}
	id, _ := keyring.KeyID(raw)
	return ck, id == c.Keys.Primary(), nil
}

// classify says why a sealed value did not open, without exposing anything
// of the keys: malformed, sealed with an unknown key, or altered (which,
// with the room bound in as associated data, includes a cookie of another
// room and a truncated one).
func (c Codec) classify(raw []byte) error {
	id, err := keyring.KeyID(raw)
	if err != nil {
		return ErrCookieMalformed
	}
	if slices.Contains(c.Keys.IDs(), id) {
		return ErrCookieTampered
	}
	return ErrCookieUnknown
}

// cookieAttributes are the Set-Cookie attributes of a room's cookie for one
// request.
type cookieAttributes struct {
	name, path string
	secure     bool
	sameSite   http.SameSite
}

// attributesFor applies the room's cookie_attributes as Cloudflare's
// Waiting Room documentation describes them: auto follows the room's Always
// Use HTTPS (always_use_https), not the scheme of one request, so a visitor
// behind a TLS-terminating balancer (the gate sees HTTP) in an IFrame keeps
// a SameSite=None cookie and their place. samesite auto is None (with
// Secure) when the site is HTTPS only, else Lax; secure auto likewise.
// SameSite=None always goes with Secure, which browsers require (settings
// refuse none with secure never).
func attributesFor(s admit.Settings, name, path string) cookieAttributes {
	https := s.AlwaysUseHTTPS
	a := cookieAttributes{name: name, path: path}
	switch s.CookieAttributes.Secure {
	case "always":
		a.secure = true
	case "never":
		a.secure = false
	default:
		a.secure = https
	}
	switch s.CookieAttributes.SameSite {
	case "lax":
		a.sameSite = http.SameSiteLaxMode
	case "strict":
		a.sameSite = http.SameSiteStrictMode
	case "none":
		a.sameSite, a.secure = http.SameSiteNoneMode, true
	default:
		if https && s.CookieAttributes.Secure != "never" {
			a.sameSite, a.secure = http.SameSiteNoneMode, true
		} else {
			a.sameSite = http.SameSiteLaxMode
		}
	}
	return a
}

// header is the Set-Cookie value carrying value until expires (a zero
// expires deletes the cookie).
func (a cookieAttributes) header(value string, now time.Time, expires time.Time) string {
	ck := http.Cookie{Name: a.name, Value: value, Path: a.path, Secure: a.secure, HttpOnly: true, SameSite: a.sameSite}
	if expires.IsZero() {
		ck.MaxAge = -1
	} else {
		ck.MaxAge = max(int(expires.Sub(now)/time.Second), 1)
	}
	return ck.String()
}

// cookiePath is the Path attribute of a room's cookie: the longest
// directory every route of the room shares, so the cookie reaches every
// route and no other room's cookie of the same name overwrites it where the
// paths differ. Browsers compare it, case and escapes included, with the
// path they send: it is escaped the way the gate forwards paths, and "/"
// for a room whose paths match in any case.
func cookiePath(s admit.Settings) string {
	if s.PathCaseInsensitive {
		return "/"
	}
	p := commonDirectory(s)
	if c, err := admit.CanonicalPath(p); err == nil {
		p = c
	}
	return p
}

func commonDirectory(s admit.Settings) string {
	routes := s.Routes()
	common := routes[0].Path
	for _, r := range routes[1:] {
		for !strings.HasPrefix(r.Path, common) {
			common = common[:len(common)-1]
		}
	}
	if i := strings.LastIndexByte(common, '/'); i >= 0 {
		return common[:i+1]
	}
	return "/"
}
