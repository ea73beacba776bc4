package admit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strings"
)

// QueueingMethod says who leaves the queue first.
type QueueingMethod string

// The queueing methods, named as Cloudflare Waiting Room names them.
const (
	FIFO        QueueingMethod = "fifo"        // oldest minute bucket first
	Random      QueueingMethod = "random"      // everyone has the same chance at every check-in
	Passthrough QueueingMethod = "passthrough" // admit everyone, still count
	Reject      QueueingMethod = "reject"      // admit no one: the room shows a closed page
)

// Valid reports whether m is one of the four methods.
func (m QueueingMethod) Valid() bool {
	return m == FIFO || m == Random || m == Passthrough || m == Reject
}

// Route is one host and path the room covers.
type Route struct {
	Host string `json:"host,omitempty"`
	Path string `json:"path,omitempty"`
}

// CookieAttributes say how the gate sets the visitor cookie.
type CookieAttributes struct {
	SameSite string `json:"samesite,omitempty"` // auto | lax | strict | none
	Secure   string `json:"secure,omitempty"`   // auto | always | never
}

// Settings are a room's configuration, under Cloudflare Waiting Room's names.
// Zero values mean "unset" and take the defaults (see WithDefaults), except
// the two limits, which every room must give.
type Settings struct {
	Name             string  `json:"name"`
	Description      string  `json:"description,omitempty"`
	Host             string  `json:"host,omitempty"` // empty: every host
	Path             string  `json:"path,omitempty"` // default "/"; covers every path below it
	AdditionalRoutes []Route `json:"additional_routes,omitempty"`
	// PathCaseInsensitive matches the room's paths whatever their case, for
	// origins that ignore it (where /SHOP/item is /shop/item).
	PathCaseInsensitive bool `json:"path_case_insensitive,omitempty"`

	TotalActiveUsers  int `json:"total_active_users"`
	NewUsersPerMinute int `json:"new_users_per_minute"`
	SessionDuration   int `json:"session_duration,omitempty"` // minutes, default 5

	QueueingMethod     QueueingMethod `json:"queueing_method,omitempty"`      // default fifo
	QueueingStatusCode int            `json:"queueing_status_code,omitempty"` // 200 | 202 | 429, default 200
	QueueAll           bool           `json:"queue_all,omitempty"`
	Suspended          bool           `json:"suspended,omitempty"`

	DisableSessionRenewal bool     `json:"disable_session_renewal,omitempty"`
	EnabledOriginCommands []string `json:"enabled_origin_commands,omitempty"` // "revoke"

	JSONResponseEnabled bool   `json:"json_response_enabled,omitempty"`
	CustomPageHTML      string `json:"custom_page_html,omitempty"` // Mustache

	CookieAttributes CookieAttributes `json:"cookie_attributes"`
	CookieSuffix     string           `json:"cookie_suffix,omitempty"`
	// AlwaysUseHTTPS says the site is served over HTTPS only (Cloudflare's
	// Always Use HTTPS): cookie_attributes auto then means SameSite=None;
	// Secure, whatever scheme the gate itself sees behind a TLS terminator.
	AlwaysUseHTTPS bool `json:"always_use_https,omitempty"`
	// QueueCapacity, when set, is how many visitors may wait before the
	// queue reads as full (queueIsFull on the page and in the JSON); 0: no
	// capacity, and the queue reads as full only past a day's wait.
	QueueCapacity int `json:"queue_capacity,omitempty"`

	// Not in Cloudflare Waiting Room's API (it fixes both): how often a queued
	// visitor checks in (jittered per visitor), and how old a snapshot a gate may decide on before it
	// queues every new visitor.
	RefreshIntervalSeconds int `json:"refresh_interval_seconds,omitempty"` // default 20
	SnapshotMaxAgeSeconds  int `json:"snapshot_max_age_seconds,omitempty"` // default 120
	// How many gates (reporters) the room takes reports from in one
	// minute; reports of further ones are dropped and counted, so invented
	// gate names cannot grow the room's state past what Temporal carries.
	MaxReportersPerMinute int `json:"max_reporters_per_minute,omitempty"` // default 1000
}

// The defaults of unset settings, Cloudflare Waiting Room's where it has one.
const (
	DefaultPath                   = "/"
	DefaultSessionDuration        = 5
	DefaultQueueingMethod         = FIFO
	DefaultQueueingStatusCode     = 200
	DefaultCookieSameSite         = "auto"
	DefaultCookieSecure           = "auto"
	DefaultRefreshIntervalSeconds = 20
	// MaxRefreshIntervalSeconds is half a minute, so that
	// a jittered interval still fits in every minute.
	MaxRefreshIntervalSeconds    = 30
	DefaultSnapshotMaxAgeSeconds = 120
	DefaultMaxReportersPerMinute = 1000

	MaxLimit          = 2147483647
	MaxSessionMinutes = 30
	MaxCustomPageSize = 64 << 10
	MaxRoutes         = 20
	// MaxPageBytes bounds the custom pages a room keeps, its own and all
	// its events' together: the room's whole state crosses continue-as-new
	// in one payload, which Temporal refuses above 2 MiB.
	MaxPageBytes = 512 << 10
	// MaxReportersLimit is the highest max_reporters_per_minute.
	MaxReportersLimit = 10000
)

// WithDefaults returns s with every unset setting at its default.
func (s Settings) WithDefaults() Settings {
	if s.Path == "" {
		s.Path = DefaultPath
	}
	if s.SessionDuration == 0 {
		s.SessionDuration = DefaultSessionDuration
	}
	if s.QueueingMethod == "" {
		s.QueueingMethod = DefaultQueueingMethod
	}
	if s.QueueingStatusCode == 0 {
		s.QueueingStatusCode = DefaultQueueingStatusCode
	}
	if s.CookieAttributes.SameSite == "" {
		s.CookieAttributes.SameSite = DefaultCookieSameSite
	}
	if s.CookieAttributes.Secure == "" {
		s.CookieAttributes.Secure = DefaultCookieSecure
	}
	if s.RefreshIntervalSeconds == 0 {
		s.RefreshIntervalSeconds = DefaultRefreshIntervalSeconds
	}
	if s.SnapshotMaxAgeSeconds == 0 {
		s.SnapshotMaxAgeSeconds = DefaultSnapshotMaxAgeSeconds
	}
	if s.MaxReportersPerMinute == 0 {
		s.MaxReportersPerMinute = DefaultMaxReportersPerMinute
	}
	if len(s.EnabledOriginCommands) == 0 {
		s.EnabledOriginCommands = nil // [] and absent are the same setting
	}
	if len(s.AdditionalRoutes) == 0 {
		s.AdditionalRoutes = nil
	}
	s.AdditionalRoutes = slices.Clone(s.AdditionalRoutes) // never write through to the caller's slice
	for i, r := range s.AdditionalRoutes {
		if r.Path == "" {
			s.AdditionalRoutes[i].Path = DefaultPath
		}
	}
	return s
}

// ReportersPerMinute is max_reporters_per_minute, its default for settings
// kept before it existed.
func (s Settings) ReportersPerMinute() int {
	if s.MaxReportersPerMinute <= 0 {
		return DefaultMaxReportersPerMinute
	}
	return s.MaxReportersPerMinute
}

// RevokeEnabled reports whether the origin may end sessions.
func (s Settings) RevokeEnabled() bool { return slices.Contains(s.EnabledOriginCommands, "revoke") }

// Routes lists the primary route, then the additional ones.
func (s Settings) Routes() []Route {
	return append([]Route{{Host: s.Host, Path: s.Path}}, s.AdditionalRoutes...)
}

// FieldError says which setting is wrong and why.
type FieldError struct {
	Field  string `json:"field"`
	Reason string `json:"reason"`
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Reason }

// InvalidError lists every problem found, in field order.
type InvalidError struct{ Problems []*FieldError }

func (e *InvalidError) Error() string {
	parts := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		parts[i] = p.Error()
	}
	return "invalid settings: " + strings.Join(parts, "; ")
}

// First is the first problem, for messages that name one field.
func (e *InvalidError) First() *FieldError { return e.Problems[0] }

type problems []*FieldError

func (p *problems) add(field, format string, args ...any) {
	*p = append(*p, &FieldError{Field: field, Reason: fmt.Sprintf(format, args...)})
}

func (p problems) err() error {
	if len(p) == 0 {
		return nil
	}
	return &InvalidError{Problems: p}
}

var (
	namePattern       = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
	hostLabelPattern  = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)
	cookieSuffixRegex = regexp.MustCompile(`^[A-Za-z0-9_-]{0,64}$`)
)

// ValidName reports whether name can name a room or an event: letters,
// digits, hyphens and underscores, at most 64 (it becomes part of a workflow
// ID and of a cookie name).
func ValidName(name string) bool { return namePattern.MatchString(name) }

// Validate checks settings that have had their defaults applied and returns
// an *InvalidError naming every wrong field, or nil.
func (s Settings) Validate() error { return s.validate(checks{}) }

// ValidateForMinute is Validate for a room whose minute lasts minuteSeconds
// (0: 60).
func (s Settings) ValidateForMinute(minuteSeconds int) error {
	return s.validate(checks{minuteSeconds: minuteSeconds})
}

// checks picks what a validation relaxes; the zero value checks everything,
// as new settings are. A room replaying its history relaxes what was added
// after it was recorded, so it accepts again what it accepted then.
type checks struct {
	// minuteSeconds, when set, is the room's minute: an explicit
	// refresh_interval_seconds past half of a shorter minute is refused.
	minuteSeconds int
	legacyPages   bool // custom_page_html by its syntax only (see RevStrictPages)
	recordedPaths bool // route paths as first accepted, matchable or not
}

func (s Settings) validate(c checks) error {
	var p problems
	if !ValidName(s.Name) {
		p.add("name", "must be 1-64 letters, digits, hyphens or underscores, got %q", s.Name)
	}
	if len(s.Description) > 1024 {
		p.add("description", "must be at most 1024 bytes, got %d", len(s.Description))
	}
	validateRoute(&p, "host", "path", Route{s.Host, s.Path}, !c.recordedPaths)
	if len(s.AdditionalRoutes) > MaxRoutes {
		p.add("additional_routes", "at most %d routes, got %d", MaxRoutes, len(s.AdditionalRoutes))
	}
	for i, r := range s.AdditionalRoutes {
		validateRoute(&p, fmt.Sprintf("additional_routes[%d].host", i), fmt.Sprintf("additional_routes[%d].path", i), r, !c.recordedPaths)
	}
	routes := s.Routes()
	for i := 1; i < len(routes); i++ {
		if slices.Contains(routes[:i], routes[i]) {
			p.add(fmt.Sprintf("additional_routes[%d]", i-1), "host %q and path %q are already covered by this room", routes[i].Host, routes[i].Path)
		}
	}
	validateLimits(&p, "", s.TotalActiveUsers, s.NewUsersPerMinute, s.SessionDuration, s.QueueingMethod)
	switch s.QueueingStatusCode {
	case 200, 202, 429:
	default:
		p.add("queueing_status_code", "must be 200, 202 or 429, got %d", s.QueueingStatusCode)
	}
	for i, c := range s.EnabledOriginCommands {
		if c != "revoke" {
			p.add(fmt.Sprintf("enabled_origin_commands[%d]", i), `the only origin command is "revoke", got %q`, c)
		} else if slices.Index(s.EnabledOriginCommands, c) != i {
			p.add(fmt.Sprintf("enabled_origin_commands[%d]", i), "%q is listed twice", c)
		}
	}
	validatePage(&p, "custom_page_html", s.CustomPageHTML, c.legacyPages)
	switch s.CookieAttributes.SameSite {
	case "auto", "lax", "strict", "none":
	default:
		p.add("cookie_attributes.samesite", "must be auto, lax, strict or none, got %q", s.CookieAttributes.SameSite)
	}
	switch s.CookieAttributes.Secure {
	case "auto", "always", "never":
	default:
		p.add("cookie_attributes.secure", "must be auto, always or never, got %q", s.CookieAttributes.Secure)
	}
	if s.CookieAttributes.SameSite == "none" && s.CookieAttributes.Secure == "never" {
		p.add("cookie_attributes.secure", "samesite none needs a secure cookie (browsers drop it otherwise): use auto or always")
	}
	if !cookieSuffixRegex.MatchString(s.CookieSuffix) {
		p.add("cookie_suffix", "must be at most 64 letters, digits, hyphens or underscores, got %q", s.CookieSuffix)
	}
	if s.RefreshIntervalSeconds < 1 || s.RefreshIntervalSeconds > MaxRefreshIntervalSeconds {
		p.add("refresh_interval_seconds", "must be between 1 and %d, got %d", MaxRefreshIntervalSeconds, s.RefreshIntervalSeconds)
	}
	if s.QueueCapacity < 0 || s.QueueCapacity > MaxLimit {
		p.add("queue_capacity", "must be between 0 (no capacity) and %d, got %d", MaxLimit, s.QueueCapacity)
	}
	if m := c.minuteSeconds; m > 0 && m < DefaultMinute && s.RefreshIntervalSeconds != DefaultRefreshIntervalSeconds &&
		2*s.RefreshIntervalSeconds > m {
		p.add("refresh_interval_seconds", "must be at most half the room's %d-s minute (%d), got %d", m, m/2, s.RefreshIntervalSeconds)
	}
	if s.SnapshotMaxAgeSeconds < 10 || s.SnapshotMaxAgeSeconds > 3600 {
		p.add("snapshot_max_age_seconds", "must be between 10 and 3600, got %d", s.SnapshotMaxAgeSeconds)
	}
	if s.MaxReportersPerMinute < 1 || s.MaxReportersPerMinute > MaxReportersLimit {
		p.add("max_reporters_per_minute", "must be between 1 and %d, got %d", MaxReportersLimit, s.MaxReportersPerMinute)
	}
	return p.err()
}

// validateLimits checks the settings an event may override too; prefix
// names the object ("" for the room).
func validateLimits(p *problems, prefix string, total, perMinute, session int, method QueueingMethod) {
	if total < 1 || total > MaxLimit {
		p.add(prefix+"total_active_users", "must be between 1 and %d, got %d", MaxLimit, total)
	}
	if perMinute < 1 || perMinute > MaxLimit {
		p.add(prefix+"new_users_per_minute", "must be between 1 and %d, got %d", MaxLimit, perMinute)
	}
	if session < 1 || session > MaxSessionMinutes {
		p.add(prefix+"session_duration", "must be between 1 and %d minutes, got %d", MaxSessionMinutes, session)
	}
	if !method.Valid() {
		p.add(prefix+"queueing_method", "must be fifo, random, passthrough or reject, got %q", method)
	}
}

func validatePage(p *problems, field, page string, legacy bool) {
	if len(page) > MaxCustomPageSize {
		p.add(field, "must be at most %d bytes, got %d", MaxCustomPageSize, len(page))
		return
	}
	if page == "" {
		return
	}
	check := func(src string) error { _, err := ParsePage(src); return err }
	if legacy {
		check = checkPageSyntax
	}
	if err := check(page); err != nil {
		p.add(field, "%v", err)
	}
}

func validateRoute(p *problems, hostField, pathField string, r Route, matchablePaths bool) {
	if r.Host != "" {
		if reason := hostProblem(r.Host); reason != "" {
			p.add(hostField, "%s, got %q", reason, r.Host)
		}
	}
	switch {
	case !strings.HasPrefix(r.Path, "/"):
		p.add(pathField, "must start with /, got %q", r.Path)
	case len(r.Path) > 1024:
		p.add(pathField, "must be at most 1024 bytes")
	case strings.ContainsAny(r.Path, "?#* \t\r\n"):
		p.add(pathField, "must not hold a query, a fragment, a wildcard or whitespace, got %q", r.Path)
	case matchablePaths:
		// A path no request can match would leave its pages unprotected
		// while the room looks in place.
		if reason := RoutePathProblem(r.Path); reason != "" {
			p.add(pathField, "%s, got %q", reason, r.Path)
		}
	}
}

func hostProblem(h string) string {
	if strings.Contains(h, "://") {
		return "must be a host name without a scheme"
	}
	if h != strings.ToLower(h) {
		return "must be lower case"
	}
	if len(h) > 253 {
		return "must be at most 253 bytes"
	}
	for _, label := range strings.Split(h, ".") {
		if !hostLabelPattern.MatchString(label) {
			return "must be a host name (no port, no wildcard)"
		}
	}
	return ""
}

// ParseSettings reads settings from JSON, applies the defaults and validates
// them. Unknown fields and wrong types are refused with the field's name, so
// a typo never silently falls back to a default.
func ParseSettings(data []byte) (Settings, error) {
	s, err := DecodeSettings(data)
	if err != nil {
		return Settings{}, err
	}
	s = s.WithDefaults()
	if err := s.Validate(); err != nil {
		return Settings{}, err
	}
	return s, nil
}

// DecodeSettings reads settings from JSON strictly (unknown fields and
// wrong types refused by name) without applying defaults or validating, for
// callers that change them further first.
func DecodeSettings(data []byte) (Settings, error) {
	var s Settings
	if err := decodeStrict(data, &s); err != nil {
		return Settings{}, err
	}
	return s, nil
}

// failingField finds the top-level field of a JSON object that v's type
// refuses to decode (a time that does not parse, say: the decoder's own
// error names no field), or "" when none alone does.
func failingField(data []byte, v any) string {
	var doc map[string]json.RawMessage
	if json.Unmarshal(data, &doc) != nil {
		return ""
	}
	t := reflect.TypeOf(v).Elem()
	keys := slices.Sorted(maps.Keys(doc))
	for _, k := range keys {
		one, err := json.Marshal(map[string]json.RawMessage{k: doc[k]})
		if err == nil && json.Unmarshal(one, reflect.New(t).Interface()) != nil {
			return k
		}
	}
	return ""
}

// decodeStrict decodes exactly one JSON object into v, naming the field of
// any type error and refusing unknown fields.
func decodeStrict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) && typeErr.Field != "" {
			return &InvalidError{Problems: []*FieldError{{Field: typeErr.Field, Reason: fmt.Sprintf("must be a %s, got a JSON %s", typeErr.Type, typeErr.Value)}}}
		}
		if field, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
			if field = strings.Trim(field, `"`); field == "" {
				field = `""`
			}
			return &InvalidError{Problems: []*FieldError{{Field: field, Reason: "is not a setting"}}}
		}
		if field := failingField(data, v); field != "" {
			return &InvalidError{Problems: []*FieldError{{Field: field, Reason: "invalid: " + err.Error()}}}
		}
		return &InvalidError{Problems: []*FieldError{{Field: "(document)", Reason: "not a JSON object: " + err.Error()}}}
	}
	if _, err := dec.Token(); err != io.EOF {
		return &InvalidError{Problems: []*FieldError{{Field: "(document)", Reason: "holds more than one JSON value"}}}
	}
	return nil
}
