// Package edge is the HTTP edge of the CDN: it serves published files from the
// buckets the publish pipeline writes (through an in-memory cache, the primary
// store and, when the primary fails, the mirror), a cdnjs-compatible JSON API,
// and a small browsable web UI.
package edge

import (
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sync/semaphore"
	"golang.org/x/sync/singleflight"

	"github.com/edgeflow/edgeflow/internal/objectstore"
	"github.com/edgeflow/edgeflow/internal/publish/metadata"
)

// Config configures a Server. Zero values get the defaults documented per field.
type Config struct {
	// Primary holds the Files and Meta buckets; Mirror holds the Mirror
	// bucket with the same file objects and the MirrorMeta bucket with copies
	// of the metadata documents (it may be the same store).
	Primary, Mirror objectstore.Store
	Buckets         metadata.Buckets
	// CacheBytes bounds the in-memory cache of file bodies; 0 disables it.
	CacheBytes int64
	// MaxCachedFile is the largest body the cache keeps (default 1 MiB).
	// Larger files are streamed from the buckets.
	MaxCachedFile int64
	// MetaTTL is how long package documents and the search index are used
	// before being refreshed (default 30s). Version documents are immutable
	// and kept until evicted.
	MetaTTL time.Duration
	// NegativeTTL is how long a missing metadata document is remembered (default 5s).
	NegativeTTL time.Duration
	// MetaTimeout bounds one metadata fetch (default 5s), from the primary
	// and, if that fails, from the mirror. Only requests for documents never
	// seen before wait for it; the others are answered from the cached copy
	// while it refreshes.
	MetaTimeout time.Duration
	// PrimaryTimeout bounds a fetch from the primary store (the whole body for
	// cacheable files and metadata documents, the response headers for
	// streamed files) before the mirror is asked instead (default 2s).
	PrimaryTimeout time.Duration
	// MirrorTimeout bounds the same for the mirror (default 30s).
	MirrorTimeout time.Duration
	// PublicURL is the scheme and host put into absolute file URLs, e.g.
	// "https://cdn.example.com". Empty: taken from each request's Host and
	// X-Forwarded-Proto.
	PublicURL string
	// WriteIdle is how long a client may take to accept each 64 KiB of a
	// file (default 30s): the write deadline moves with the transfer, so a
	// slow reader cannot hold a connection or an HTTP/2 stream, while a
	// large file to a slow but live client still completes.
	WriteIdle time.Duration
	// InflightBytes bounds the file bodies held in memory for responses
	// beyond what the cache holds (default 64 MiB); past it, bodies are
	// streamed from the store in small pieces, so many slow clients cannot
	// make the edge hold a copy each.
	InflightBytes int64
	// OnRequest, when set, publishes a catalog library's version that is
	// not published yet on its first request (onrequest.Publisher); nil:
	// such a request is a 404, as before.
	OnRequest OnRequest
	// WaitForPublish is how long a request waits for that publish before
	// it is answered 503 with Retry-After (default 15s).
	WaitForPublish time.Duration
	Logger         *slog.Logger
	// Now is the clock (tests); default time.Now.
	Now func() time.Time
}

// Server is the edge. It is an http.Handler; Routes exposes its mux so more
// handlers (a waiting-room gate, health checks) can be mounted in the same
// process.
type Server struct {
	cfg   Config
	log   *slog.Logger
	meta  *metaReader
	files *lru[fileCacheKey, []byte]
	// served keeps what serving each published file needs, its headers
	// built (servedFile), for the files served lately.
	served *lru[servedKey, *servedFile]
	// metrics count cache hits and where bodies came from.
	metrics *edgeMetrics
	// fileFlight merges concurrent cache misses for one representation.
	fileFlight singleflight.Group
	mux        *http.ServeMux
	web        *webUI
	primary    *primaryHealth
	inflight   *semaphore.Weighted // bodies held beyond the cache, bytes
}

// Defaults for Config fields left zero.
const (
	DefaultMetaTTL        = 30 * time.Second
	DefaultNegativeTTL    = 5 * time.Second
	DefaultMetaTimeout    = 5 * time.Second
	DefaultPrimaryTimeout = 2 * time.Second
	DefaultMirrorTimeout  = 30 * time.Second
	DefaultMaxCachedFile  = 1 << 20
	DefaultWriteIdle      = 30 * time.Second
	DefaultInflightBytes  = 64 << 20
	DefaultWaitForPublish = 15 * time.Second
)

// New builds a Server. It makes no request to the stores.
func New(cfg Config) *Server {
	if cfg.MetaTTL <= 0 {
		cfg.MetaTTL = DefaultMetaTTL
	}
	if cfg.NegativeTTL <= 0 {
		cfg.NegativeTTL = DefaultNegativeTTL
	}
	if cfg.MetaTimeout <= 0 {
		cfg.MetaTimeout = DefaultMetaTimeout
	}
	if cfg.PrimaryTimeout <= 0 {
		cfg.PrimaryTimeout = DefaultPrimaryTimeout
	}
	if cfg.MirrorTimeout <= 0 {
		cfg.MirrorTimeout = DefaultMirrorTimeout
	}
	if cfg.MaxCachedFile <= 0 {
		cfg.MaxCachedFile = DefaultMaxCachedFile
	}
	if cfg.Mirror == nil {
		cfg.Mirror = cfg.Primary
	}
	if cfg.WriteIdle <= 0 {
		cfg.WriteIdle = DefaultWriteIdle
	}
	if cfg.InflightBytes <= 0 {
		cfg.InflightBytes = DefaultInflightBytes
	}
	if cfg.WaitForPublish <= 0 {
		cfg.WaitForPublish = DefaultWaitForPublish
	}
	if cfg.Buckets == (metadata.Buckets{}) {
		cfg.Buckets = metadata.DefaultBuckets
	}
	if cfg.Buckets.MirrorMeta == "" {
		cfg.Buckets.MirrorMeta = metadata.DefaultBuckets.MirrorMeta
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	cfg.PublicURL = strings.TrimRight(cfg.PublicURL, "/")
	health := &primaryHealth{now: cfg.Now}
	metaSrc := &metaSource{
		primary: store{"primary", cfg.Primary, cfg.Buckets.Meta, cfg.PrimaryTimeout, true},
		mirror:  store{"mirror", cfg.Mirror, cfg.Buckets.MirrorMeta, cfg.MirrorTimeout, false},
		health:  health,
		log:     cfg.Logger,
	}
	s := &Server{
		inflight: semaphore.NewWeighted(cfg.InflightBytes),
		cfg:      cfg,
		log:      cfg.Logger,
		meta:     newMetaReader(metaSrc, cfg.MetaTTL, cfg.NegativeTTL, cfg.MetaTimeout, cfg.Logger, cfg.Now),
		files:    newLRU[fileCacheKey, []byte](cfg.CacheBytes),
		served:   newLRU[servedKey, *servedFile](servedCacheBudget),
		mux:      http.NewServeMux(),
		primary:  health,
		metrics:  newEdgeMetrics(),
	}
	if cfg.OnRequest != nil {
		// The requests that waited for a publish read the package's
		// document afresh, and so does every request after them.
		cfg.OnRequest.OnPublished(func(name, _ string) { s.meta.forgetPackage(name) })
	}
	s.web = newWebUI(s)
	s.mux.HandleFunc("GET /ajax/libs/", s.serveFile)
	s.mux.HandleFunc("GET /ajax/libs", s.serveFile) // a 404, not the mux's redirect to "/ajax/libs/"
	s.mux.HandleFunc("GET /libraries", s.apiLibraries)
	s.mux.HandleFunc("GET /libraries/{name}", s.apiLibrary)
	s.mux.HandleFunc("GET /libraries/{name}/{version}", s.apiVersion)
	s.mux.HandleFunc("GET /stats", s.apiStats)
	s.web.register(s.mux)
	return s
}

// Routes is the mux the edge's handlers are registered on. Handlers added to
// it are served by ServeHTTP behind the same path checks; GET and HEAD
// requests under /ajax/libs/ are the files' and never reach it.
func (s *Server) Routes() *http.ServeMux { return s.mux }

// ServeHTTP rejects hostile paths before the mux sees them: the mux would
// answer a ".." path with a redirect to its cleaned form, and the edge
// answers it with a 4xx instead. Handlers mounted on Routes get the same
// protection. A file request, most of the edge's, goes straight to
// serveFile: the mux's matching costs it allocations and a tenth of what
// the edge does per request besides net/http's work and the system calls.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if status, reason := checkRequestPath(r); status != 0 {
		s.rejectPath(w, r, status, reason)
		return
	}
	if (r.Method == http.MethodGet || r.Method == http.MethodHead) && strings.HasPrefix(r.URL.Path, "/ajax/libs/") {
		s.serveFile(w, r)
		return
	}
	s.mux.ServeHTTP(w, r)
}

// maxPathLength bounds request paths; no published file comes close.
const maxPathLength = 1024

// checkRequestPath returns a 4xx status and a reason for paths that could
// name something other than a published file if passed on: overlong ones,
// encoded slashes or backslashes, backslashes, control bytes, and empty, "."
// or ".." segments.
func checkRequestPath(r *http.Request) (int, string) {
	return checkPath(r.URL.EscapedPath(), r.URL.Path)
}

// checkPath is checkRequestPath of a path and its escaped form.
func checkPath(escaped, p string) (int, string) {
	if len(escaped) > maxPathLength || len(p) > maxPathLength {
		return http.StatusRequestURITooLong, "path too long"
	}
	lowerEscaped := strings.ToLower(escaped)
	for _, bad := range []string{"%2f", "%5c", "%00", "\\"} {
		if strings.Contains(lowerEscaped, bad) {
			return http.StatusBadRequest, "encoded slash, backslash or NUL in path"
		}
	}
	for i := 0; i < len(p); i++ {
		if c := p[i]; c < 0x20 || c == 0x7f || c == '\\' {
			return http.StatusBadRequest, "control character or backslash in path"
		}
	}
	for seg := range strings.SplitSeq(strings.TrimPrefix(p, "/"), "/") {
		switch seg {
		case ".", "..":
			return http.StatusBadRequest, "dot segment in path"
		}
	}
	if strings.Contains(p, "//") {
		return http.StatusBadRequest, "empty segment in path"
	}
	return 0, ""
}

func (s *Server) rejectPath(w http.ResponseWriter, r *http.Request, status int, reason string) {
	s.log.Debug("rejected request path", "status", status, "reason", reason, "path", r.URL.EscapedPath())
	setCommonHeaders(w.Header())
	w.Header().Set("Cache-Control", "no-store")
	if strings.HasPrefix(r.URL.Path, "/libraries") {
		writeJSONError(w, status, reason)
		return
	}
	writeTextError(w, status, reason)
}

// setCommonHeaders sets what every edge response carries: open CORS (the
// files are public and loaded cross-origin with SRI), resource timing for
// other origins, and no MIME sniffing. The values are shared (served.go).
func setCommonHeaders(h http.Header) {
	h["Access-Control-Allow-Origin"] = wildcardHeader
	h["Timing-Allow-Origin"] = wildcardHeader
	h["Cross-Origin-Resource-Policy"] = crossOriginHeader
	h["X-Content-Type-Options"] = nosniffHeader
}

func writeTextError(w http.ResponseWriter, status int, message string) {
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Del("Content-Encoding")
	h.Del("Content-Length")
	h.Del("ETag")
	h.Del("Last-Modified")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(http.StatusText(status) + ": " + message + "\n"))
}

// baseURL is the scheme and host of absolute URLs in responses: the
// configured public URL, else the request's Host and X-Forwarded-Proto,
// which any client can set. A response built from those says so with
// Vary, so no shared cache hands one client's URLs to another.
func (s *Server) baseURL(w http.ResponseWriter, r *http.Request) string {
	if s.cfg.PublicURL != "" {
		return s.cfg.PublicURL
	}
	addVary(w.Header(), "Host", "X-Forwarded-Proto")
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	switch strings.ToLower(r.Header.Get("X-Forwarded-Proto")) {
	case "https":
		scheme = "https"
	case "http":
		scheme = "http"
	}
	host := r.Host
	if host == "" || strings.ContainsAny(host, " /\\\"'<>") {
		host = "localhost"
	}
	return scheme + "://" + host
}

// addVary adds names to the Vary header (one comma-separated line), once each.
func addVary(h http.Header, names ...string) {
	var list []string
	have := map[string]bool{}
	for _, v := range append(h.Values("Vary"), names...) {
		for _, n := range strings.Split(v, ",") {
			if n = strings.TrimSpace(n); n != "" && !have[strings.ToLower(n)] {
				have[strings.ToLower(n)] = true
				list = append(list, n)
			}
		}
	}
	h.Set("Vary", strings.Join(list, ", "))
}

// fileURL is the absolute URL of a published file.
func (s *Server) fileURL(base, name, version, path string) string {
	return base + filePath(name, version, path)
}

// filePath is the edge path of a published file, escaped for use in a URL.
func filePath(name, version, path string) string {
	var b strings.Builder
	b.WriteString("/ajax/libs/")
	b.WriteString(escapeSegment(name))
	b.WriteByte('/')
	b.WriteString(escapeSegment(version))
	for seg := range strings.SplitSeq(path, "/") {
		b.WriteByte('/')
		b.WriteString(escapeSegment(seg))
	}
	return b.String()
}

// primaryHealth is a small circuit breaker: after the primary fails, it is
// skipped for a short while so that requests go straight to the mirror
// instead of each waiting for the primary's timeout first.
type primaryHealth struct {
	downUntil atomic.Int64 // unix nanoseconds
	now       func() time.Time
}

// primaryCooldown is how long the primary is skipped after a failure.
const primaryCooldown = 3 * time.Second

func (p *primaryHealth) available() bool { return p.now().UnixNano() >= p.downUntil.Load() }
func (p *primaryHealth) failed()         { p.downUntil.Store(p.now().Add(primaryCooldown).UnixNano()) }

// errBothStoresFailed is returned when neither store could provide a body or
// a metadata document.
var errBothStoresFailed = errors.New("primary and mirror both failed")
