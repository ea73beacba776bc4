package cdn

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/edgeflow/edgeflow/internal/objectstore"
	"github.com/edgeflow/edgeflow/internal/publish/metadata"
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
		s.fileNotFound(w, "library not found")
		return
	}
	if !pkg.hasVersion(version) {
		resolved, ok := versions.Resolve(pkg.doc.Versions, version)
		if !ok || resolved == version {
			s.fileNotFound(w, "version not found")
			return
		}
		target := filePath(name, resolved, path)
		if r.URL.RawQuery != "" {
			target += "?" + r.URL.RawQuery
		}
		h.Set("Cache-Control", redirectCacheControl)
		http.Redirect(w, r, target, http.StatusFound)
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
	s.serveRepresentation(w, r, ver, file)
}

// serveRepresentation answers for one published file: it picks the
// representation, answers validators and ranges, and sends the body.
func (s *Server) serveRepresentation(w http.ResponseWriter, r *http.Request, ver *metadata.Version, file metadata.File) {
	h := w.Header()
	lastModified := ver.PublishedAt.UTC().Truncate(time.Second)
	identityTag := entityTag(ver, file, encIdentity)

	// A usable single range selects the identity representation; ranges of a
	// compressed representation are not offered. Ranges that cannot be used
	// (several ranges, bad syntax, a stale If-Range) give the whole file.
	var rng *byteRange
	if header := r.Header.Get("Range"); header != "" && ifRangeMatches(r.Header.Get("If-Range"), identityTag, lastModified) {
		var unsatisfiable bool
		rng, unsatisfiable = parseRange(header, file.Size)
		if unsatisfiable {
			s.setFileHeaders(h, ver, file, encIdentity, identityTag, lastModified)
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
	tag := identityTag
	if enc != encIdentity {
		tag = entityTag(ver, file, enc)
	}
	s.setFileHeaders(h, ver, file, enc, tag, lastModified)
	if notModified(r, tag, lastModified) {
		h.Del("Content-Type")
		h.Del("Content-Encoding")
		w.WriteHeader(http.StatusNotModified)
		return
	}

	status := http.StatusOK
	size := enc.size(file)
	start, length := int64(0), size
	if rng != nil {
		status = http.StatusPartialContent
		start, length = rng.start, rng.length
		h.Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", start, start+length-1, size))
	}
	if r.Method == http.MethodHead {
		h.Set("Content-Length", strconv.FormatInt(length, 10))
		w.WriteHeader(status)
		return
	}

	key := representationKey(ver, file, enc)
	body, err := s.openRepresentation(r.Context(), key, size, start, length)
	if err != nil && enc != encIdentity && r.Context().Err() == nil {
		// The compressed twin is unreadable everywhere; the original may not be.
		s.log.Warn("precompressed representation unavailable; serving the original", "key", key.objectKey(), "error", err)
		s.setFileHeaders(h, ver, file, encIdentity, identityTag, lastModified)
		key, length = representationKey(ver, file, encIdentity), file.Size
		body, err = s.openRepresentation(r.Context(), key, file.Size, 0, file.Size)
	}
	if err != nil {
		s.bodyUnavailable(w, r, key, err)
		return
	}
	h.Set("X-Edge-Source", body.source)
	h.Set("Content-Length", strconv.FormatInt(length, 10))
	w.WriteHeader(status)
	if body.stream == nil {
		_, _ = w.Write(body.data)
		return
	}
	defer body.stream.Close()
	if n, err := io.Copy(w, body.stream); err != nil && r.Context().Err() == nil {
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

func (s *Server) setFileHeaders(h http.Header, ver *metadata.Version, file metadata.File, enc encoding, tag string, lastModified time.Time) {
	h["Cache-Control"] = []string{immutableCacheControl}
	h["Vary"] = []string{"Accept-Encoding"}
	h["Accept-Ranges"] = []string{"bytes"}
	h["Content-Type"] = []string{contentTypeOf(file)}
	h["Etag"] = []string{tag}
	if !lastModified.IsZero() && !ver.PublishedAt.IsZero() {
		h["Last-Modified"] = []string{lastModified.Format(http.TimeFormat)}
	}
	if enc != encIdentity {
		h["Content-Encoding"] = []string{enc.token()}
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

// encoding is one stored representation of a file.
type encoding uint8

const (
	encIdentity encoding = iota
	encBrotli
	encGzip
)

// token is the Content-Encoding value.
func (e encoding) token() string {
	switch e {
	case encBrotli:
		return "br"
	case encGzip:
		return "gzip"
	}
	return ""
}

// suffix is the key suffix of the stored representation.
func (e encoding) suffix() string {
	switch e {
	case encBrotli:
		return metadata.BrotliSuffix
	case encGzip:
		return metadata.GzipSuffix
	}
	return ""
}

// size is the byte length of the representation (0 when it is not stored).
func (e encoding) size(f metadata.File) int64 {
	switch e {
	case encBrotli:
		return f.BrotliSize
	case encGzip:
		return f.GzipSize
	}
	return f.Size
}

// negotiateEncoding picks the representation by the Accept-Encoding header:
// the stored one with the highest q-value, preferring brotli, then gzip, then
// identity at equal q. Without the header, identity is sent. When nothing
// acceptable is stored (identity;q=0 and no usable compression), identity is
// sent all the same, which RFC 9110 allows instead of a 406.
func negotiateEncoding(header string, f metadata.File) encoding {
	if header == "" || f.BrotliSize == 0 && f.GzipSize == 0 {
		return encIdentity
	}
	qBrotli, qGzip, qIdentity, qAny := -1.0, -1.0, -1.0, -1.0 // -1: not mentioned
	for part := range strings.SplitSeq(header, ",") {
		coding, params, _ := strings.Cut(part, ";")
		q := 1.0
		for param := range strings.SplitSeq(params, ";") {
			k, v, _ := strings.Cut(param, "=")
			if strings.EqualFold(strings.TrimSpace(k), "q") {
				parsed, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
				if err != nil || parsed < 0 || parsed > 1 {
					parsed = 0 // an unreadable weight does not make a coding acceptable
				}
				q = parsed
			}
		}
		switch strings.ToLower(strings.TrimSpace(coding)) {
		case "br":
			qBrotli = q
		case "gzip", "x-gzip":
			qGzip = q
		case "identity":
			qIdentity = q
		case "*":
			qAny = q
		}
	}
	effective := func(q float64) float64 {
		switch {
		case q >= 0:
			return q
		case qAny >= 0:
			return qAny
		}
		return 0
	}
	best, bestQ := encIdentity, effective(qIdentity)
	if qIdentity < 0 && qAny < 0 {
		bestQ = 1 // identity is acceptable unless excluded
	}
	if q := effective(qGzip); f.GzipSize > 0 && q > 0 && q >= bestQ {
		best, bestQ = encGzip, q
	}
	if q := effective(qBrotli); f.BrotliSize > 0 && q > 0 && q >= bestQ {
		best = encBrotli
	}
	return best
}

// entityTag is the strong ETag of one representation: the first 16 hex
// digits of the file's integrity digest plus the encoding, so equal content
// has equal tags across versions and the tag never depends on the store.
func entityTag(ver *metadata.Version, f metadata.File, enc encoding) string {
	digest := sriPrefixHex(f.SRI)
	if digest == "" {
		// No usable SRI: fall back to the identity of the published file,
		// which is immutable too.
		digest = strconv.FormatUint(fnv64(ver.Name+"@"+ver.Version+"/"+f.Path), 16) + "-" + strconv.FormatInt(f.Size, 16)
	}
	switch enc {
	case encBrotli:
		return `"` + digest + `-br"`
	case encGzip:
		return `"` + digest + `-gz"`
	}
	return `"` + digest + `"`
}

// sriPrefixHex returns the first 8 bytes of an SRI digest ("sha512-<base64>") in hex.
func sriPrefixHex(sri string) string {
	_, b64, ok := strings.Cut(sri, "-")
	if !ok || len(b64) < 12 {
		return ""
	}
	// 12 base64 characters decode to 9 bytes, enough for 8.
	var buf [9]byte
	if _, err := base64.StdEncoding.Decode(buf[:], []byte(b64[:12])); err != nil {
		return ""
	}
	return hex.EncodeToString(buf[:8])
}

func fnv64(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}

// contentTypeOf is the version document's type, with a UTF-8 charset added
// to textual types that lack one.
func contentTypeOf(f metadata.File) string {
	ct := f.ContentType
	if ct == "" {
		return "application/octet-stream"
	}
	if strings.Contains(ct, "charset=") {
		return ct
	}
	base := strings.ToLower(strings.TrimSpace(strings.SplitN(ct, ";", 2)[0]))
	if strings.HasPrefix(base, "text/") || strings.HasSuffix(base, "+json") || strings.HasSuffix(base, "+xml") ||
		base == "application/javascript" || base == "application/json" || base == "application/xml" {
		return ct + "; charset=utf-8"
	}
	return ct
}

// notModified evaluates If-None-Match, or If-Modified-Since when there is no
// If-None-Match (RFC 9110 §13.2.2).
func notModified(r *http.Request, tag string, lastModified time.Time) bool {
	if inm := r.Header.Get("If-None-Match"); inm != "" {
		return etagListMatches(inm, tag)
	}
	if ims := r.Header.Get("If-Modified-Since"); ims != "" && !lastModified.IsZero() {
		t, err := http.ParseTime(ims)
		return err == nil && !lastModified.After(t)
	}
	return false
}

// etagListMatches is the weak comparison of If-None-Match against tag.
func etagListMatches(list, tag string) bool {
	tag = strings.TrimPrefix(tag, "W/")
	for candidate := range strings.SplitSeq(list, ",") {
		candidate = strings.TrimSpace(candidate)
		if candidate == "*" || strings.TrimPrefix(candidate, "W/") == tag {
			return true
		}
	}
	return false
}

// ifRangeMatches reports whether a Range may be honoured given If-Range: an
// entity tag must match strongly, a date must equal Last-Modified.
func ifRangeMatches(ifRange, identityTag string, lastModified time.Time) bool {
	switch {
	case ifRange == "":
		return true
	case strings.HasPrefix(ifRange, `"`):
		return ifRange == identityTag
	case strings.HasPrefix(ifRange, "W/"):
		return false
	}
	t, err := http.ParseTime(ifRange)
	return err == nil && !lastModified.IsZero() && lastModified.Equal(t)
}

// byteRange is [start, start+length).
type byteRange struct{ start, length int64 }

// parseRange reads a single-range "bytes=" header against a body of size
// bytes. It returns nil, false when the header is to be ignored (another
// unit, several ranges, bad syntax: the whole body is sent) and nil, true
// when the range cannot be satisfied (416).
func parseRange(header string, size int64) (*byteRange, bool) {
	spec, ok := strings.CutPrefix(header, "bytes=")
	if !ok || strings.Contains(spec, ",") {
		return nil, false
	}
	first, last, ok := strings.Cut(strings.TrimSpace(spec), "-")
	if !ok {
		return nil, false
	}
	first, last = strings.TrimSpace(first), strings.TrimSpace(last)
	if first == "" {
		n, ok := parseDigits(last)
		if !ok {
			return nil, false
		}
		if n == 0 || size == 0 {
			return nil, true
		}
		n = min(n, size)
		return &byteRange{start: size - n, length: n}, false
	}
	start, ok := parseDigits(first)
	if !ok {
		return nil, false
	}
	end := size - 1
	if last != "" {
		if end, ok = parseDigits(last); !ok || end < start {
			return nil, false
		}
	}
	if start >= size {
		return nil, true
	}
	end = min(end, size-1)
	return &byteRange{start: start, length: end - start + 1}, false
}

// parseDigits parses a non-empty run of decimal digits (no sign, no spaces).
func parseDigits(s string) (int64, bool) {
	if s == "" || len(s) > 18 {
		return 0, false
	}
	var n int64
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
		n = n*10 + int64(s[i]-'0')
	}
	return n, true
}

// fileCacheKey names one representation of one published file by the object
// holding its bytes: a file reused from an earlier version is read (and
// cached once) where that version stored it.
type fileCacheKey struct {
	object string
	enc    encoding
}

func representationKey(ver *metadata.Version, f metadata.File, enc encoding) fileCacheKey {
	return fileCacheKey{object: f.Key(ver.Name, ver.Version), enc: enc}
}

// objectKey is the bucket key of the representation.
func (k fileCacheKey) objectKey() string {
	return k.object + k.enc.suffix()
}

// cacheEntryOverhead approximates the memory of a cache entry beyond its body.
const cacheEntryOverhead = 256

// smallBody returns a whole (cacheable-size) representation: from the cache,
// else from the primary, else from the mirror. Concurrent misses for one key
// share a single fetch. source is "cache", "primary" or "mirror".
func (s *Server) smallBody(ctx context.Context, key fileCacheKey, size int64) (data []byte, source string, err error) {
	if data, ok := s.files.Get(key); ok {
		return data, "cache", nil
	}
	type result struct {
		data   []byte
		source string
	}
	// The fetch is shared, so it must not die with the first requester.
	ch := s.fileFlight.DoChan(key.objectKey(), func() (any, error) {
		data, source, err := s.fetchWhole(context.WithoutCancel(ctx), key, size)
		if err != nil {
			return nil, err
		}
		s.files.Add(key, data, int64(len(data))+cacheEntryOverhead+int64(len(key.object)))
		return result{data, source}, nil
	})
	select {
	case res := <-ch:
		if res.Err != nil {
			return nil, "", res.Err
		}
		r := res.Val.(result)
		return r.data, r.source, nil
	case <-ctx.Done():
		return nil, "", ctx.Err()
	}
}

// store is one place a file body can come from.
type store struct {
	name    string
	store   objectstore.Store
	bucket  string
	timeout time.Duration
	primary bool
}

// stores lists the places to read a file from, in order: the primary then
// the mirror, or the mirror first while the primary is in its cooldown after
// a failure (it stays the last resort).
func (s *Server) stores() [2]store {
	primary := store{"primary", s.cfg.Primary, s.cfg.Buckets.Files, s.cfg.PrimaryTimeout, true}
	mirror := store{"mirror", s.cfg.Mirror, s.cfg.Buckets.Mirror, s.cfg.MirrorTimeout, false}
	if s.primary.available() {
		return [2]store{primary, mirror}
	}
	return [2]store{mirror, primary}
}

// noteFailure logs a failed read and trips the primary's breaker when the
// store itself failed (a missing object means the store works).
func (s *Server) noteFailure(st store, key string, err error) {
	if st.primary && !errors.Is(err, objectstore.ErrNotFound) {
		s.primary.failed()
	}
	next := "mirror"
	if !st.primary {
		next = "primary"
	}
	s.log.Warn("file read failed; trying the other store", "store", st.name, "next", next, "key", key, "error", err)
}

func (s *Server) fetchWhole(ctx context.Context, key fileCacheKey, size int64) ([]byte, string, error) {
	objKey := key.objectKey()
	var errs []error
	for _, st := range s.stores() {
		fctx, cancel := context.WithTimeout(ctx, st.timeout)
		data, _, err := objectstore.ReadAll(fctx, st.store, st.bucket, objKey)
		cancel()
		if err == nil && int64(len(data)) != size {
			err = fmt.Errorf("%s/%s holds %d bytes where the version document says %d", st.bucket, objKey, len(data), size)
		}
		if err == nil {
			if !st.primary {
				s.log.Info("served from the mirror", "key", objKey)
			}
			return data, st.name, nil
		}
		if ctx.Err() != nil {
			return nil, "", ctx.Err()
		}
		errs = append(errs, fmt.Errorf("%s: %w", st.name, err))
		s.noteFailure(st, objKey, err)
	}
	return nil, "", fmt.Errorf("%w: %w", errBothStoresFailed, errors.Join(errs...))
}

// openBody opens bytes [start, start+length) of a large representation for
// streaming. The store's timeout covers the wait for the response headers,
// not the transfer.
func (s *Server) openBody(ctx context.Context, key fileCacheKey, start, length, size int64) (io.ReadCloser, string, error) {
	objKey := key.objectKey()
	ranged := start != 0 || length != size
	var errs []error
	for _, st := range s.stores() {
		octx, cancel := context.WithCancel(ctx)
		timer := time.AfterFunc(st.timeout, cancel)
		body, info, err := open(octx, st.store, st.bucket, objKey, ranged, start, length)
		if err == nil && !timer.Stop() {
			body.Close()
			err = fmt.Errorf("no response within %s", st.timeout)
		}
		if err == nil && info.Size != size {
			body.Close()
			err = fmt.Errorf("%s/%s holds %d bytes where the version document says %d", st.bucket, objKey, info.Size, size)
		}
		if err == nil {
			if !st.primary {
				s.log.Info("served from the mirror", "key", objKey)
			}
			return cancelOnClose{body, cancel}, st.name, nil
		}
		timer.Stop()
		cancel()
		if ctx.Err() != nil {
			return nil, "", ctx.Err()
		}
		errs = append(errs, fmt.Errorf("%s: %w", st.name, err))
		s.noteFailure(st, objKey, err)
	}
	return nil, "", fmt.Errorf("%w: %w", errBothStoresFailed, errors.Join(errs...))
}

// open reads the whole object, or a range of it from a store that can.
func open(ctx context.Context, s objectstore.Store, bucket, key string, ranged bool, start, length int64) (io.ReadCloser, objectstore.ObjectInfo, error) {
	if !ranged {
		return s.Get(ctx, bucket, key)
	}
	rr, ok := s.(objectstore.RangeReader)
	if !ok {
		return nil, objectstore.ObjectInfo{}, fmt.Errorf("%s/%s: range read: %w", bucket, key, objectstore.ErrNotSupported)
	}
	return rr.GetRange(ctx, bucket, key, start, length)
}

// cancelOnClose releases the read's context when the body is closed.
type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (c cancelOnClose) Close() error {
	err := c.ReadCloser.Close()
	c.cancel()
	return err
}
