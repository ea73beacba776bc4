package web

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"net/http"
	"sync"
	"time"
)

// Cookie names: the session, and the sign-in form's CSRF pair (a form
// posted before there is a session is checked against this cookie, so a
// foreign page cannot sign a browser in under the attacker's token).
const (
	SessionCookie = "edgeflow-console-session"
	signinCookie  = "edgeflow-console-signin"
)

// DefaultSessionTTL is how long a sign-in lasts, however busy: a working day.
const DefaultSessionTTL = 8 * time.Hour

// session is one signed-in browser. Sessions live in the server's memory
// only: the cookie carries a random id, never the token, and a restart
// signs everyone out.
type session struct {
	id       string
	user     string // the token's name (logged), never its secret
	readOnly bool
	csrf     string
	expires  time.Time
}

type sessions struct {
	mu  sync.Mutex
	m   map[string]*session
	ttl time.Duration
	now func() time.Time
}

func randomID() string {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// start records a new session.
func (ss *sessions) start(user string, readOnly bool) *session {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	now := ss.now()
	for id, s := range ss.m { // sign-ins are rare: sweeping here keeps the map small
		if !now.Before(s.expires) {
			delete(ss.m, id)
		}
	}
	id := randomID()
	s := &session{id: id, user: user, readOnly: readOnly, csrf: randomID(), expires: now.Add(ss.ttl)}
	ss.m[id] = s
	return s
}

// get is the unexpired session of the request's cookie, or nil.
func (ss *sessions) get(r *http.Request) *session {
	c, err := r.Cookie(SessionCookie)
	if err != nil || c.Value == "" {
		return nil
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	s := ss.m[c.Value]
	if s == nil {
		return nil
	}
	if !ss.now().Before(s.expires) {
		delete(ss.m, c.Value)
		return nil
	}
	return s
}

func (ss *sessions) end(id string) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	delete(ss.m, id)
}

// setCookie writes a cookie the way every console cookie is written:
// HttpOnly, SameSite=Strict, Secure over HTTPS (overHTTPS), for the whole
// console.
func setCookie(w http.ResponseWriter, r *http.Request, name, value string, maxAge int) {
	http.SetCookie(w, &http.Cookie{Name: name, Value: value, Path: "/", MaxAge: maxAge,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: overHTTPS(r)})
}

// sameSecret compares a form's CSRF token in constant time.
func sameSecret(a, b string) bool {
	return a != "" && subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}

type httpsKey struct{}

// WithHTTPS marks a request that reached the console over HTTPS through a
// proxy the console trusts (its X-Forwarded-Proto): its cookies are Secure
// as if the console served TLS itself.
func WithHTTPS(r *http.Request) *http.Request {
	return r.WithContext(context.WithValue(r.Context(), httpsKey{}, true))
}

// overHTTPS reports whether the browser's request came over HTTPS: TLS to
// the console, or a trusted proxy's word (WithHTTPS).
func overHTTPS(r *http.Request) bool {
	marked, _ := r.Context().Value(httpsKey{}).(bool)
	return r.TLS != nil || marked
}
