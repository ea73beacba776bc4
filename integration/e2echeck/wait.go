package e2echeck

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/edgeflow/edgeflow/internal/objectstore"
)

// StoreWait bounds how long a seeding or a check waits out a store that
// throttles or is still healing: a distributed MinIO answers 503
// SlowDownWrite ("Resource requested is unwritable") for a while after
// one of its nodes stopped and started again, longer than minio-go's own
// retries (10, a second apart at most) last.
const StoreWait = 3 * time.Minute

// StatusError is an edge's answer other than 200.
type StatusError struct{ Status int }

func (e *StatusError) Error() string { return fmt.Sprintf("status %d", e.Status) }

// Transient reports whether err is worth trying again: the store or the
// edge was busy, failed inside or could not be reached (503 SlowDown*,
// other 5xx, 429, timeouts, resets), as opposed to an answer that will
// not change (a missing key, bytes that differ).
func Transient(err error) bool {
	var se *StatusError
	if errors.As(err, &se) {
		return se.Status == http.StatusTooManyRequests || se.Status >= 500
	}
	return objectstore.IsTransient(err)
}

// Retry calls fn until it succeeds, fails for good (not Transient), or
// within has passed since the first call, waiting 250 ms between the
// first tries and twice as long after each, up to 5 s. At the bound it
// says what it waited for and how long, with the last error.
func Retry(ctx context.Context, within time.Duration, what string, fn func() error) error {
	deadline := time.Now().Add(within)
	wait := 250 * time.Millisecond
	for tries := 1; ; tries++ {
		err := fn()
		if err == nil || !Transient(err) {
			return err
		}
		if !time.Now().Add(wait).Before(deadline) {
			return fmt.Errorf("%s: still failing after %d tries in %s (the bound): %w", what, tries, within, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: %w (last: %w)", what, ctx.Err(), err)
		case <-time.After(wait):
		}
		wait = min(2*wait, 5*time.Second)
	}
}
