// Package failure is what a console caller may see of a failure that is
// not theirs: what failed, whether a service was unreachable, and the
// request's id. The cause (an S3 error naming the job store's endpoint
// and bucket, a Temporal RPC error, …) goes to the log under that same id,
// for the operator; any token, read-only included, sees only the summary.
// The API and the web pages share it, so both say the same.
package failure

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"

	"go.temporal.io/api/serviceerror"

	"github.com/edgeflow/edgeflow/internal/migrate/jobclient"
)

type requestIDKey struct{}

// NewRequestID is a random id for one request: short enough to read out,
// long enough not to collide within a log's lifetime.
func NewRequestID() string {
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return hex.EncodeToString(b)
}

// WithRequestID carries a request's id in its context.
func WithRequestID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, requestIDKey{}, id)
}

// RequestID is the id WithRequestID set, or "".
func RequestID(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}

// Hidden is an internal failure as a caller may see it.
type Hidden struct {
	What        string // what failed: "Temporal", "job store" or the request's route
	State       string // "unreachable", "timed out" or "failed"
	Unavailable bool   // a service the console needs was unreachable or slow (a 503), not a fault (a 500)
	RequestID   string // the log line's request_id
}

// Message is the caller's text: what failed and the id to quote to the
// operator, never the cause.
func (h Hidden) Message() string {
	what := h.State
	if h.What != "" {
		what = h.What + ": " + h.State
	}
	return what + " (request " + h.RequestID + "; the console's log has the cause)"
}

func (h Hidden) Error() string { return h.Message() }

// Hide logs err under the request's id (a new id if the context has none)
// and returns what the caller may see of it. what names the failed thing
// when the error itself does not say (an unreachable Temporal or job
// store does); "" when the caller's message names it already.
func Hide(ctx context.Context, log *slog.Logger, what string, err error) Hidden {
	h := Hidden{What: what, State: "failed", RequestID: RequestID(ctx)}
	if h.RequestID == "" {
		h.RequestID = NewRequestID()
	}
	var archive *jobclient.ArchiveError
	var unavailable *serviceerror.Unavailable
	var deadline *serviceerror.DeadlineExceeded
	switch {
	case errors.As(err, &archive):
		h.What, h.State, h.Unavailable = "job store", "unreachable", true
	case errors.As(err, &unavailable) || errors.As(err, &deadline):
		h.What, h.State, h.Unavailable = "Temporal", "unreachable", true
	case errors.Is(err, context.DeadlineExceeded):
		h.State, h.Unavailable = "timed out", true
	}
	log.ErrorContext(ctx, "request failed", "request_id", h.RequestID, "what", what, "err", err)
	return h
}
