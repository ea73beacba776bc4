package main

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/edgeflow/edgeflow/internal/admit"
)

// settingsFlags are the flags named after the room settings. Only the flags
// given on the command line change anything.
type settingsFlags struct {
	description, host, path, method, customPage, sameSite, secure, cookieSuffix string
	total, perMinute, session, statusCode, refresh, maxAge, maxReporters        int
	queueAll, suspended, noRenewal, jsonResponse, pathCaseInsensitive           bool
	alwaysHTTPS                                                                 bool
	queueCapacity                                                               int
	routes, commands                                                            listFlag
}

type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }
func (l *listFlag) Type() string       { return "strings" }

func (f *settingsFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.description, "description", "", "description")
	fs.StringVar(&f.host, "host", "", "host the room covers (none: every host)")
	fs.StringVar(&f.path, "path", "", "path the room covers, with everything below it (default /)")
	fs.Var(&f.routes, "additional-routes", "another HOST/PATH or /PATH the room covers (repeatable)")
	fs.BoolVar(&f.pathCaseInsensitive, "path-case-insensitive", false, "match the room's paths whatever their case (for origins that ignore case)")
	fs.IntVar(&f.total, "total-active-users", 0, "sessions allowed at once (required to create)")
	fs.IntVar(&f.perMinute, "new-users-per-minute", 0, "new visitors admitted a minute (required to create)")
	fs.IntVar(&f.session, "session-duration", 0, "minutes a session lasts after the last request (default 5)")
	fs.StringVar(&f.method, "queueing-method", "", "fifo, random, passthrough or reject (default fifo)")
	fs.IntVar(&f.statusCode, "queueing-status-code", 0, "status of the queue page: 200, 202 or 429 (default 200)")
	fs.BoolVar(&f.queueAll, "queue-all", false, "queue everyone new")
	fs.BoolVar(&f.suspended, "suspended", false, "turn the room off: traffic passes untouched")
	fs.BoolVar(&f.noRenewal, "disable-session-renewal", false, "sessions run from admission, not from the last request")
	fs.Var(&f.commands, "enabled-origin-commands", "origin commands to honour: revoke (repeatable)")
	fs.BoolVar(&f.jsonResponse, "json-response-enabled", false, "answer Accept: application/json with the cfWaitingRoom object")
	fs.StringVar(&f.customPage, "custom-page-html", "", "Mustache template of the queue page; @FILE reads it from a file")
	fs.StringVar(&f.sameSite, "cookie-attributes-samesite", "", "auto, lax, strict or none (default auto)")
	fs.StringVar(&f.secure, "cookie-attributes-secure", "", "auto, always or never (default auto)")
	fs.StringVar(&f.cookieSuffix, "cookie-suffix", "", "suffix of the cookie name")
	fs.IntVar(&f.refresh, "refresh-interval-seconds", 0, "queued visitors' check-in interval (default 20)")
	fs.IntVar(&f.maxAge, "snapshot-max-age-seconds", 0, "how old a snapshot gates may admit new visitors on (default 120)")
	fs.BoolVar(&f.alwaysHTTPS, "always-use-https", false, "the site is served over HTTPS only: cookie attributes auto mean SameSite=None; Secure")
	fs.IntVar(&f.queueCapacity, "queue-capacity", 0, "visitors waiting at which the page says the queue is full (0: none)")
	fs.IntVar(&f.maxReporters, "max-reporters-per-minute", 0, "gates whose reports the room takes in a minute; further ones are dropped and counted (default 1000)")
}

// apply sets the settings whose flags were given on fs.
func (f *settingsFlags) apply(fs *pflag.FlagSet, s *admit.Settings) error {
	var err error
	fs.Visit(func(fl *pflag.Flag) {
		switch fl.Name {
		case "description":
			s.Description = f.description
		case "host":
			s.Host = f.host
		case "path":
			s.Path = f.path
		case "additional-routes":
			s.AdditionalRoutes = nil
			for _, r := range f.routes {
				s.AdditionalRoutes = append(s.AdditionalRoutes, parseRoute(r))
			}
		case "path-case-insensitive":
			s.PathCaseInsensitive = f.pathCaseInsensitive
		case "total-active-users":
			s.TotalActiveUsers = f.total
		case "new-users-per-minute":
			s.NewUsersPerMinute = f.perMinute
		case "session-duration":
			s.SessionDuration = f.session
		case "queueing-method":
			s.QueueingMethod = admit.QueueingMethod(f.method)
		case "queueing-status-code":
			s.QueueingStatusCode = f.statusCode
		case "queue-all":
			s.QueueAll = f.queueAll
		case "suspended":
			s.Suspended = f.suspended
		case "disable-session-renewal":
			s.DisableSessionRenewal = f.noRenewal
		case "enabled-origin-commands":
			s.EnabledOriginCommands = nil
			for _, c := range f.commands {
				s.EnabledOriginCommands = append(s.EnabledOriginCommands, strings.Split(c, ",")...)
			}
		case "json-response-enabled":
			s.JSONResponseEnabled = f.jsonResponse
		case "custom-page-html":
			s.CustomPageHTML = f.customPage
			if path, ok := strings.CutPrefix(f.customPage, "@"); ok {
				data, rerr := os.ReadFile(path)
				if rerr != nil {
					err = &admit.InvalidError{Problems: []*admit.FieldError{{Field: "custom_page_html", Reason: rerr.Error()}}}
				}
				s.CustomPageHTML = string(data)
			}
		case "cookie-attributes-samesite":
			s.CookieAttributes.SameSite = f.sameSite
		case "cookie-attributes-secure":
			s.CookieAttributes.Secure = f.secure
		case "cookie-suffix":
			s.CookieSuffix = f.cookieSuffix
		case "refresh-interval-seconds":
			s.RefreshIntervalSeconds = f.refresh
		case "snapshot-max-age-seconds":
			s.SnapshotMaxAgeSeconds = f.maxAge
		case "always-use-https":
			s.AlwaysUseHTTPS = f.alwaysHTTPS
		case "queue-capacity":
			s.QueueCapacity = f.queueCapacity
		case "max-reporters-per-minute":
			s.MaxReportersPerMinute = f.maxReporters
		}
	})
	return err
}

// parseRoute reads HOST/PATH, /PATH or HOST.
func parseRoute(v string) admit.Route {
	if strings.HasPrefix(v, "/") {
		return admit.Route{Path: v}
	}
	host, path, found := strings.Cut(v, "/")
	if !found {
		return admit.Route{Host: host}
	}
	return admit.Route{Host: host, Path: "/" + path}
}

// eventFlags are the flags named after an event's fields.
type eventFlags struct {
	description, start, end, prequeue, method string
	total, perMinute, session                 int
	shuffle, noRenewal                        bool
	customPage                                string
}

func (f *eventFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.description, "description", "", "description")
	fs.StringVar(&f.start, "event-start-time", "", "start: RFC 3339 time, or +DURATION from now (required)")
	fs.StringVar(&f.end, "event-end-time", "", "end: RFC 3339 time, or +DURATION from now (required)")
	fs.StringVar(&f.prequeue, "prequeue-start-time", "", "pre-queue from: RFC 3339 time, or +DURATION from now")
	fs.BoolVar(&f.shuffle, "shuffle-at-event-start", false, "admit the pre-queued visitors in random order at the start")
	fs.IntVar(&f.total, "total-active-users", 0, "override during the event (needs --new-users-per-minute)")
	fs.IntVar(&f.perMinute, "new-users-per-minute", 0, "override during the event")
	fs.IntVar(&f.session, "session-duration", 0, "override during the event (minutes)")
	fs.StringVar(&f.method, "queueing-method", "", "override during the event")
	fs.BoolVar(&f.noRenewal, "disable-session-renewal", false, "override during the event")
	fs.StringVar(&f.customPage, "custom-page-html", "", "override during the event; @FILE reads a file")
}

func (f *eventFlags) apply(fs *pflag.FlagSet, e *admit.Event, now time.Time) error {
	var problems []*admit.FieldError
	at := func(field, v string) time.Time {
		t, err := parseTime(v, now)
		if err != nil {
			problems = append(problems, &admit.FieldError{Field: field, Reason: err.Error()})
		}
		return t
	}
	fs.Visit(func(fl *pflag.Flag) {
		switch fl.Name {
		case "description":
			e.Description = f.description
		case "event-start-time":
			e.EventStartTime = at("event_start_time", f.start)
		case "event-end-time":
			e.EventEndTime = at("event_end_time", f.end)
		case "prequeue-start-time":
			t := at("prequeue_start_time", f.prequeue)
			e.PrequeueStartTime = &t
		case "shuffle-at-event-start":
			e.ShuffleAtEventStart = f.shuffle
		case "total-active-users":
			e.TotalActiveUsers = &f.total
		case "new-users-per-minute":
			e.NewUsersPerMinute = &f.perMinute
		case "session-duration":
			e.SessionDuration = &f.session
		case "queueing-method":
			m := admit.QueueingMethod(f.method)
			e.QueueingMethod = &m
		case "disable-session-renewal":
			e.DisableSessionRenewal = &f.noRenewal
		case "custom-page-html":
			page := f.customPage
			if path, ok := strings.CutPrefix(page, "@"); ok {
				data, err := os.ReadFile(path)
				if err != nil {
					problems = append(problems, &admit.FieldError{Field: "custom_page_html", Reason: err.Error()})
				}
				page = string(data)
			}
			e.CustomPageHTML = &page
		}
	})
	if len(problems) > 0 {
		return &admit.InvalidError{Problems: problems}
	}
	return nil
}

func parseTime(v string, now time.Time) (time.Time, error) {
	if d, ok := strings.CutPrefix(v, "+"); ok {
		dur, err := time.ParseDuration(d)
		if err != nil {
			return time.Time{}, fmt.Errorf("%q is not +DURATION (like +10m): %v", v, err)
		}
		return now.Add(dur).UTC().Truncate(time.Second), nil
	}
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is not an RFC 3339 time (like 2030-01-02T15:04:05Z) or +DURATION", v)
	}
	return t.UTC(), nil
}
