package edge

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"html/template"
	"net/http"
	"path"
	"slices"
	"strings"

	"github.com/edgeflow/edgeflow/internal/publish/metadata"
	"github.com/edgeflow/edgeflow/internal/publish/onrequest"
	"github.com/edgeflow/edgeflow/internal/publish/versions"
)

//go:embed web/templates/*.html web/static/*
var webFS embed.FS

// staticPrefix is where the UI's own CSS and JS are served.
const staticPrefix = "/_edge/static/"

// maxIndexListing caps the libraries rendered on the unfiltered index page;
// the search box reaches the others.
const maxIndexListing = 500

const (
	htmlCacheControl = "public, max-age=60"
	// The pages load only their own script and style and talk only to their
	// own origin.
	htmlContentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; " +
		"img-src 'self' data:; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)

// webUI renders the browsable pages.
type webUI struct {
	s      *Server
	pages  map[string]*template.Template
	static map[string]staticAsset
}

type staticAsset struct {
	body        []byte
	contentType string
	version     string // content hash, in asset URLs so they can be cached forever
}

func newWebUI(s *Server) *webUI {
	ui := &webUI{s: s, pages: map[string]*template.Template{}, static: map[string]staticAsset{}}
	for _, name := range []string{"style.css", "app.js"} {
		body, err := webFS.ReadFile("web/static/" + name)
		if err != nil {
			panic(fmt.Sprintf("embedded asset web/static/%s: %v", name, err)) // the embed directive guarantees it
		}
		sum := sha256.Sum256(body)
		ct := "text/css; charset=utf-8"
		if strings.HasSuffix(name, ".js") {
			ct = "text/javascript; charset=utf-8"
		}
		ui.static[name] = staticAsset{body: body, contentType: ct, version: hex.EncodeToString(sum[:6])}
	}
	funcs := template.FuncMap{
		"asset": func(name string) string { return staticPrefix + name + "?v=" + ui.static[name].version },
	}
	for _, page := range []string{"index.html", "library.html", "version.html", "notfound.html", "publishing.html"} {
		t, err := template.New(page).Funcs(funcs).ParseFS(webFS, "web/templates/layout.html", "web/templates/"+page)
		if err != nil {
			panic(fmt.Sprintf("embedded template %s: %v", page, err)) // fixed at build time; tests render every page
		}
		ui.pages[page] = t
	}
	return ui
}

func (ui *webUI) register(mux *http.ServeMux) {
	mux.HandleFunc("GET /{$}", ui.index)
	mux.HandleFunc("GET /browse/{name}", ui.library)
	mux.HandleFunc("GET /browse/{name}/{version}", ui.version)
	mux.HandleFunc("GET "+staticPrefix+"{file}", ui.asset)
}

func (ui *webUI) render(w http.ResponseWriter, r *http.Request, status int, page string, data any) {
	var buf bytes.Buffer
	if err := ui.pages[page].ExecuteTemplate(&buf, "layout", data); err != nil {
		ui.s.log.Error("render page", "page", page, "path", r.URL.Path, "error", err)
		writeTextError(w, http.StatusInternalServerError, "could not render the page")
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", htmlContentSecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "strict-origin-when-cross-origin")
	if h.Get("Cache-Control") == "" {
		h.Set("Cache-Control", htmlCacheControl)
	}
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		_, _ = w.Write(buf.Bytes())
	}
}

type notFoundPage struct{ Title, Message string }

func (ui *webUI) notFound(w http.ResponseWriter, r *http.Request, title, message string) {
	w.Header().Set("Cache-Control", notFoundCacheControl)
	ui.render(w, r, http.StatusNotFound, "notfound.html", notFoundPage{Title: title, Message: message})
}

func (ui *webUI) unavailable(w http.ResponseWriter, r *http.Request, err error) {
	ui.s.log.Error("metadata unavailable", "path", r.URL.Path, "error", err)
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Retry-After", "5")
	ui.render(w, r, http.StatusServiceUnavailable, "notfound.html",
		notFoundPage{Title: "Temporarily unavailable", Message: "The library catalog cannot be read right now. Please retry in a few seconds."})
}

type indexPage struct {
	Title     string
	Query     string
	Libraries []libraryRow
	Shown     int
	Available int
}

type libraryRow struct {
	Name, Version, Description string
	BrowseURL                  string
}

func browseURL(name string, version ...string) string {
	u := "/browse/" + escapeSegment(name)
	for _, v := range version {
		u += "/" + escapeSegment(v)
	}
	return u
}

func (ui *webUI) index(w http.ResponseWriter, r *http.Request) {
	ix, err := ui.s.meta.Index()
	if err != nil {
		ui.unavailable(w, r, err)
		return
	}
	query := strings.TrimSpace(r.URL.Query().Get("q"))
	var libs []*indexedLibrary
	if query != "" {
		for _, hit := range ix.search(query, defaultSearchFields) {
			libs = append(libs, hit.lib)
		}
	} else {
		for i := range ix.libraries {
			libs = append(libs, &ix.libraries[i])
		}
	}
	if len(libs) > maxIndexListing {
		libs = libs[:maxIndexListing]
	}
	page := indexPage{Title: "Libraries", Query: query, Shown: len(libs), Available: len(ix.libraries)}
	for _, lib := range libs {
		page.Libraries = append(page.Libraries, libraryRow{Name: lib.Name, Version: lib.Latest, Description: lib.Description, BrowseURL: browseURL(lib.Name)})
	}
	ui.render(w, r, http.StatusOK, "index.html", page)
}

type libraryPageData struct {
	Title, Name, Description, License, Homepage, Repository string
	Keywords                                                []string
	Latest, LatestURL                                       string
	Versions                                                []versionLink
}

type versionLink struct {
	Version, URL string
	Latest       bool
}

func (ui *webUI) library(w http.ResponseWriter, r *http.Request) {
	pkg, ok := ui.lookupPackage(w, r)
	if !ok {
		return
	}
	doc := pkg.doc
	page := libraryPageData{Title: doc.Name, Name: doc.Name, Description: doc.Description, License: doc.License,
		Homepage: doc.HomepageURL(), Keywords: doc.Keywords, Latest: doc.Latest}
	if doc.Latest != "" {
		page.LatestURL = browseURL(doc.Name, doc.Latest)
	}
	// git://, git+https:// and git@host: forms link to the host's https page.
	page.Repository = doc.RepositoryURL()
	for _, v := range slices.Backward(doc.Versions) {
		page.Versions = append(page.Versions, versionLink{Version: v, URL: browseURL(doc.Name, v), Latest: v == doc.Latest})
	}
	ui.render(w, r, http.StatusOK, "library.html", page)
}

type versionPageData struct {
	Title, Name, Version, Description string
	LibraryURL, Published             string
	IsLatest                          bool
	Files                             []fileRow
}

type fileRow struct {
	Path, URL, Size string
	Snippet         string // the copy-ready tag (or URL), shown escaped
	CopyLabel       string
	Default         bool
}

func (ui *webUI) version(w http.ResponseWriter, r *http.Request) {
	name, version := r.PathValue("name"), r.PathValue("version")
	if !validName(name) {
		ui.notFound(w, r, "Library not found", "There is no library with that name.")
		return
	}
	pkg, found, err := ui.s.meta.Package(name)
	if err != nil {
		ui.unavailable(w, r, err)
		return
	}
	if !found {
		fresh, answered := ui.publishOnRequest(w, r, name, version, nil)
		if answered {
			return
		}
		if fresh == nil {
			ui.notFound(w, r, "Library not found", fmt.Sprintf("There is no library named %q.", name))
			return
		}
		pkg = fresh
	}
	if !pkg.hasVersion(version) {
		if resolved, ok := versions.Resolve(pkg.doc.Versions, version); !ok || resolved == version {
			pkg = ui.s.meta.PackageListing(pkg, version)
		}
	}
	if !pkg.hasVersion(version) {
		if resolved, ok := versions.Resolve(pkg.doc.Versions, version); ok && validVersionSpec(version) && pkg.hasVersion(resolved) {
			w.Header().Set("Cache-Control", redirectCacheControl)
			http.Redirect(w, r, browseURL(pkg.doc.Name, resolved), http.StatusFound)
			return
		}
		fresh, answered := ui.publishOnRequest(w, r, name, version, pkg)
		if answered {
			return
		}
		if fresh == nil {
			ui.notFound(w, r, "Version not found", fmt.Sprintf("%s has no published version %q.", pkg.doc.Name, version))
			return
		}
		pkg = fresh
	}
	ver, found, err := ui.s.meta.Version(pkg, version)
	if err != nil {
		ui.unavailable(w, r, err)
		return
	}
	if !found {
		ui.notFound(w, r, "Version not found", fmt.Sprintf("%s has no published version %q.", pkg.doc.Name, version))
		return
	}
	base := ui.s.baseURL(w, r)
	page := versionPageData{Title: ver.Name + " " + ver.Version, Name: ver.Name, Version: ver.Version,
		Description: pkg.doc.Description, LibraryURL: browseURL(ver.Name), IsLatest: ver.Version == pkg.doc.Latest}
	if !ver.PublishedAt.IsZero() {
		page.Published = ver.PublishedAt.UTC().Format("2 January 2006")
	}
	for _, f := range ver.Files {
		u := ui.s.fileURL(base, ver.Name, ver.Version, f.Path)
		snippet, label := tagFor(u, f)
		page.Files = append(page.Files, fileRow{Path: f.Path, URL: u, Size: humanBytes(f.Size), Snippet: snippet,
			CopyLabel: label, Default: f.Path == pkg.doc.Filename})
	}
	// The default file first: it is what most people come for.
	slices.SortStableFunc(page.Files, func(a, b fileRow) int {
		switch {
		case a.Default == b.Default:
			return 0
		case a.Default:
			return -1
		}
		return 1
	})
	ui.render(w, r, http.StatusOK, "version.html", page)
}

type publishingPageData struct {
	Title, Name, Version, LibraryURL, Reason string
	Reload                                   int // seconds, as Retry-After
}

// publishOnRequest is the edge's publishing on first request (see
// Server.requestPublish) for the browse page of name@version, which pkg
// (nil: no package document) does not list: the version page once
// published within the wait, a 404 page with the catalog's reason, or a
// 503 page, kept nowhere, that reloads itself after Retry-After.
func (ui *webUI) publishOnRequest(w http.ResponseWriter, r *http.Request, name, version string, pkg *packageInfo) (_ *packageInfo, answered bool) {
	fresh, a := ui.s.requestPublish(r, name, version, pkg)
	switch a.Kind {
	case onrequest.Published:
		return fresh, false
	case onrequest.Refused:
		ui.notFound(w, r, "Version not found", fmt.Sprintf("%s %s is not published: %s.", name, version, a.Reason))
		return nil, true
	case onrequest.NotReady:
		page := publishingPageData{Title: name + " " + version + " is being published", Name: name, Version: version, Reason: a.Reason}
		if pkg != nil {
			page.LibraryURL = browseURL(name)
		}
		page.Reload = setNotReadyHeaders(w.Header(), a.RetryAfter)
		ui.render(w, r, http.StatusServiceUnavailable, "publishing.html", page)
		return nil, true
	}
	return nil, false
}

// tagFor is the HTML that loads a file with its integrity checked, or just
// its URL for files that are not scripts or stylesheets.
func tagFor(url string, f metadata.File) (snippet, copyLabel string) {
	attrs := fmt.Sprintf(` integrity="%s" crossorigin="anonymous" referrerpolicy="no-referrer"`, f.SRI)
	if f.SRI == "" {
		attrs = ` crossorigin="anonymous" referrerpolicy="no-referrer"`
	}
	switch strings.ToLower(path.Ext(f.Path)) {
	case ".js", ".cjs":
		return `<script src="` + url + `"` + attrs + `></script>`, "Copy Script Tag"
	case ".mjs":
		return `<script type="module" src="` + url + `"` + attrs + `></script>`, "Copy Script Tag"
	case ".css":
		return `<link rel="stylesheet" href="` + url + `"` + attrs + ` />`, "Copy Link Tag"
	}
	return url, "Copy URL"
}

func humanBytes(n int64) string {
	switch {
	case n < 1024:
		return fmt.Sprintf("%d B", n)
	case n < 1024*1024:
		return fmt.Sprintf("%.1f KiB", float64(n)/1024)
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1024*1024))
}

func (ui *webUI) lookupPackage(w http.ResponseWriter, r *http.Request) (*packageInfo, bool) {
	name := r.PathValue("name")
	if !validName(name) {
		ui.notFound(w, r, "Library not found", "There is no library with that name.")
		return nil, false
	}
	pkg, found, err := ui.s.meta.Package(name)
	if err != nil {
		ui.unavailable(w, r, err)
		return nil, false
	}
	if !found {
		ui.notFound(w, r, "Library not found", fmt.Sprintf("There is no library named %q.", name))
		return nil, false
	}
	return pkg, true
}

// asset serves the UI's embedded CSS and JS.
func (ui *webUI) asset(w http.ResponseWriter, r *http.Request) {
	a, ok := ui.static[r.PathValue("file")]
	if !ok {
		writeTextError(w, http.StatusNotFound, "no such asset")
		return
	}
	h := w.Header()
	h.Set("Content-Type", a.contentType)
	h.Set("X-Content-Type-Options", "nosniff")
	if r.URL.Query().Get("v") == a.version {
		h.Set("Cache-Control", immutableCacheControl)
	} else {
		h.Set("Cache-Control", "public, max-age=300")
	}
	h.Set("ETag", `"`+a.version+`"`)
	if inm := r.Header.Get("If-None-Match"); inm != "" && etagListMatches(inm, `"`+a.version+`"`) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	h.Set("Content-Length", fmt.Sprint(len(a.body)))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(a.body)
	}
}
