package edge

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/edgeflow/edgeflow/internal/publish/versions"
)

// Cache-Control values of file responses.
const (
	immutableCacheControl = "public, max-age=31536000, immutable"
	// A version range or tag moves when a release is published.
	redirectCacheControl = "public, max-age=300"
	// Short, so a library published right after a miss appears soon.
	notFoundCacheControl = "public, max-age=30"
)

// serveFile serves GET and HEAD /ajax/libs/<name>/<version>/<path>.
func (s *Server) serveFile(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	setCommonHeaders(h)
	name, version, path, ok := splitFilePath(strings.TrimPrefix(r.URL.Path, "/ajax/libs/"))
	if !ok {
		s.fileNotFound(w, "expected /ajax/libs/<library>/<version>/<file>")
		return
	}
	if !validName(name) {
		s.fileNotFound(w, "library not found")
		return
	}
	if !validVersionSpec(version) {
		s.fileNotFound(w, "version not found")
		return
	}
	pkg, found, err := s.meta.Package(name)
	if err != nil {
		s.unavailable(w, r, err)
		return
	}
	if !found {
		fresh, answered := s.publishOnRequest(w, r, name, version, nil, false)
		if answered {
			return
		}
		if fresh == nil {
			s.fileNotFound(w, "library not found")
			return
		}
		pkg = fresh
	}
	if !pkg.hasVersion(version) {
		resolved, ok := versions.Resolve(pkg.doc.Versions, version)
		if ok && resolved != version {
			target := filePath(name, resolved, path)
			if r.URL.RawQuery != "" {
				target += "?" + r.URL.RawQuery
			}
			h.Set("Cache-Control", redirectCacheControl)
			http.Redirect(w, r, target, http.StatusFound)
			return
		}
		fresh, answered := s.publishOnRequest(w, r, name, version, pkg, false)
		if answered {
			return
		}
		if fresh == nil {
			s.fileNotFound(w, "version not found")
			return
		}
		pkg = fresh
	}
	// The package document lists the version: a file served before needs
	// nothing more.
	key := servedKey{name, version, path}
	if sf, ok := s.served.Get(key); ok {
		s.serveRepresentation(w, r, sf)
		return
	}
	ver, found, err := s.meta.Version(pkg, version)
	if err != nil {
		s.unavailable(w, r, err)
		return
	}
	if !found {
		s.fileNotFound(w, "version not found")
		return
	}
	file, ok := ver.Lookup(path)
	if !ok {
		s.fileNotFound(w, "file not found")
		return
	}
	if _, err := file.CheckedKey(ver.Name, ver.Version); err != nil {
		// A document in a bucket must not make the edge serve another
		// package's objects under this one's URL.
		s.storedAtRefused(w, r, err)
		return
	}
	sf := newServedFile(ver, file)
	s.served.Add(key, sf, sf.cost(key))
	s.serveRepresentation(w, r, sf)
}

// serveRepresentation answers for one published file: it picks the
// representation, answers validators and ranges, and sends the body.
func (s *Server) serveRepresentation(w http.ResponseWriter, r *http.Request, sf *servedFile) {
	h := w.Header()
	file := sf.file
	identityTag := sf.reps[encIdentity].tag

	// A usable single range selects the identity representation; ranges of a
	// compressed representation are not offered. Ranges that cannot be used
	// (several ranges, bad syntax, a stale If-Range) give the whole file.
	var rng *byteRange
	if header := r.Header.Get("Range"); header != "" && ifRangeMatches(r.Header.Get("If-Range"), identityTag, sf.lastModified) {
		var unsatisfiable bool
		rng, unsatisfiable = parseRange(header, file.Size)
		if unsatisfiable {
			sf.setHeaders(h, encIdentity)
			h.Set("Content-Range", "bytes */"+strconv.FormatInt(file.Size, 10))
			h.Del("Content-Type")
			w.WriteHeader(http.StatusRequestedRangeNotSatisfiable)
			return
		}
	}
	enc := encIdentity
	if rng == nil {
		enc = negotiateEncoding(r.Header.Get("Accept-Encoding"), file)
	}
	sf.setHeaders(h, enc)
	if notModified(r, sf.reps[enc].tag, sf.lastModified) {
		h.Del("Content-Type")
		h.Del("Content-Encoding")
		w.WriteHeader(http.StatusNotModified)
		return
	}

	status := http.StatusOK
	rep := &sf.reps[enc]
	size := rep.size
	start, length := int64(0), size
	contentLength := rep.contentLength
	if rng != nil {
		status = http.StatusPartialContent
		start, length = rng.start, rng.length
		h.Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", start, start+length-1, size))
		contentLength = []string{strconv.FormatInt(length, 10)}
	}
	if r.Method == http.MethodHead {
		h["Content-Length"] = contentLength
		w.WriteHeader(status)
		return
	}

	key := rep.key
	body, err := s.openRepresentation(r.Context(), key, size, start, length)
	if err != nil && enc != encIdentity && r.Context().Err() == nil {
		// The compressed twin is unreadable everywhere; the original may not be.
		s.log.Warn("precompressed representation unavailable; serving the original", "key", key.objectKey(), "error", err)
		sf.setHeaders(h, encIdentity)
		rep = &sf.reps[encIdentity]
		key, start, length, size, contentLength = rep.key, 0, file.Size, file.Size, rep.contentLength
		body, err = s.openRepresentation(r.Context(), key, file.Size, 0, file.Size)
	}
	if err != nil {
		s.bodyUnavailable(w, r, key, err)
		return
	}
	if body.stream == nil && body.source != sourceCache && !s.files.Contains(key) {
		// A copy of our own (not the cache's) for as long as this client
		// takes to read it: bounded; past the bound, stream it instead.
		if !s.inflight.TryAcquire(int64(len(body.data))) {
			stream, source, err := s.openBody(r.Context(), key, start, length, size)
			if err != nil {
				s.bodyUnavailable(w, r, key, err)
				return
			}
			body = representationBody{stream: stream, source: source}
		} else {
			defer s.inflight.Release(int64(len(body.data)))
		}
	}
	h["X-Edge-Source"] = sourceHeaders[body.source]
	s.metrics.body(body.source)
	h["Content-Length"] = contentLength
	w.WriteHeader(status)
	if body.stream == nil {
		coalesceHeaders(r, len(body.data))
		_, _ = writeBody(w, body.data, s.cfg.WriteIdle)
		return
	}
	defer body.stream.Close()
	if n, err := io.CopyBuffer(newDeadlineWriter(w, s.cfg.WriteIdle), body.stream, make([]byte, deadlineChunk)); err != nil && r.Context().Err() == nil {
		// Headers are gone; the short body (less than Content-Length) makes
		// the server drop the connection so the client sees the failure.
		s.log.Error("file body failed mid-stream", "key", key.objectKey(), "source", body.source, "sent", n, "of", length, "error", err)
	}
}

// representationBody is bytes [start, start+length) of a representation:
// in memory for cacheable sizes, else a stream from a store.
type representationBody struct {
	data   []byte
	stream io.ReadCloser
	source string // "cache", "primary" or "mirror"
}

func (s *Server) openRepresentation(ctx context.Context, key fileCacheKey, size, start, length int64) (representationBody, error) {
	if size <= s.cfg.MaxCachedFile {
		data, source, err := s.smallBody(ctx, key, size)
		if err != nil {
			return representationBody{}, err
		}
		return representationBody{data: data[start : start+length], source: source}, nil
	}
	stream, source, err := s.openBody(ctx, key, start, length, size)
	return representationBody{stream: stream, source: source}, err
}

// setHeaders sets the headers of the representation in enc, all but
// Content-Length, from values built once.
func (sf *servedFile) setHeaders(h http.Header, enc encoding) {
	h["Cache-Control"] = immutableCacheControlHeader
	h["Vary"] = varyAcceptEncodingHeader
	h["Accept-Ranges"] = acceptRangesHeader
	h["Content-Type"] = sf.contentType
	h["Etag"] = sf.reps[enc].etag
	if sf.lastModifiedHeader != nil {
		h["Last-Modified"] = sf.lastModifiedHeader
	}
	if enc != encIdentity {
		h["Content-Encoding"] = contentEncodingHeaders[enc]
	} else {
		delete(h, "Content-Encoding")
	}
}

func (s *Server) fileNotFound(w http.ResponseWriter, message string) {
	w.Header().Set("Cache-Control", notFoundCacheControl)
	writeTextError(w, http.StatusNotFound, message)
}

// unavailable answers when metadata could not be read and nothing is cached.
func (s *Server) unavailable(w http.ResponseWriter, r *http.Request, err error) {
	s.log.Error("metadata unavailable", "path", r.URL.Path, "error", err)
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Retry-After", "5")
	if strings.HasPrefix(r.URL.Path, "/libraries") || r.URL.Path == "/stats" {
		writeJSONError(w, http.StatusServiceUnavailable, "Metadata temporarily unavailable")
		return
	}
	writeTextError(w, http.StatusServiceUnavailable, "metadata temporarily unavailable")
}

func (s *Server) bodyUnavailable(w http.ResponseWriter, r *http.Request, key fileCacheKey, err error) {
	s.log.Error("file unavailable from every store", "key", key.objectKey(), "error", err)
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	h.Set("Retry-After", "5")
	writeTextError(w, http.StatusBadGateway, "file temporarily unavailable")
}

// storedAtRefused answers for a file whose version document names a
// storedAt outside its package (metadata.CheckStoredAt): nothing is read.
func (s *Server) storedAtRefused(w http.ResponseWriter, r *http.Request, err error) {
	s.log.Error("version document names a storedAt outside its package; refused", "path", r.URL.Path, "error", err)
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	writeTextError(w, http.StatusBadGateway, "file unavailable")
}

// splitFilePath splits "<name>/<version>/<path>"; every part must be non-empty.
func splitFilePath(rest string) (name, version, path string, ok bool) {
	name, rest, ok1 := strings.Cut(rest, "/")
	version, path, ok2 := strings.Cut(rest, "/")
	if !ok1 || !ok2 || name == "" || version == "" || path == "" || strings.HasSuffix(path, "/") {
		return "", "", "", false
	}
	return name, version, path, true
}

// validName accepts the characters of catalog library names, so that other
// strings are answered without a bucket request.
func validName(name string) bool {
	if name == "" || len(name) > 214 || name[0] == '.' {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_') {
			return false
		}
	}
	return true
}

// validVersionSpec accepts exact versions, tags and the range syntax
// versions.Resolve understands.
func validVersionSpec(v string) bool {
	if v == "" || len(v) > 128 {
		return false
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte(".-+^~<>=*| ,", c) >= 0) {
			return false
		}
	}
	return true
}
