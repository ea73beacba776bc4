package web

import (
	"errors"
	"html/template"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/edgeflow/edgeflow/internal/publish/catalog"
	"github.com/edgeflow/edgeflow/internal/publish/pubclient"
	"github.com/edgeflow/edgeflow/workflows/publish/contract"
)

// librariesPerPage is the Publish table's page.
const librariesPerPage = 50

// publishRoutes are the Publish pages: the catalog's libraries, a
// library's versions and its publish form, on pubclient, as the API.
func (p *Pages) publishRoutes() {
	p.mux.HandleFunc("GET /publish", p.page(p.libraries))
	p.mux.HandleFunc("GET /publish/{name}", p.page(p.library))
	p.mux.HandleFunc("POST /publish/{name}", p.action(true, p.publishNow))
}

func addPublishPages(out map[string]*template.Template, funcs template.FuncMap) {
	for _, name := range []string{"libraries", "library"} {
		out[name] = template.Must(template.New(name).Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/"+name+".html"))
	}
}

// librariesView is a page of the catalog.
type librariesView struct {
	Follower          *followerView // nil: not known here (no Temporal client)
	Libraries         []pubclient.Library
	Page, Pages       int
	Total             int
	Previous, Next    string // links; empty at either end
	FirstRow, LastRow int
}

func (p *Pages) libraries(w http.ResponseWriter, r *http.Request, s *session) {
	page, err := strconv.Atoi(r.URL.Query().Get("page"))
	if err != nil || page < 1 {
		page = 1
	}
	ctx, cancel := p.ctx(r)
	defer cancel()
	v := view{Title: "Publish", User: s.user, CSRF: s.csrf,
		WebUI: p.workflowsURL(`WorkflowType="` + contract.WorkflowTypePublishVersion + `"`)}
	libs, total, err := p.o.Libraries.List(ctx, (page-1)*librariesPerPage, librariesPerPage)
	if err != nil {
		v.Errors = []string{"libraries: " + p.hide(r, err)}
		p.render(w, http.StatusBadGateway, "libraries", v)
		return
	}
	lv := librariesView{Libraries: libs, Page: page, Total: total, Pages: max(1, (total+librariesPerPage-1)/librariesPerPage)}
	lv.Follower = p.follower(r, contract.RegistryNPM)
	if len(libs) > 0 {
		lv.FirstRow, lv.LastRow = (page-1)*librariesPerPage+1, (page-1)*librariesPerPage+len(libs)
	}
	if page > 1 {
		lv.Previous = "/publish?page=" + strconv.Itoa(page-1)
	}
	if page < lv.Pages {
		lv.Next = "/publish?page=" + strconv.Itoa(page+1)
	}
	v.Content = lv
	p.render(w, http.StatusOK, "libraries", v)
}

// libraryView is a library's page.
type libraryView struct {
	pubclient.LibraryDetail
	CheckURL string // the Web UI page of the library's check
	Runs     map[string]string
	Version  string // the publish form's, when it failed
	ReadOnly bool
}

func (p *Pages) library(w http.ResponseWriter, r *http.Request, s *session) {
	notice := ""
	if id := r.URL.Query().Get("started"); id != "" {
		notice = "Started " + id + "."
	}
	p.showLibrary(w, r, s, http.StatusOK, notice, "")
}

func (p *Pages) showLibrary(w http.ResponseWriter, r *http.Request, s *session, status int, notice, version string, errs ...string) {
	name := r.PathValue("name")
	title := "Library " + name
	if !catalog.ValidName(name) {
		p.render(w, http.StatusNotFound, "signin", view{Title: "No such library", User: s.user, CSRF: s.csrf, Back: true,
			Errors: []string{"name: not a library name (letters, digits, '.', '_' and '-')"}})
		return
	}
	ctx, cancel := p.ctx(r)
	defer cancel()
	d, err := p.o.Libraries.Get(ctx, name)
	switch {
	case errors.Is(err, pubclient.ErrUnknownLibrary):
		p.render(w, http.StatusNotFound, "signin", view{Title: title, User: s.user, CSRF: s.csrf, Back: true,
			Errors: append(errs, "name: no library "+strconv.Quote(name)+" in the catalog")})
		return
	case err != nil:
		p.render(w, http.StatusBadGateway, "signin", view{Title: title, User: s.user, CSRF: s.csrf, Back: true,
			Errors: append(errs, "library: "+p.hide(r, err))})
		return
	}
	lv := libraryView{LibraryDetail: d, CheckURL: p.workflowURL(d.WorkflowID), Runs: map[string]string{}, Version: version, ReadOnly: s.readOnly}
	for _, v := range d.Versions {
		if v.WorkflowID != "" && p.o.WebUI != "" {
			lv.Runs[v.Version] = p.workflowURL(v.WorkflowID) + "/" + url.PathEscape(v.RunID)
		}
	}
	p.render(w, status, "library", view{Title: title, User: s.user, CSRF: s.csrf, Notice: notice, Errors: errs,
		WebUI: p.workflowsURL(contract.PackageKey.GetName() + `="` + name + `"`), Content: lv})
}

// publishNow is the library page's form: what POST
// /api/v1/libraries/{name}/publish starts (a check, or one version).
func (p *Pages) publishNow(w http.ResponseWriter, r *http.Request, s *session) {
	name := r.PathValue("name")
	version := strings.TrimSpace(r.PostFormValue("version"))
	if !catalog.ValidName(name) {
		p.fail(w, http.StatusNotFound, "name: not a library name (letters, digits, '.', '_' and '-')")
		return
	}
	if version != "" && !pubclient.ValidVersion(version) {
		p.showLibrary(w, r, s, http.StatusBadRequest, "", version, "version: "+strconv.Quote(version)+" is not a version (semver's characters, at most 128)")
		return
	}
	ctx, cancel := p.ctx(r)
	defer cancel()
	opts, workflowType, input := pubclient.Request(name, version, nil)
	run, err := p.o.Libraries.Temporal.ExecuteWorkflow(ctx, opts, workflowType, input)
	if err != nil {
		p.showLibrary(w, r, s, http.StatusBadGateway, "", version, "publish: "+p.hide(r, err))
		return
	}
	http.Redirect(w, r, "/publish/"+url.PathEscape(name)+"?started="+url.QueryEscape(run.GetID()), http.StatusSeeOther)
}

// followerView is the Publish page's freshness line: how far behind the
// registry's changes the follower is, or why it is not following.
type followerView struct {
	Registry, Link        string
	Running, Stalled      bool
	Lag, CaughtUpAt       string
	Checking              string
	Checks, Changed       int
	StalledSince, RetryAt string
	LastError, Error      string
}

func (p *Pages) follower(r *http.Request, registry string) *followerView {
	read := p.o.Follower
	if read == nil {
		if p.o.Libraries.Temporal == nil {
			return nil
		}
		read = p.o.Libraries.Follower
	}
	ctx, cancel := p.ctx(r)
	defer cancel()
	f, err := read(ctx, registry)
	v := &followerView{Registry: registry, Running: f.Running}
	if p.o.WebUI != "" {
		v.Link = p.workflowURL(contract.RegistryFollowerWorkflowID(registry))
	}
	if err != nil {
		v.Error = p.hide(r, err)
		return v
	}
	st := f.Status
	v.Checks, v.Changed, v.Checking = st.Stats.Checks, st.Stats.Changed, strings.Join(st.Checking, ", ")
	v.Lag = "not yet caught up"
	if !st.CaughtUpAt.IsZero() {
		v.Lag = f.Lag.Round(time.Second).String() + " behind"
		v.CaughtUpAt = st.CaughtUpAt.UTC().Format("2006-01-02 15:04:05")
	}
	if !st.StalledSince.IsZero() {
		v.Stalled, v.LastError = true, st.LastError
		v.StalledSince = st.StalledSince.UTC().Format("2006-01-02 15:04:05")
		v.RetryAt = st.RetryAt.UTC().Format("15:04:05")
	}
	return v
}
