package edge

import (
	"context"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/edgeflow/edgeflow/internal/publish/onrequest"
)

// OnRequest publishes a version on its first request; onrequest.Publisher
// is the one there is.
type OnRequest interface {
	// Request answers a request for name@version, which the edge does not
	// find published, waiting for its publish until ctx ends.
	Request(ctx context.Context, name, version string, published map[string]bool) onrequest.Answer
	// OnPublished sets what is called when a version it waited for is
	// published.
	OnPublished(func(name, version string))
}

// publishOnRequest handles a request for name@version, which pkg (nil: no
// package document) does not list. When the version is published within
// the wait, it returns the package read afresh and answered false; when it
// has answered the request itself (404 with the reason, 503 with
// Retry-After) answered is true; with neither, the caller answers as it
// did before publishing on request existed.
func (s *Server) publishOnRequest(w http.ResponseWriter, r *http.Request, name, version string, pkg *packageInfo, api bool) (_ *packageInfo, answered bool) {
	if s.cfg.OnRequest == nil {
		return nil, false
	}
	var published map[string]bool
	if pkg != nil {
		published = pkg.doc.Published()
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.WaitForPublish)
	defer cancel()
	a := s.cfg.OnRequest.Request(ctx, name, version, published)
	switch a.Kind {
	case onrequest.Published:
		// OnPublished forgot the cached document; a read already under way
		// may still bring the old one back once.
		for range 2 {
			fresh, found, err := s.meta.Package(name)
			if err == nil && found && fresh.hasVersion(version) {
				return fresh, false
			}
			s.meta.forgetPackage(name)
		}
		s.notReady(w, r, api, time.Second, "published; the metadata is not readable yet")
		return nil, true
	case onrequest.Refused:
		w.Header().Set("Cache-Control", notFoundCacheControl)
		if api {
			writeJSONError(w, http.StatusNotFound, "Version not found: "+a.Reason)
		} else {
			writeTextError(w, http.StatusNotFound, "version not found: "+a.Reason)
		}
		return nil, true
	case onrequest.NotReady:
		s.notReady(w, r, api, a.RetryAfter, a.Reason)
		return nil, true
	}
	return nil, false
}

// notReady answers 503 with Retry-After, never cached: the version may be
// there in seconds.
func (s *Server) notReady(w http.ResponseWriter, r *http.Request, api bool, retryAfter time.Duration, reason string) {
	h := w.Header()
	setCommonHeaders(h)
	h.Set("Cache-Control", "no-store")
	h.Set("Retry-After", strconv.Itoa(max(1, int(math.Ceil(retryAfter.Seconds())))))
	s.log.Debug("version not ready", "path", r.URL.Path, "reason", reason, "retry_after", retryAfter)
	if api {
		writeJSONError(w, http.StatusServiceUnavailable, "Version not ready: "+reason)
		return
	}
	writeTextError(w, http.StatusServiceUnavailable, "version not ready: "+reason)
}
