package console

import (
	"fmt"
	"math"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"

	"github.com/edgeflow/edgeflow/internal/console/failure"
	"github.com/edgeflow/edgeflow/internal/console/web"
)

// CodeThrottled is a 429: too many failed attempts from the client's address.
const CodeThrottled = 10002

// front is in front of every route: it gives the request its id, finds
// the client's address and scheme (a trusted proxy's X-Forwarded-For and
// X-Forwarded-Proto, else the TCP peer and the connection), and throttles
// the doors a secret is guessed at (/api/v1's bearer tokens, the sign-in
// form, the GitHub hook's signatures) by failures per client address.
type front struct {
	trusted []netip.Prefix
	limiter *failureLimiter
	metrics *throttleMetrics
	next    http.Handler
}

func (f *front) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id := failure.NewRequestID()
	w.Header().Set("X-Request-Id", id)
	r = r.WithContext(failure.WithRequestID(r.Context(), id))
	peer, fromProxy := f.peer(r)
	if r.TLS != nil || (fromProxy && lastValue(r.Header.Values("X-Forwarded-Proto")) == "https") {
		r = web.WithHTTPS(r)
	}
	door := guardedDoor(r)
	if door == "" {
		f.next.ServeHTTP(w, r)
		return
	}
	client := f.clientAddr(r, peer, fromProxy)
	// A throttled address is not heard at all, a right secret included:
	// answering a right guess with 200 while wrong ones get 429 would tell
	// a guesser which one was right at any rate.
	if wait := f.limiter.wait(client); wait > 0 {
		f.metrics.throttled[door].Inc()
		secs := int(math.Ceil(wait.Seconds()))
		w.Header().Set("Retry-After", strconv.Itoa(secs))
		msg := fmt.Sprintf("too many failed attempts from this address; try again in %d s", secs)
		switch door {
		case doorAPI:
			writeError(w, fail(http.StatusTooManyRequests, CodeThrottled, "Authorization: %s", msg))
		case doorHook:
			http.Error(w, "webhook: "+msg, http.StatusTooManyRequests)
		default:
			http.Error(w, "sign-in: "+msg, http.StatusTooManyRequests)
		}
		return
	}
	rec := &statusRecorder{ResponseWriter: w}
	f.next.ServeHTTP(rec, r)
	if rec.status == http.StatusUnauthorized {
		f.limiter.failed(client)
		f.metrics.failures[door].Inc()
	}
}

// guardedDoor is the throttled door r comes through, or "".
func guardedDoor(r *http.Request) string {
	switch {
	case strings.HasPrefix(r.URL.Path, "/api/v1/"):
		return doorAPI
	case r.Method == http.MethodPost && r.URL.Path == "/signin":
		return doorSignIn
	case r.URL.Path == "/hooks/github":
		return doorHook
	}
	return ""
}

// peer is the TCP peer's address and whether it is a trusted proxy.
func (f *front) peer(r *http.Request) (netip.Addr, bool) {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}, false
	}
	a = a.Unmap()
	return a, f.trusts(a)
}

func (f *front) trusts(a netip.Addr) bool {
	for _, p := range f.trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// clientAddr is the TCP peer, or behind trusted proxies the nearest
// address in X-Forwarded-For that is not one of them: the entries left of
// it were written by whoever sent the request and prove nothing.
func (f *front) clientAddr(r *http.Request, peer netip.Addr, fromProxy bool) netip.Addr {
	if !fromProxy {
		return peer
	}
	var hops []string
	for _, v := range r.Header.Values("X-Forwarded-For") {
		hops = append(hops, strings.Split(v, ",")...)
	}
	client := peer
	for i := len(hops) - 1; i >= 0; i-- {
		a, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
		if err != nil {
			return client // a malformed hop: the last one a trusted proxy vouched for
		}
		client = a.Unmap()
		if !f.trusts(client) {
			return client
		}
	}
	return client
}

// lastValue is the last comma-separated value of a header: the one the
// nearest proxy (the trusted one) wrote.
func lastValue(values []string) string {
	if len(values) == 0 {
		return ""
	}
	v := values[len(values)-1]
	if i := strings.LastIndexByte(v, ','); i >= 0 {
		v = v[i+1:]
	}
	return strings.ToLower(strings.TrimSpace(v))
}

// statusRecorder notes the status a handler answered with.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection (a key list's
// upload extends its read deadline).
func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// ParseTrustedProxies reads --trust-forwarded: comma-separated CIDRs (or
// single addresses) of the proxies whose X-Forwarded-For and
// X-Forwarded-Proto the console believes. Empty: none.
func ParseTrustedProxies(v string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, item := range strings.Split(v, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		if p, err := netip.ParsePrefix(item); err == nil {
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(item)
		if err != nil {
			return nil, fmt.Errorf("--trust-forwarded: %q is not a CIDR or an address (like 10.0.0.0/8 or 127.0.0.1)", item)
		}
		a = a.Unmap()
		out = append(out, netip.PrefixFrom(a, a.BitLen()))
	}
	return out, nil
}
