package gate

import (
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
