// Package logging is every process's structured logger (log/slog): text
// for a terminal and `make run`, JSON with LOG_FORMAT=json, at LOG_LEVEL
// (debug, info, warn, error; default info). Attributes whose name says they
// hold a secret (a password, a secret key, a token, an API key, an
// Authorization header…) are redacted whatever their value, so a secret
// passed to a log call by mistake never reaches the output. The Temporal
// SDK's loggers (workflow.GetLogger, activity.GetLogger) write through the
// same handler and add WorkflowID, RunID and, in activities, ActivityType
// and Attempt to every line.
package logging

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
)

// Redacted replaces a secret's value.
const Redacted = "[redacted]"

// Options say how to log; zero values come from LOG_FORMAT and LOG_LEVEL.
type Options struct {
	Format string // text or json
	Level  string
}

// New is the logger of component (a pool, "edge", "gate"), writing to w
// (os.Stderr when nil) as LOG_FORMAT and LOG_LEVEL say.
func New(component string, w io.Writer) *slog.Logger {
	l, err := NewWith(component, w, Options{})
	if err != nil {
		fmt.Fprintf(os.Stderr, "warning: %v; logging text at info\n", err)
		l, _ = NewWith(component, w, Options{Format: "text", Level: "info"})
	}
	return l
}

// NewWith is New with explicit options; an unknown format or level is an error.
func NewWith(component string, w io.Writer, o Options) (*slog.Logger, error) {
	h, err := Handler(w, o)
	if err != nil {
		return nil, err
	}
	l := slog.New(h)
	if component != "" {
		l = l.With("component", component)
	}
	return l, nil
}

// Handler is the slog handler New uses.
func Handler(w io.Writer, o Options) (slog.Handler, error) {
	if w == nil {
		w = os.Stderr
	}
	if o.Format == "" {
		o.Format = os.Getenv("LOG_FORMAT")
	}
	if o.Level == "" {
		o.Level = os.Getenv("LOG_LEVEL")
	}
	var level slog.Level
	if o.Level != "" {
		if err := level.UnmarshalText([]byte(o.Level)); err != nil {
			return nil, fmt.Errorf("LOG_LEVEL=%q: want debug, info, warn or error", o.Level)
		}
	}
	opts := &slog.HandlerOptions{Level: level, ReplaceAttr: redact}
	switch strings.ToLower(o.Format) {
	case "", "text":
		return slog.NewTextHandler(w, opts), nil
	case "json":
		return slog.NewJSONHandler(w, opts), nil
	}
	return nil, fmt.Errorf("LOG_FORMAT=%q: want text or json", o.Format)
}

// redact hides the values of attributes named like secrets.
func redact(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() != slog.KindGroup && IsSecretName(a.Key) {
		return slog.String(a.Key, Redacted)
	}
	return a
}

// IsSecretName reports whether an attribute or setting called name holds
// a secret: password, secret, secret_key, token, api_key, authorization,
// credentials, cookie…
func IsSecretName(name string) bool {
	n := strings.ToLower(strings.NewReplacer("_", "", "-", "", ".", "").Replace(name))
	for _, s := range []string{"password", "passwd", "secret", "token", "apikey", "authorization", "credential", "cookie", "privatekey"} {
		if strings.Contains(n, s) {
			return true
		}
	}
	return false
}
