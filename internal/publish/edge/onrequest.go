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

// requestPublish asks the publisher on request for name@version, which pkg
// (nil: no package document) does not list, waiting up to the edge's
// WaitForPublish. A Published answer comes with the package read afresh;
// when that read does not list the version yet, the answer is NotReady.
// Without a publisher the answer is NotApplicable.
func (s *Server) requestPublish(r *http.Request, name, version string, pkg *packageInfo) (*packageInfo, onrequest.Answer) {
	if s.cfg.OnRequest == nil {
		return nil, onrequest.Answer{Kind: onrequest.NotApplicable}
	}
	var published map[string]bool
	if pkg != nil {
		published = pkg.doc.Published()
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.WaitForPublish)
	defer cancel()
	a := s.cfg.OnRequest.Request(ctx, name, version, published)
	if a.Kind != onrequest.Published {
		return nil, a
	}
	// OnPublished forgot the cached document; a read already under way may
	// still bring the old one back once.
	for range 2 {
		fresh, found, err := s.meta.Package(name)
		if err == nil && found && fresh.hasVersion(version) {
			return fresh, a
		}
		s.meta.forgetPackage(name)
	}
	return nil, onrequest.Answer{Kind: onrequest.NotReady, RetryAfter: time.Second, Reason: "published; the metadata is not readable yet"}
}

// publishOnRequest handles a file or API request for name@version, which
// pkg (nil: no package document) does not list. When the version is
// published within the wait, it returns the package read afresh and
// answered false; when it has answered the request itself (404 with the
// reason, 503 with Retry-After) answered is true; with neither, the caller
// answers as it did before publishing on request existed.
func (s *Server) publishOnRequest(w http.ResponseWriter, r *http.Request, name, version string, pkg *packageInfo, api bool) (_ *packageInfo, answered bool) {
	fresh, a := s.requestPublish(r, name, version, pkg)
	switch a.Kind {
	case onrequest.Published:
		return fresh, false
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
	setCommonHeaders(w.Header())
	setNotReadyHeaders(w.Header(), retryAfter)
	s.log.Debug("version not ready", "path", r.URL.Path, "reason", reason, "retry_after", retryAfter)
	if api {
		writeJSONError(w, http.StatusServiceUnavailable, "Version not ready: "+reason)
		return
	}
	writeTextError(w, http.StatusServiceUnavailable, "version not ready: "+reason)
}

// setNotReadyHeaders marks an answer as one to retry after retryAfter
// (whole seconds, at least one) and to keep nowhere.
func setNotReadyHeaders(h http.Header, retryAfter time.Duration) int {
	seconds := max(1, int(math.Ceil(retryAfter.Seconds())))
	h.Set("Cache-Control", "no-store")
	h.Set("Retry-After", strconv.Itoa(seconds))
	return seconds
}
