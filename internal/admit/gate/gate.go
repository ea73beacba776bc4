package gate

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"hash/fnv"
	"log/slog"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/edgeflow/edgeflow/internal/admit"
	"github.com/edgeflow/edgeflow/internal/keyring"
)

// Config is what a gate needs.
type Config struct {
	Origin   *url.URL
	Gate     admit.Gate // its data center and its own id
	Keys     *keyring.Keyring
	Counters Counters
	Registry *Registry // the rooms, kept current by a Watcher (or a test)
	Logger   *slog.Logger

	// Transport reaches the origin; nil: NewTransport(DefaultOriginTimeouts).
	Transport http.RoundTripper
	// RewriteHost sends the origin its own host name instead of the visitor's.
	RewriteHost bool
	// MaxBodyBytes bounds request bodies (0: DefaultMaxBodyBytes).
	MaxBodyBytes int64
	// TrustForwarded believes the X-Forwarded-For and X-Forwarded-Proto
	// headers of the proxy in front (a load balancer or TLS terminator):
	// the origin gets the visitor's address chain, and HTTPS visitors are
	// told apart for the cookie's attributes. Off, they are replaced.
	TrustForwarded bool
	// Now is the clock (nil: time.Now).
	Now func() time.Time
}

// DefaultMaxBodyBytes is the default limit on a request body.
const DefaultMaxBodyBytes = 32 << 20

// Gate is the waiting room in front of an origin: an http.Handler that
// passes or queues each request on the room's snapshot, deciding locally
// with the engine.
type Gate struct {
	cfg      Config
	codec    Codec
	counters Counters
	rooms    *Registry
	proxy    *httputil.ReverseProxy
	log      *slog.Logger
	now      func() time.Time
	maxBody  int64
	tally    requestTally // decisions per room, for /metrics
}

// New builds a gate.
func New(cfg Config) (*Gate, error) {
	switch {
	case cfg.Origin == nil || cfg.Origin.Host == "" || (cfg.Origin.Scheme != "http" && cfg.Origin.Scheme != "https"):
		return nil, errors.New("gate: the origin must be an http:// or https:// URL with a host")
	case cfg.Keys == nil:
		return nil, errors.New("gate: no cookie keys")
	case cfg.Counters.Strategy == nil || cfg.Counters.Marks == nil:
		return nil, errors.New("gate: no counters")
	case cfg.Registry == nil:
		return nil, errors.New("gate: no room registry")
	case !admit.ValidLabel(cfg.Gate.DataCenter) || !admit.ValidLabel(cfg.Gate.ID):
		return nil, errors.New("gate: the data center and the gate id must be 1-64 letters, digits, '.', '_' or '-'")
	}
	g := &Gate{cfg: cfg, codec: Codec{Keys: cfg.Keys}, counters: cfg.Counters, rooms: cfg.Registry,
		log: cfg.Logger, now: cfg.Now, maxBody: cfg.MaxBodyBytes}
	if g.log == nil {
		g.log = slog.Default()
	}
	if g.now == nil {
		g.now = time.Now
	}
	if g.counters.Revocations == nil {
		g.counters.Revocations = &Revocations{}
	}
	if g.maxBody <= 0 {
		g.maxBody = DefaultMaxBodyBytes
	}
	transport := cfg.Transport
	if transport == nil {
		transport = NewTransport(DefaultOriginTimeouts)
	}
	g.proxy = g.newProxy(cfg.Origin, transport, cfg.RewriteHost, cfg.TrustForwarded)
	return g, nil
}

// ServeHTTP decides one request.
func (g *Gate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.ContentLength > g.maxBody {
		plain(w, http.StatusRequestEntityTooLarge, "The request body is too large.")
		return
	}
	if r.Body != nil && r.Body != http.NoBody {
		r.Body = http.MaxBytesReader(w, r.Body, g.maxBody)
	}
	room := g.rooms.Match(r.Host, r.URL.Path)
	if room == nil {
		g.proxy.ServeHTTP(w, r) // no room covers it
		return
	}
	st := room.state.Load()
	// The decision's minute stays open (not final in the room's eyes)
	// until its effect is counted.
	now, minute := room.tally.Begin(g.now, st.snap.MinuteLength())
	counted := false
	defer func() {
		if !counted {
			room.tally.End(minute, admit.Effect{})
		}
	}()
	https := g.isHTTPS(r)
	ck, resealNeeded := g.openCookie(r, st, now)
	if ck != nil && ck.Admitted() && st.snap.Settings.RevokeEnabled() &&
		g.counters.Revocations.Revoked(room.name, ck.VisitorID, now) {
		// A session the origin revoked does not come back with its old
		// cookie. Checked in memory: an admitted visitor never waits on Redis.
		ck = nil
	}

	in := admit.Input{Now: now, Snapshot: st.snap, Gate: g.cfg.Gate, Strategy: g.counters.Strategy}
	var guard *attemptGuard
	visitor, tries, expected := "", int64(0), int64(0)
	if ck != nil {
		in.Ticket = &ck.Ticket
		visitor, tries, expected = ck.VisitorID, ck.Attempts, ck.Attempts+1
		if !ck.Admitted() {
			guard = &attemptGuard{Strategy: g.counters.Strategy, marks: g.counters.Marks, room: room.name,
				visitor: visitor, tries: tries, expire: now.Add(QueuedCookieLifetime)}
			in.Strategy = guard
		}
	} else {
		visitor = newVisitorID()
	}
	// The refresh jitter depends only on the visitor and its tries, so that
	// no copy of a cookie is told to come back sooner than another.
	in.Entropy = tryEntropy(visitor, expected)
	d, err := admit.Decide(r.Context(), in)
	if err != nil && !errors.Is(err, ErrCountersDown) && !errors.Is(err, ErrCountersBusy) {
		g.log.Warn("decide", "room", room.name, "err", err)
	}
	var unsure *admit.TakeError
	if errors.As(err, &unsure) {
		room.tally.Unsure(unsure)
	}
	if d.Effect.Seen {
		d.Effect = g.countVisit(room, st.snap, d.Effect, visitor)
	}
	if d.Effect.Waiting > 0 && !room.waiting.Once(d.Effect.Minute, visitor, 2*st.snap.MinuteLength()) {
		d.Effect.Waiting, d.Effect.Bucket = 0, time.Time{} // a copy of a cookie counted this minute
	}
	if countsNothing(d.Effect) {
		d.Effect = admit.Effect{}
	}
	room.tally.End(minute, d.Effect)
	counted = true
	g.tally.add(room.name, d.Outcome)
	if d.Outcome == admit.Bypass {
		g.proxy.ServeHTTP(w, r)
		return
	}

	// The cookie the visitor holds after this request.
	next := ck
	if d.Ticket != nil && (d.SetTicket || resealNeeded) {
		next = &Cookie{Ticket: *d.Ticket, VisitorID: visitor, Attempts: tries}
		if guard != nil && guard.claimed {
			next.Attempts = guard.count
		}
		if !next.Admitted() && next.Attempts != expected {
			next.RefreshIntervalSeconds = admit.JitterRefresh(
				admit.RefreshBase(st.snap.Settings.RefreshIntervalSeconds, st.snap.MinuteLength()), tryEntropy(visitor, next.Attempts))
			d.RefreshIn = time.Duration(next.RefreshIntervalSeconds) * time.Second
		}
	}
	a := attributesFor(st.snap.Settings, st.cookieName, st.cookiePath, https)
	if next != nil && next != ck {
		next.Expires = cookieExpiry(next, st.snap, now).UnixMilli()
		if v, err := g.codec.Seal(next); err == nil {
			w.Header().Add("Set-Cookie", a.header(v, now, time.UnixMilli(next.Expires)))
		} else {
			g.log.Error("seal cookie", "room", room.name, "err", err)
		}
	}

	switch d.Outcome {
	case admit.Pass, admit.Admit:
		rs := &requestState{w: w, room: room, st: st, ck: next, now: now, a: a}
		g.proxy.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), stateKey{}, rs)))
	default:
		g.respondQueued(w, r, st, d, now)
	}
}

// countVisit counts a session's move into a minute once per visitor: at
// this gate by the room's Visits, and across gates sharing a store by the
// reporter, which asks the store in the background (no request waits on it).
func (g *Gate) countVisit(room *Room, snap *admit.Snapshot, e admit.Effect, visitor string) admit.Effect {
	return room.visits.Effect(e, visitor, visitKeep(snap), g.counters.Visits != nil)
}

// visitKeep is how long a visitor's last counted minute is remembered:
// past a session's length and a minute, no cookie naming it still opens.
func visitKeep(snap *admit.Snapshot) time.Duration {
	return time.Duration(snap.Settings.SessionDuration+2) * snap.MinuteLength()
}

// tryEntropy is the random bits of a visitor's refresh jitter before try
// n+1: the same for every copy of its cookie, different at each try.
func tryEntropy(visitor string, n int64) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(visitor))
	_, _ = h.Write([]byte(strconv.FormatInt(n, 10)))
	return h.Sum64()
}

// cookieExpiry is when a cookie stops opening: a minute after its session
// would end, or QueuedCookieLifetime after a queued visitor's check-in.
func cookieExpiry(c *Cookie, snap *admit.Snapshot, now time.Time) time.Time {
	if c.Admitted() {
		s := snap.Settings
		return c.SessionStart(s.DisableSessionRenewal).Add(time.Duration(s.SessionDuration+1) * snap.MinuteLength())
	}
	return now.Add(QueuedCookieLifetime)
}

// openCookie finds the visitor's cookie of this room. Browsers send every
// cookie of that name whose path covers the request (rooms on a host and a
// path below it), so each is tried; only one sealed for this room opens.
// resealNeeded: it opened with a key being rotated out.
func (g *Gate) openCookie(r *http.Request, st *roomState, now time.Time) (ck *Cookie, resealNeeded bool) {
	for _, line := range r.Header["Cookie"] {
		for part := range strings.SplitSeq(line, ";") {
			name, value, ok := strings.Cut(strings.TrimSpace(part), "=")
			if !ok || name != st.cookieName {
				continue
			}
			c, primary, err := g.codec.Open(strings.Trim(value, `"`), st.snap.Room, now)
			if err == nil {
				return c, !primary
			}
		}
	}
	return nil, false
}

func (g *Gate) isHTTPS(r *http.Request) bool {
	if r.TLS != nil {
		return true
	}
	return g.cfg.TrustForwarded && strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https")
}

// countsNothing reports whether an effect has nothing for the report (most
// requests of running sessions), which spares the tally's lock.
func countsNothing(e admit.Effect) bool {
	return !e.NewVisitor && !e.Admitted && !e.Seen && e.Renewed.IsZero() && e.Revoked.IsZero() &&
		e.Waiting == 0 && !e.EarlyRefresh && !e.Closed
}

func newVisitorID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}
