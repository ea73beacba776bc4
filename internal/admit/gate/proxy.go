package gate

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/edgeflow/edgeflow/internal/admit"
)

// OriginTimeouts bound every connection to the origin.
type OriginTimeouts struct {
	Dial           time.Duration // connect (and TLS handshake)
	ResponseHeader time.Duration // from the request sent to the response's headers
	Idle           time.Duration // idle keep-alive connections are closed after
}

// DefaultOriginTimeouts are the gate's defaults.
var DefaultOriginTimeouts = OriginTimeouts{Dial: 5 * time.Second, ResponseHeader: 60 * time.Second, Idle: 90 * time.Second}

// NewTransport is the gate's client transport to the origin: bounded
// connects, handshakes and waits for headers, and enough idle connections
// kept for a busy gate.
func NewTransport(t OriginTimeouts) *http.Transport {
	dialer := &net.Dialer{Timeout: t.Dial, KeepAlive: 30 * time.Second}
	return &http.Transport{
		Proxy:                 nil, // the origin is reached directly, whatever HTTP_PROXY says
		DialContext:           dialer.DialContext,
		TLSHandshakeTimeout:   t.Dial,
		ResponseHeaderTimeout: t.ResponseHeader,
		ExpectContinueTimeout: time.Second,
		IdleConnTimeout:       t.Idle,
		MaxIdleConns:          1024,
		MaxIdleConnsPerHost:   512,
		ForceAttemptHTTP2:     true,
	}
}

// RevokeHeader is the origin's command to end a visitor's session
// (Cloudflare Waiting Room's name), honoured when the room enables "revoke".
const RevokeHeader = "Cf-Waiting-Room-Command"

// newProxy is the reverse proxy to the origin. The visitor's Host header is
// kept (rooms route by it, and so may the origin) unless rewriteHost.
func (g *Gate) newProxy(origin *url.URL, transport http.RoundTripper, rewriteHost, trustForwarded bool) *httputil.ReverseProxy {
	return &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(origin)
			if trustForwarded {
				// Rewrite drops the inbound X-Forwarded-*; keep the chain and
				// the scheme the proxy in front saw.
				pr.Out.Header["X-Forwarded-For"] = pr.In.Header["X-Forwarded-For"]
			}
			pr.SetXForwarded()
			if trustForwarded {
				if proto := pr.In.Header.Get("X-Forwarded-Proto"); proto != "" {
					pr.Out.Header.Set("X-Forwarded-Proto", proto)
				}
			}
			if !trustForwarded {
				// A visitor could name any address in these; origins that
				// rate-limit or log by them would believe it.
				for _, h := range clientIPHeaders {
					pr.Out.Header.Del(h)
				}
			}
			if !rewriteHost {
				pr.Out.Host = pr.In.Host
			}
		},
		Transport:      transport,
		BufferPool:     copyBuffers,
		ModifyResponse: g.fromOrigin,
		ErrorHandler:   g.originFailed,
		ErrorLog:       slog.NewLogLogger(g.log.Handler(), slog.LevelWarn),
	}
}

// copyBuffers are the buffers responses are copied through: without them
// the reverse proxy allocates 32 KiB for every request, most of what a
// proxied request allocates, and the collector's work follows.
var copyBuffers httputil.BufferPool = &bufferPool{}

type bufferPool struct{ p sync.Pool }

func (b *bufferPool) Get() []byte {
	if buf, ok := b.p.Get().(*[]byte); ok {
		return *buf
	}
	return make([]byte, 32<<10)
}

func (b *bufferPool) Put(buf []byte) { b.p.Put(&buf) }

// clientIPHeaders name the visitor's address the way proxies and CDNs in
// front set them; the origin gets them only from a trusted proxy in front
// (Forwarded and X-Forwarded-* are already replaced by the reverse proxy).
var clientIPHeaders = []string{"X-Real-Ip", "True-Client-Ip", "Cf-Connecting-Ip", "X-Client-Ip", "X-Cluster-Client-Ip", "Fastly-Client-Ip"}

// requestState travels with a request to the origin, for what the gate does
// with the response.
type requestState struct {
	w    http.ResponseWriter
	room *Room
	st   *roomState
	ck   *Cookie // the visitor's cookie as the response sets it (nil: none)
	now  time.Time
	a    cookieAttributes
}

type stateKey struct{}

// fromOrigin acts on the origin's revoke command: the command is for the
// gate and never reaches the visitor; when the room enables it, the
// visitor's session ends here (counted, marked revoked, cookie deleted).
func (g *Gate) fromOrigin(resp *http.Response) error {
	cmd := resp.Header.Values(RevokeHeader)
	if len(cmd) == 0 {
		return nil
	}
	resp.Header.Del(RevokeHeader)
	if !hasToken(cmd, "revoke") {
		return nil
	}
	rs, _ := resp.Request.Context().Value(stateKey{}).(*requestState)
	if rs == nil || rs.ck == nil {
		return nil
	}
	eff, ok := admit.Revoke(rs.st.snap, &rs.ck.Ticket, rs.now)
	if !ok {
		return nil
	}
	rs.room.tally.Add(eff)
	if g.counters.Sessions != nil {
		g.counters.Sessions.Record(rs.room.name, eff)
	}
	s := rs.st.snap.Settings
	until := rs.ck.SessionStart(s.DisableSessionRenewal).Add(time.Duration(s.SessionDuration+1) * rs.st.snap.MinuteLength())
	// Held here at once; other gates learn it in the background.
	g.counters.Revocations.Revoke(rs.room.name, rs.ck.VisitorID, until, rs.now)
	h := rs.w.Header()
	h.Del("Set-Cookie") // only the gate's own is there yet: the origin's are copied after this
	h.Add("Set-Cookie", rs.a.header("", rs.now, time.Time{}))
	return nil
}

func hasToken(values []string, token string) bool {
	for _, v := range values {
		for _, part := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(part), token) {
				return true
			}
		}
	}
	return false
}

// originFailed answers when the origin could not be reached or did not
// answer in time: 502 or 504 with a plain reason and nothing internal; the
// details go to the log. A request over the size limit is a 413, and a
// visitor who went away gets nothing.
func (g *Gate) originFailed(w http.ResponseWriter, r *http.Request, err error) {
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		plain(w, http.StatusRequestEntityTooLarge, "The request body is too large.")
		return
	case errors.Is(err, context.Canceled) && r.Context().Err() != nil:
		return // the visitor left; nobody to answer
	}
	status, msg := http.StatusBadGateway, "The site's server could not be reached. Please try again in a moment."
	var ne net.Error
	if errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
		status, msg = http.StatusGatewayTimeout, "The site's server did not answer in time. Please try again in a moment."
	}
	g.log.Warn("origin request failed", "method", r.Method, "path", r.URL.Path, "status", status, "err", err)
	plain(w, status, msg)
}

func plain(w http.ResponseWriter, status int, msg string) {
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(msg + "\n"))
}
