package console

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/edgeflow/edgeflow/internal/console/failure"
)

// Error codes in the envelope's errors (Cloudflare's API numbers its own;
// these are the console's, stable for scripts).
const (
	CodeInternal     = 1000
	CodeInvalid      = 1001 // a field, parameter or header is wrong
	CodeNotFound     = 1002
	CodeConflict     = 1003 // exists already, or If-Match is stale
	CodeTooLarge     = 1004
	CodeUnavailable  = 1005 // Temporal or the job store unreachable (or too slow)
	CodeUnauthorized = 10000
	CodeForbidden    = 10001
)

// MaxBody is the largest request body the API reads.
const MaxBody = 1 << 20

// Message is one entry of the envelope's errors or messages.
type Message struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// ResultInfo is a paged list's position.
type ResultInfo struct {
	Page       int `json:"page"`
	PerPage    int `json:"per_page"`
	Count      int `json:"count"`
	TotalCount int `json:"total_count"`
}

// Envelope is Cloudflare's API response shape.
type Envelope struct {
	Success    bool        `json:"success"`
	Errors     []Message   `json:"errors"`
	Messages   []Message   `json:"messages"`
	Result     any         `json:"result"`
	ResultInfo *ResultInfo `json:"result_info,omitempty"`
}

// errWritten tells api that the handler wrote its own answer.
var errWritten = errors.New("answer written")

// apiError is a failed request: its status and the errors to answer with.
type apiError struct {
	status int
	errs   []Message
}

func (e *apiError) Error() string { return e.errs[0].Message }

func fail(status, code int, format string, args ...any) *apiError {
	return &apiError{status: status, errs: []Message{{Code: code, Message: fmt.Sprintf(format, args...)}}}
}

func writeJSON(w http.ResponseWriter, status int, env Envelope) {
	if env.Errors == nil {
		env.Errors = []Message{}
	}
	if env.Messages == nil {
		env.Messages = []Message{}
	}
	body, err := json.MarshalIndent(env, "", "  ")
	if err != nil {
		// Encoded before the status is sent: a result that cannot be (a
		// NaN, say) is a 500 that says so, not a 200 with an empty body.
		status = http.StatusInternalServerError
		body, _ = json.MarshalIndent(Envelope{Errors: []Message{{Code: CodeInternal, Message: "the result could not be encoded: " + err.Error()}},
			Messages: []Message{}}, "", "  ")
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(append(body, '\n')) // a client gone is all that can fail now
}

func writeError(w http.ResponseWriter, e *apiError) {
	writeJSON(w, e.status, Envelope{Errors: e.errs})
}

// readBody reads a request body of at most MaxBody bytes (413 beyond).
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, *apiError) {
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBody))
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return nil, fail(http.StatusRequestEntityTooLarge, CodeTooLarge, "body: larger than %d bytes", MaxBody)
	}
	if err != nil {
		return nil, fail(http.StatusBadRequest, CodeInvalid, "body: %v", err)
	}
	return data, nil
}

// Paging defaults and bounds (Cloudflare's waiting room list pages by 25).
const (
	DefaultPerPage = 25
	MaxPerPage     = 1000
)

// paging reads ?page= and ?per_page=.
func paging(r *http.Request) (page, perPage int, e *apiError) {
	page, perPage = 1, DefaultPerPage
	for _, p := range []struct {
		name     string
		into     *int
		min, max int
	}{{"page", &page, 1, 1 << 30}, {"per_page", &perPage, 1, MaxPerPage}} {
		v := r.URL.Query().Get(p.name)
		if v == "" {
			continue
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < p.min || n > p.max {
			return 0, 0, fail(http.StatusBadRequest, CodeInvalid, "%s: must be a whole number from %d to %d, got %q", p.name, p.min, p.max, v)
		}
		*p.into = n
	}
	return page, perPage, nil
}

// pageOf is the page's slice of all and its result_info.
func pageOf[T any](all []T, page, perPage int) ([]T, *ResultInfo) {
	start := min((page-1)*perPage, len(all))
	end := min(start+perPage, len(all))
	out := append([]T{}, all[start:end]...)
	return out, &ResultInfo{Page: page, PerPage: perPage, Count: len(out), TotalCount: len(all)}
}

// handlerFunc answers with a result (and its status) or an error.
type handlerFunc func(w http.ResponseWriter, r *http.Request) (status int, result any, info *ResultInfo, err error)

// api wraps a handler: authentication, the read-only check, the envelope,
// errors mapped to statuses, and an access log line naming the token (never
// its secret).
func (s *Server) api(h handlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		began := time.Now()
		status, tokenName := 0, ""
		defer func() {
			s.log.Info("request", "method", r.Method, "path", r.URL.Path, "status", status, "caller", tokenName,
				"request_id", failure.RequestID(r.Context()), "ms", time.Since(began).Milliseconds())
		}()
		tok, ok := s.tokens.Authenticate(r.Header.Get("Authorization"))
		if !ok {
			status = http.StatusUnauthorized
			w.Header().Set("WWW-Authenticate", `Bearer realm="edgeflow console"`)
			writeError(w, fail(status, CodeUnauthorized, "Authorization: want a valid `Bearer` token"))
			return
		}
		tokenName = tok.Name
		if tok.ReadOnly && writes(r.Method) {
			status = http.StatusForbidden
			writeError(w, fail(status, CodeForbidden, "Authorization: token %q is read-only", tok.Name))
			return
		}
		st, result, info, err := h(w, r)
		if errors.Is(err, errWritten) {
			status = http.StatusOK
			return
		}
		var cut *streamError
		if errors.As(err, &cut) {
			status = http.StatusOK // sent already: the answer is cut short
			s.log.Error("answer cut short", "method", r.Method, "path", r.URL.Path, "err", err)
			return
		}
		if err != nil {
			e := s.toAPIError(r, err)
			status = e.status
			writeError(w, e)
			return
		}
		status = st
		writeJSON(w, st, Envelope{Success: true, Result: result, ResultInfo: info})
	})
}

// toAPIError maps a handler's error to its answer: the caller's own
// mistakes (bad input, no such room, a job's refusal) with their specific
// message; anything else through failure.Hide, which logs the cause and
// answers only what failed and the request's id.
func (s *Server) toAPIError(r *http.Request, err error) *apiError {
	var e *apiError
	if errors.As(err, &e) {
		return e
	}
	if e := roomError(err); e != nil {
		return e
	}
	if e := migrationError(err); e != nil {
		return e
	}
	return s.hide(r, err)
}

// hide is an internal failure's answer: a 503 (CodeUnavailable) when a
// service the console needs is unreachable, else a 500 (CodeInternal).
func (s *Server) hide(r *http.Request, err error) *apiError {
	h := failure.Hide(r.Context(), s.log, r.Method+" "+routeOf(r), err)
	if h.Unavailable {
		return fail(http.StatusServiceUnavailable, CodeUnavailable, "%s", h.Message())
	}
	return fail(http.StatusInternalServerError, CodeInternal, "%s", h.Message())
}

// routeOf is the request's route pattern without its method (a path
// holds the caller's names; the pattern is the same for every caller).
func routeOf(r *http.Request) string {
	if _, path, ok := strings.Cut(r.Pattern, " "); ok {
		return path
	}
	if r.Pattern != "" {
		return r.Pattern
	}
	return r.URL.Path
}

// route is one API route: a ServeMux pattern and a short summary (the
// OpenAPI document lists the same routes; a test holds them equal).
type route struct {
	pattern string // "GET /api/v1/waiting_rooms/{name}"
	handler handlerFunc
}

// Server is the console's HTTP API.
type Server struct {
	tokens     Tokens
	rooms      roomAPI
	migrations migrationAPI
	publish    publishAPI
	log        *slog.Logger
	mux        *http.ServeMux
	front      *front
}

// Handler serves the API and the pages, behind the front door (request
// ids, trusted proxies, the throttle of failed attempts).
func (s *Server) Handler() http.Handler { return s.front }

func (s *Server) routes() []route {
	rs := append(s.rooms.routes(), s.migrations.routes()...)
	rs = append(rs, s.publish.routes()...)
	return append(rs, route{"GET /api/v1/openapi.json", serveOpenAPI})
}
