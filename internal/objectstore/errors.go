package objectstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
)

// Error kinds. Every error a store returns for a request it could classify
// wraps one of these, so callers test with errors.Is:
//
//	errors.Is(err, objectstore.ErrNotFound)      // key, bucket or upload missing
//	errors.Is(err, objectstore.ErrNoSuchKey)     // ... the key in particular
//	objectstore.IsTransient(err)                 // worth retrying
var (
	// ErrNotFound is the parent of ErrNoSuchKey, ErrNoSuchBucket and ErrNoSuchUpload.
	ErrNotFound           = errors.New("not found")
	ErrNoSuchKey    error = &kind{"no such key", ErrNotFound}
	ErrNoSuchBucket error = &kind{"no such bucket", ErrNotFound}
	ErrNoSuchUpload error = &kind{"no such multipart upload", ErrNotFound}

	// ErrPreconditionFailed: a conditional write or copy found the object
	// not as required (it changed, or it exists).
	ErrPreconditionFailed = errors.New("precondition failed")
	// ErrConflict: the request conflicts with the bucket's state (the bucket
	// exists, or is not empty).
	ErrConflict           = errors.New("conflict")
	ErrBucketExists error = &kind{"bucket already exists", ErrConflict}

	// ErrAccessDenied is the parent of ErrBadCredentials: the store refused
	// the request (a policy, or credentials it does not accept).
	ErrAccessDenied         = errors.New("access denied")
	ErrBadCredentials error = &kind{"credentials rejected", ErrAccessDenied}

	// ErrTransient: the store is busy or unreachable for now (503 SlowDown,
	// other 5xx, 429, timeouts, connection resets). Retrying later may work.
	ErrTransient = errors.New("transient failure")

	// ErrTooLarge: the object is too large for the request (e.g. a single
	// copy of more than MaxCopySize).
	ErrTooLarge = errors.New("too large for this request")
	// ErrInvalid: the store rejected the request itself (a bad name, part
	// number or argument); retrying the same request will not help.
	ErrInvalid = errors.New("invalid request")
	// ErrNotSupported: the store lacks a capability a helper needs.
	ErrNotSupported = errors.New("not supported by this store")
)

// KindOfStatus is the kind an HTTP status alone says, for answers whose
// store-specific code a store does not know; nil when it says none.
func KindOfStatus(status int) error {
	const statusClientClosedRequest = 499
	switch {
	case status == http.StatusNotFound:
		return ErrNotFound
	case status == http.StatusPreconditionFailed:
		return ErrPreconditionFailed
	case status == http.StatusForbidden:
		return ErrAccessDenied
	case status == http.StatusTooManyRequests || status >= 500,
		// 499: the store saw the request's connection (or one between its
		// nodes) go away, MinIO's ClientDisconnected; a HEAD's answer has
		// no body to carry that code, so the status must say it.
		status == statusClientClosedRequest:
		return ErrTransient
	case status == http.StatusConflict:
		return ErrConflict
	}
	return nil
}

// kind is a sentinel with a parent: errors.Is(ErrNoSuchKey, ErrNotFound).
type kind struct {
	msg    string
	parent error
}

func (k *kind) Error() string { return k.msg }
func (k *kind) Unwrap() error { return k.parent }

// Error is what a store returns for a failed request: what was asked, of
// which object, on which endpoint, the store's own error code and the kind.
// It never holds credentials: stores must not put secrets into Message or Err.
type Error struct {
	Op       string // "get", "put", "copy", ...
	Bucket   string
	Key      string
	Endpoint string // host:port of the store
	// Code and StatusCode are the store's answer ("SlowDown", 503); empty
	// and 0 when no answer came (a network error).
	Code       string
	StatusCode int
	Message    string
	// Kind is one of the Err* sentinels, nil when unclassified.
	Kind error
	// Err is the underlying cause when it is not a store answer (a network
	// error, a context error).
	Err error
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Op)
	if where := e.where(); where != "" {
		b.WriteString(" " + where)
	}
	if e.Endpoint != "" {
		b.WriteString(" on " + e.Endpoint)
	}
	b.WriteString(": ")
	var parts []string
	if e.Kind != nil {
		parts = append(parts, e.Kind.Error())
	}
	if e.Code != "" {
		detail := e.Code
		if e.Message != "" {
			detail += ": " + e.Message
		}
		parts = append(parts, "("+detail+")")
	}
	if e.Err != nil {
		parts = append(parts, e.Err.Error())
	}
	if len(parts) == 0 {
		parts = append(parts, "failed")
	}
	b.WriteString(strings.Join(parts, " "))
	return b.String()
}

func (e *Error) where() string {
	switch {
	case e.Key != "":
		return e.Bucket + "/" + e.Key
	default:
		return e.Bucket
	}
}

// Unwrap exposes the kind and the cause to errors.Is and errors.As.
func (e *Error) Unwrap() []error {
	var out []error
	if e.Kind != nil {
		out = append(out, e.Kind)
	}
	if e.Err != nil {
		out = append(out, e.Err)
	}
	return out
}

// IsTransient reports whether err is worth retrying: the store was busy,
// failed inside, or could not be reached. A cancelled context is not
// transient (the caller gave up); a request that timed out is.
func IsTransient(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, ErrTransient) {
		return true
	}
	var se *Error
	if errors.As(err, &se) && se.Kind != nil {
		return false // classified as something else
	}
	return isNetworkFailure(err)
}

// isNetworkFailure recognises errors of the connection rather than of the
// request: timeouts, resets, refused connections, cut-off responses.
func isNetworkFailure(err error) bool {
	if errors.Is(err, context.Canceled) {
		return false
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	for _, target := range []error{syscall.ECONNRESET, syscall.ECONNREFUSED, syscall.ECONNABORTED, syscall.EPIPE,
		syscall.ETIMEDOUT, syscall.EHOSTUNREACH, syscall.ENETUNREACH, io.ErrUnexpectedEOF, io.EOF} {
		if errors.Is(err, target) {
			return true
		}
	}
	var op *net.OpError
	return errors.As(err, &op)
}

// ClassifyNetwork returns ErrTransient for a network failure and nil
// otherwise; stores use it to set Error.Kind when no answer came.
func ClassifyNetwork(err error) error {
	if isNetworkFailure(err) {
		return ErrTransient
	}
	return nil
}

// wrapf names an operation of a helper around a store error.
func wrapf(err error, format string, args ...any) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf(format+": %w", append(args, err)...)
}
