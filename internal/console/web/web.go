// Package web is the console's pages: sign in with a console token, then
// the rooms (the Manage table, a room's settings, events, suspend/resume
// and the last hour's chart), on the same roomclient functions and
// settings validation the room starter and the API use. Pages are
// rendered on the server (html/template); one small script refreshes a
// room's chart. It serves everything outside /api/v1, which accepts only
// bearer tokens: the session cookie is this package's alone.
package web

import (
	"context"
	"embed"
	"html/template"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/edgeflow/edgeflow/internal/admit/roomclient"
	"github.com/edgeflow/edgeflow/internal/console/failure"
	"github.com/edgeflow/edgeflow/internal/publish/pubclient"
	publishcontract "github.com/edgeflow/edgeflow/workflows/publish/contract"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Options configure the pages.
type Options struct {
	// Authenticate checks a token's secret as the API does and returns the
	// token's name and whether it may only read.
	Authenticate func(secret string) (name string, readOnly, ok bool)
	Rooms        roomclient.Client
	Migrations   Migrations    // no Start: no migration pages
	Namespace    string        // the Temporal namespace, for Web UI links
	WebUI        string        // the Temporal Web UI's base URL; empty: no links
	Log          *slog.Logger  // nil: discard
	Timeout      time.Duration // per Temporal call; 0: 15 s
	SessionTTL   time.Duration // 0: DefaultSessionTTL
	Now          func() time.Time

	// Libraries reads Publish's catalog and runs; its Temporal client
	// starts the publish form's runs.
	Libraries pubclient.Libraries
	// Follower reads a registry follower's state for the Publish page;
	// nil: Libraries.Follower (none shown without a Temporal client).
	Follower func(ctx context.Context, registry string) (pubclient.Follower, error)
}

// Pages serve the console's web pages.
type Pages struct {
	o        Options
	sessions *sessions
	pages    map[string]*template.Template
	mux      *http.ServeMux
}

// New builds the pages' routes.
func New(o Options) *Pages {
	if o.Log == nil {
		o.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if o.Timeout == 0 {
		o.Timeout = 15 * time.Second
	}
	if o.SessionTTL == 0 {
		o.SessionTTL = DefaultSessionTTL
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	o.WebUI = strings.TrimRight(o.WebUI, "/")
	p := &Pages{o: o, sessions: &sessions{m: map[string]*session{}, ttl: o.SessionTTL, now: o.Now},
		pages: parsePages(), mux: http.NewServeMux()}
	static, _ := fs.Sub(staticFS, "static")
	p.mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	p.mux.HandleFunc("GET /{$}", p.home)
	p.mux.HandleFunc("POST /signin", p.signin)
	p.mux.HandleFunc("POST /signout", p.action(false, p.signout))
	p.mux.HandleFunc("POST /rooms", p.action(true, p.createRoom))
	p.mux.HandleFunc("GET /rooms/{name}", p.page(p.room))
	p.mux.HandleFunc("GET /rooms/{name}/chart", p.page(p.roomChart))
	p.mux.HandleFunc("GET /rooms/{name}/live", p.page(p.roomLive))
	p.mux.HandleFunc("POST /rooms/{name}/settings", p.action(true, p.updateRoom))
	p.mux.HandleFunc("POST /rooms/{name}/suspend", p.action(true, p.suspend(true)))
	p.mux.HandleFunc("POST /rooms/{name}/resume", p.action(true, p.suspend(false)))
	p.mux.HandleFunc("POST /rooms/{name}/events", p.action(true, p.addEvent))
	p.mux.HandleFunc("POST /rooms/{name}/events/{event}/cancel", p.action(true, p.cancelEvent))
	p.mux.HandleFunc("POST /rooms/{name}/delete", p.action(true, p.deleteRoom))
	p.migrationRoutes()
	p.publishRoutes()
	return p
}

// Handler serves the pages, with the headers every answer carries.
func (p *Pages) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		// Scripts and styles only from the console itself: an injected
		// attribute or tag cannot run. No framing (clickjacking), no referrer
		// (room names in paths stay here).
		h.Set("Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; "+
			"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Frame-Options", "DENY")
		if !strings.HasPrefix(r.URL.Path, "/static/") {
			h.Set("Cache-Control", "no-store")
		}
		p.mux.ServeHTTP(w, r)
	})
}

// view is what every page's layout needs.
type view struct {
	Title  string
	User   string
	CSRF   string
	WebUI  string // the Web UI page of what this page shows
	Notice string
	Errors []string
	Back   bool // a message page: a link back instead of a form
	// Publishing has no pages here yet: the nav links to its runs in the
	// Web UI.
	PublishUI string
	// Migrations: the nav links to the jobs' pages.
	Migrations bool
	Content    any
}

func parsePages() map[string]*template.Template {
	funcs := template.FuncMap{
		"eventFields":      func() []formField { return eventFields },
		"percent":          func(share float64) float64 { return share * 100 },
		"jobFields":        func() []jobField { return jobFields },
		"credentialFields": func() []jobField { return credentialFields },
		"rate":             rate,
		"jobActions":       func() []jobField { return jobActions },
		"yes":              func(b *bool) bool { return b != nil && *b },
		"seconds": func(f *float64) string {
			if f == nil {
				return ""
			}
			return strconv.FormatFloat(*f, 'f', 1, 64)
		},
	}
	out := map[string]*template.Template{}
	for _, name := range []string{"signin", "rooms", "room", "chart", "live", "migrations", "jobs", "migration", "progress", "roomdelete"} {
		files := []string{"templates/layout.html", "templates/fields.html", "templates/" + name + ".html"}
		if name == "room" {
			files = append(files, "templates/chart.html", "templates/live.html")
		}
		// A migration page's live part is a template of its own, which the
		// page's script fetches alone.
		if name == "migrations" {
			files = append(files, "templates/jobs.html")
		}
		if name == "migration" {
			files = append(files, "templates/progress.html")
		}
		out[name] = template.Must(template.New(name).Funcs(funcs).ParseFS(templateFS, files...))
	}
	addPublishPages(out, funcs)
	return out
}

// render writes a page; a template that fails is a bug, logged.
func (p *Pages) render(w http.ResponseWriter, status int, page string, v view) {
	if v.User != "" {
		v.Migrations = p.o.Migrations.Start != nil
		v.PublishUI = p.workflowsURL(`WorkflowType="` + publishcontract.WorkflowTypePublishVersion + `"`)
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	var err error
	if page == "chart" || page == "live" || page == "jobs" || page == "progress" {
		err = p.pages[page].ExecuteTemplate(w, page, v.Content)
	} else {
		err = p.pages[page].ExecuteTemplate(w, "layout", v)
	}
	if err != nil {
		p.o.Log.Error("render", "page", page, "err", err)
	}
}

// page wraps a GET for a signed-in browser; others go to the sign-in form.
func (p *Pages) page(h func(http.ResponseWriter, *http.Request, *session)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s := p.sessions.get(r)
		if s == nil {
			http.Redirect(w, r, "/", http.StatusSeeOther)
			return
		}
		h(w, r, s)
	}
}

// action wraps a POST: a session, its CSRF token in the form, and, for
// writes, a token that may write.
func (p *Pages) action(write bool, h func(http.ResponseWriter, *http.Request, *session)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, 1<<20)
		s := p.sessions.get(r)
		if s == nil {
			p.fail(w, http.StatusUnauthorized, "session: not signed in (or the sign-in expired); sign in again")
			return
		}
		if !sameSecret(r.PostFormValue("csrf"), s.csrf) {
			p.fail(w, http.StatusForbidden, "csrf: the form's token is missing or stale; reload the page and try again")
			return
		}
		if write && s.readOnly {
			p.fail(w, http.StatusForbidden, "token "+s.user+" is read-only")
			return
		}
		p.o.Log.Info("console action", "path", r.URL.Path, "caller", s.user)
		h(w, r, s)
	}
}

// fail answers a request the pages cannot serve with a short page.
func (p *Pages) fail(w http.ResponseWriter, status int, msg string) {
	p.render(w, status, "signin", view{Title: http.StatusText(status), Errors: []string{msg}, Back: true})
}

// home is the sign-in form, or the rooms once signed in.
func (p *Pages) home(w http.ResponseWriter, r *http.Request) {
	if s := p.sessions.get(r); s != nil {
		p.rooms(w, r, s, http.StatusOK, roomForm{}, nil)
		return
	}
	p.signinForm(w, r, http.StatusOK, nil)
}

func (p *Pages) signinForm(w http.ResponseWriter, r *http.Request, status int, errs []string) {
	pair := randomID()
	setCookie(w, r, signinCookie, pair, 3600)
	p.render(w, status, "signin", view{Title: "Sign in", CSRF: pair, Errors: errs})
}

func (p *Pages) signin(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	c, err := r.Cookie(signinCookie)
	if err != nil || !sameSecret(r.PostFormValue("csrf"), c.Value) {
		p.signinForm(w, r, http.StatusForbidden, []string{"csrf: the sign-in form is stale; enter the token again"})
		return
	}
	name, readOnly, ok := p.o.Authenticate(strings.TrimSpace(r.PostFormValue("token")))
	if !ok {
		p.o.Log.Info("console sign-in refused")
		p.signinForm(w, r, http.StatusUnauthorized, []string{"token: not a console token (see docs/console.md for where they are)"})
		return
	}
	s := p.sessions.start(name, readOnly)
	setCookie(w, r, SessionCookie, s.id, int(p.o.SessionTTL/time.Second))
	setCookie(w, r, signinCookie, "", -1)
	p.o.Log.Info("console sign-in", "caller", name)
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

func (p *Pages) signout(w http.ResponseWriter, r *http.Request, s *session) {
	p.sessions.end(s.id)
	setCookie(w, r, SessionCookie, "", -1)
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// hide logs a failure of the console's own (Temporal's, the job store's)
// under the request's id and is what the page may say of it: what failed
// and that id, never the cause (failure.Hide; the API says the same).
func (p *Pages) hide(r *http.Request, err error) string {
	return failure.Hide(r.Context(), p.o.Log, "", err).Message()
}

// workflowURL links to a workflow in the Web UI (as the starters print it).
func (p *Pages) workflowURL(id string) string {
	if p.o.WebUI == "" {
		return ""
	}
	return p.o.WebUI + "/namespaces/" + url.PathEscape(p.o.Namespace) + "/workflows/" + url.PathEscape(id)
}

// workflowsURL links to a visibility query's list in the Web UI.
func (p *Pages) workflowsURL(query string) string {
	if p.o.WebUI == "" {
		return ""
	}
	return p.o.WebUI + "/namespaces/" + url.PathEscape(p.o.Namespace) + "/workflows?query=" + url.QueryEscape(query)
}
