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
	// Hosts are the host names this gate serves (any case, no port): a
	// request naming another gets 421, one naming none 400, so a
	// host-scoped room cannot be bypassed with a Host no room names.
	// Empty: every Host is accepted.
	Hosts []string
	// AnyHost says an empty Hosts is meant (--hosts '*'): no warning.
	AnyHost bool
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
	hosts    map[string]bool // nil: every host
	tally    requestTally    // decisions per room, for /metrics
	renewals renewals        // the renewals sent to cookies not replaced yet
	// fallbacks count the custom pages replaced by the default page.
	fallbacks fallbackTally
	// renderClock times page renders: the wall clock, not the decisions'.
	renderClock func() time.Time
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
		log: cfg.Logger, now: cfg.Now, maxBody: cfg.MaxBodyBytes, renderClock: time.Now}
	if g.log == nil {
		g.log = slog.Default()
	}
	if g.now == nil {
		g.now = time.Now
	}
	if g.counters.Revocations == nil {
		g.counters.Revocations = &Revocations{}
	}
	if g.counters.Revocations.Signer == nil {
		// Revocations shared through Redis are signed with the cookie keys.
		g.counters.Revocations.Signer = NewRedisSigner(cfg.Keys)
	}
	if g.maxBody <= 0 {
		g.maxBody = DefaultMaxBodyBytes
	}
	for _, h := range cfg.Hosts {
		if n := normalizeHost(h); n != "" {
			if g.hosts == nil {
				g.hosts = map[string]bool{}
			}
			g.hosts[n] = true
		}
	}
	if g.hosts == nil && !cfg.AnyHost {
		g.log.Warn("no hosts given (--hosts): every Host is accepted, so a room that names a host is bypassed by a request with another Host or none")
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
	switch g.hostStatus(r.Host) {
	case http.StatusBadRequest:
		plain(w, http.StatusBadRequest, "The request names no host.")
		return
	case http.StatusMisdirectedRequest:
		plain(w, http.StatusMisdirectedRequest, "This site is not served here.")
		return
	}
	// The origin gets exactly the path the gate judges, whatever the
	// origin makes of dot-segments, doubled slashes or escapes.
	canonical, err := admit.CanonicalPath(requestPath(r.URL))
	if err != nil {
		msg := "The request's path is not valid."
		if errors.Is(err, admit.ErrEncodedSlash) {
			msg = "The request's path holds an encoded slash or a backslash, which this site does not accept."
		}
		plain(w, http.StatusBadRequest, msg)
		return
	}
	setPath(r.URL, canonical)
	room := g.rooms.Match(r.Host, r.URL.Path)
	if room == nil || isPreflight(r) {
		// No room covers it, or a browser asks whether it may send a
		// cross-origin request: preflights carry no cookie, so judging one
		// would count a new visitor (and spend a slot) for nothing.
		g.proxy.ServeHTTP(w, r)
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
	ck, sent, resealNeeded := g.openCookie(r, st, now)
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
	in.Lot = visitorLot(visitor)
	d, err := admit.Decide(r.Context(), in)
	moved := d.Effect // its session move, recorded once the cookie is known
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
	a := attributesFor(st.snap.Settings, st.cookieName, st.cookiePath)
	if next != nil && next != ck {
		// A running session's renewal is sealed once per cookie sent and
		// renewal interval, however often that cookie comes back.
		renewal := ck != nil && ck.Admitted() && d.Outcome == admit.Pass && guard == nil
		sealed := ""
		if renewal {
			if c, v, ok := g.renewals.get(sent, room.name, now, st.snap.MinuteLength()); ok {
				next, sealed = c, v
				moved = admit.Effect{} // moved when that renewal was sealed
			}
		}
		if sealed == "" {
			next.Expires = cookieExpiry(next, st.snap, now).UnixMilli()
			v, err := g.codec.Seal(next)
			switch {
			case err != nil:
				g.log.Error("seal cookie", "room", room.name, "err", err)
			case renewal:
				g.renewals.put(sent, next, v, now, st.snap.MinuteLength())
				fallthrough
			default:
				sealed = v
			}
		}
		if sealed != "" {
			w.Header().Add("Set-Cookie", a.header(sealed, now, time.UnixMilli(next.Expires)))
		}
	}

	if g.counters.Sessions != nil && next != ck {
		g.counters.Sessions.Record(room.name, moved)
	}

	switch d.Outcome {
	case admit.Pass, admit.Admit:
		if st.snap.Settings.RevokeEnabled() {
			// What fromOrigin needs to end the session; other rooms spare
			// the request's copy.
			rs := &requestState{w: w, room: room, st: st, ck: next, now: now, a: a}
			r = r.WithContext(context.WithValue(r.Context(), stateKey{}, rs))
		}
		g.proxy.ServeHTTP(w, r)
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

// hostStatus is 0 for a Host this gate serves, 400 for none, 421 for
// another.
func (g *Gate) hostStatus(host string) int {
	if g.hosts == nil {
		return 0
	}
	h := normalizeHost(host)
	switch {
	case h == "":
		return http.StatusBadRequest
	case !g.hosts[h]:
		return http.StatusMisdirectedRequest
	}
	return 0
}

// requestPath is the path as the visitor sent it, escapes included.
func requestPath(u *url.URL) string {
	if u.RawPath != "" {
		return u.RawPath // set only when it differs from the default escaping of Path
	}
	return u.EscapedPath()
}

// setPath makes u carry the canonical path, so the proxy forwards it as is.
func setPath(u *url.URL, canonical string) {
	decoded, err := url.PathUnescape(canonical)
	if err != nil {
		decoded = canonical // not reached: a canonical path's escapes are valid
	}
	u.Path, u.RawPath = decoded, canonical
}

// isPreflight reports a CORS preflight request.
func isPreflight(r *http.Request) bool {
	return r.Method == http.MethodOptions && r.Header.Get("Origin") != "" && r.Header.Get("Access-Control-Request-Method") != ""
}

// tryEntropy is the random bits of a visitor's refresh jitter before try
// n+1: the same for every copy of its cookie, different at each try.
func tryEntropy(visitor string, n int64) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(visitor))
	_, _ = h.Write([]byte(strconv.FormatInt(n, 10)))
	return h.Sum64()
}

// visitorLot is the visitor's place in a shuffled pre-queue (admit's
// Input.Lot): fixed by its visitor id, which the gate draws, so no copy of
// its cookie draws again.
func visitorLot(visitor string) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte("lot\x00" + visitor))
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
// sent is its value; resealNeeded: it opened with a key being rotated out.
func (g *Gate) openCookie(r *http.Request, st *roomState, now time.Time) (ck *Cookie, sent string, resealNeeded bool) {
	for _, line := range r.Header["Cookie"] {
		for part := range strings.SplitSeq(line, ";") {
			name, value, ok := strings.Cut(strings.TrimSpace(part), "=")
			if !ok || name != st.cookieName {
				continue
			}
			value = strings.Trim(value, `"`)
			c, primary, err := g.codec.Open(value, st.snap.Room, now)
			if err == nil {
				return c, value, !primary
			}
		}
	}
	return nil, "", false
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
