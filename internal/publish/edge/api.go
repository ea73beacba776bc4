package edge

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/edgeflow/edgeflow/internal/publish/catalog"
	"github.com/edgeflow/edgeflow/internal/publish/metadata"
	"github.com/edgeflow/edgeflow/internal/publish/versions"
)

// Cache-Control values of API responses.
const (
	apiCacheControl       = "public, max-age=300"
	apiSearchCacheControl = "public, max-age=60"
)

// jsonObject is a JSON object that keeps its members in the given order, so
// responses read like cdnjs's (name first) and fields can be filtered.
type jsonObject []jsonMember

type jsonMember struct {
	key   string
	value any
}

func (o jsonObject) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := json.Marshal(m.key)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		v, err := json.Marshal(m.value)
		if err != nil {
			return nil, err
		}
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// fieldSet is the parsed fields parameter; nil means it was not given.
type fieldSet map[string]bool

func parseFields(r *http.Request) fieldSet {
	param := r.URL.Query().Get("fields")
	if strings.TrimSpace(param) == "" {
		return nil
	}
	set := fieldSet{}
	for f := range strings.SplitSeq(param, ",") {
		if f = strings.TrimSpace(f); f != "" {
			set[f] = true
		}
	}
	return set
}

// only keeps the members named in fields (all of them when fields is nil);
// names the object does not have are ignored, as cdnjs does.
func (o jsonObject) only(fields fieldSet) jsonObject {
	if fields == nil {
		return o
	}
	out := jsonObject{}
	for _, m := range o {
		if fields[m.key] {
			out = append(out, m)
		}
	}
	return out
}

// writeJSON sends v with a weak ETag of its bytes, answering a matching
// If-None-Match with 304.
func writeJSON(w http.ResponseWriter, r *http.Request, status int, v any, cacheControl string) {
	body, err := json.Marshal(v)
	if err != nil {
		writeJSONError(w, http.StatusInternalServerError, "Could not encode the response")
		return
	}
	body = append(body, '\n')
	h := w.Header()
	setCommonHeaders(h)
	h.Set("Content-Type", "application/json; charset=utf-8")
	h.Set("Cache-Control", cacheControl)
	addVary(h, "Accept-Encoding")
	tag := `W/"` + strconv.FormatUint(fnv64(string(body)), 16) + `"`
	h.Set("ETag", tag)
	if status == http.StatusOK && r != nil {
		if inm := r.Header.Get("If-None-Match"); inm != "" && etagListMatches(inm, tag) {
			w.WriteHeader(http.StatusNotModified)
			return
		}
	}
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	if r == nil || r.Method != http.MethodHead {
		_, _ = w.Write(body)
	}
}

// writeJSONError sends cdnjs's error shape.
func writeJSONError(w http.ResponseWriter, status int, message string) {
	h := w.Header()
	setCommonHeaders(h)
	if h.Get("Cache-Control") == "" {
		h.Set("Cache-Control", notFoundCacheControl)
	}
	body, _ := json.Marshal(jsonObject{{"error", true}, {"status", status}, {"message", message}})
	h.Set("Content-Type", "application/json; charset=utf-8")
	h.Del("ETag")
	h.Set("Content-Length", strconv.Itoa(len(body)+1))
	w.WriteHeader(status)
	_, _ = w.Write(append(body, '\n'))
}

func escapeSegment(s string) string { return url.PathEscape(s) }

// latestURL is the absolute URL of a library's default file, or nil (JSON
// null) when it has none.
func (s *Server) latestURL(base, name, latest, filename string) any {
	if latest == "" || filename == "" {
		return nil
	}
	return s.fileURL(base, name, latest, filename)
}

// apiLibraries serves GET /libraries: every library, or the ones matching
// search, each with name and latest plus the requested fields.
func (s *Server) apiLibraries(w http.ResponseWriter, r *http.Request) {
	ix, err := s.meta.Index()
	if err != nil {
		s.unavailable(w, r, err)
		return
	}
	q := r.URL.Query()
	fields := parseFields(r)
	limit, _ := strconv.Atoi(q.Get("limit"))
	libs := make([]*indexedLibrary, 0, len(ix.libraries))
	cacheControl := apiCacheControl
	if search := strings.TrimSpace(q.Get("search")); search != "" {
		if len(search) > MaxSearchQueryBytes {
			writeJSONError(w, http.StatusBadRequest, fmt.Sprintf("search is %d bytes long; the limit is %d", len(search), MaxSearchQueryBytes))
			return
		}
		cacheControl = apiSearchCacheControl
		for _, hit := range ix.search(search, parseSearchFields(q.Get("search_fields"))) {
			libs = append(libs, hit.lib)
		}
	} else {
		for i := range ix.libraries {
			libs = append(libs, &ix.libraries[i])
		}
	}
	if limit > 0 && len(libs) > limit {
		libs = libs[:limit]
	}
	base := s.baseURL(w, r)
	results := make([]jsonObject, 0, len(libs))
	for _, lib := range libs {
		obj := jsonObject{{"name", lib.Name}, {"latest", s.latestURL(base, lib.Name, lib.Latest, lib.Filename)}}
		extra := jsonObject{
			{"filename", lib.Filename},
			{"description", lib.Description},
			{"version", lib.Latest},
			{"keywords", nonNil(lib.Keywords)},
			{"homepage", lib.Homepage},
			{"license", lib.License},
			{"sri", lib.SRI},
		}
		if fields != nil {
			obj = append(obj, extra.only(fields)...)
		}
		results = append(results, obj)
	}
	writeJSON(w, r, http.StatusOK, jsonObject{
		{"results", results},
		{"total", len(results)},
		{"available", len(ix.libraries)},
	}, cacheControl)
}

// apiLibrary serves GET /libraries/<name>: the library and its latest assets.
func (s *Server) apiLibrary(w http.ResponseWriter, r *http.Request) {
	pkg, ok := s.apiPackage(w, r)
	if !ok {
		return
	}
	doc := pkg.doc
	base := s.baseURL(w, r)
	var sri any
	assets := []jsonObject{}
	if doc.Latest != "" {
		ver, found, err := s.meta.Version(pkg, doc.Latest)
		if err != nil {
			s.unavailable(w, r, err)
			return
		}
		if found {
			if f, ok := ver.Lookup(doc.Filename); ok {
				sri = f.SRI
			}
			assets = append(assets, versionAssets(ver).only(fieldSet{"version": true, "files": true, "rawFiles": true, "sri": true}))
		}
	}
	var author any
	if len(doc.Authors) > 0 {
		author = doc.Authors[0].Name
	}
	authors := doc.Authors
	if authors == nil {
		authors = []catalog.Author{}
	}
	var repository any
	if doc.Repository != nil {
		repository = doc.Repository
	}
	obj := jsonObject{
		{"name", doc.Name},
		{"latest", s.latestURL(base, doc.Name, doc.Latest, doc.Filename)},
		{"sri", sri},
		{"description", doc.Description},
		{"version", doc.Latest},
		{"filename", doc.Filename},
		{"homepage", doc.Homepage},
		{"keywords", nonNil(doc.Keywords)},
		{"repository", repository},
		{"license", doc.License},
		{"author", author},
		{"authors", authors},
		{"autoupdate", doc.Autoupdate},
		{"versions", nonNil(doc.Versions)},
		{"assets", assets},
	}
	writeJSON(w, r, http.StatusOK, obj.only(parseFields(r)), apiCacheControl)
}

// apiVersion serves GET /libraries/<name>/<version>. A range or tag is
// resolved and answered with a short cache lifetime; an exact published
// version is immutable. A catalog version not published yet is published
// on request (publishOnRequest).
func (s *Server) apiVersion(w http.ResponseWriter, r *http.Request) {
	name, version := r.PathValue("name"), r.PathValue("version")
	pkg, found, ok := s.apiPackageOrNone(w, r)
	if !ok {
		return
	}
	if !found {
		fresh, answered := s.publishOnRequest(w, r, name, version, nil, true)
		if answered {
			return
		}
		if fresh == nil {
			writeJSONError(w, http.StatusNotFound, "Library not found")
			return
		}
		pkg = fresh
	}
	cacheControl := immutableCacheControl
	if !pkg.hasVersion(version) {
		resolved, ok := "", false
		if validVersionSpec(version) {
			resolved, ok = versions.Resolve(pkg.doc.Versions, version)
		}
		if !ok || resolved == version {
			pkg = s.meta.PackageListing(pkg, version)
		}
		switch {
		case pkg.hasVersion(version):
		case ok && resolved != version && pkg.hasVersion(resolved):
			version, cacheControl = resolved, apiCacheControl
		default:
			fresh, answered := s.publishOnRequest(w, r, name, version, pkg, true)
			if answered {
				return
			}
			if fresh == nil {
				writeJSONError(w, http.StatusNotFound, "Version not found")
				return
			}
			pkg = fresh
		}
	}
	ver, found, err := s.meta.Version(pkg, version)
	if err != nil {
		s.unavailable(w, r, err)
		return
	}
	if !found {
		writeJSONError(w, http.StatusNotFound, "Version not found")
		return
	}
	writeJSON(w, r, http.StatusOK, versionAssets(ver).only(parseFields(r)), cacheControl)
}

// apiPackage reads the package named in the path or answers 404/503.
func (s *Server) apiPackage(w http.ResponseWriter, r *http.Request) (*packageInfo, bool) {
	pkg, found, ok := s.apiPackageOrNone(w, r)
	if ok && !found {
		writeJSONError(w, http.StatusNotFound, "Library not found")
		return nil, false
	}
	return pkg, ok
}

// apiPackageOrNone reads the package named in the path: found is false when
// it has no document; ok is false when it has answered (a bad name, 503).
func (s *Server) apiPackageOrNone(w http.ResponseWriter, r *http.Request) (pkg *packageInfo, found, ok bool) {
	name := r.PathValue("name")
	if !validName(name) {
		writeJSONError(w, http.StatusNotFound, "Library not found")
		return nil, false, false
	}
	pkg, found, err := s.meta.Package(name)
	if err != nil {
		s.unavailable(w, r, err)
		return nil, false, false
	}
	return pkg, found, true
}

// versionAssets is cdnjs's description of one version: every file, the files
// as shipped (without generated minified twins), and each file's SRI; then,
// only when there are any, the files whose processing was skipped, with
// why (stored as is over the library's size limit, or not minified).
func versionAssets(ver *metadata.Version) jsonObject {
	files := make([]string, 0, len(ver.Files))
	raw := make([]string, 0, len(ver.Files))
	sri := make(jsonObject, 0, len(ver.Files))
	for _, f := range ver.Files {
		files = append(files, f.Path)
		if f.MinifiedFrom == "" {
			raw = append(raw, f.Path)
		}
		if f.SRI != "" {
			sri = append(sri, jsonMember{f.Path, f.SRI})
		}
	}
	assets := jsonObject{
		{"name", ver.Name},
		{"version", ver.Version},
		{"files", files},
		{"rawFiles", raw},
		{"sri", sri},
	}
	if len(ver.Skipped) > 0 {
		assets = append(assets, jsonMember{"skipped", ver.Skipped})
	}
	return assets
}

// apiStats serves GET /stats.
func (s *Server) apiStats(w http.ResponseWriter, r *http.Request) {
	ix, err := s.meta.Index()
	if err != nil {
		s.unavailable(w, r, err)
		return
	}
	writeJSON(w, r, http.StatusOK, jsonObject{{"libraries", len(ix.libraries)}}.only(parseFields(r)), apiCacheControl)
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
