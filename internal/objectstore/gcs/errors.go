package gcs

import (
	"context"
	"errors"
	"net/http"

	"cloud.google.com/go/auth"
	"cloud.google.com/go/storage"
	"google.golang.org/api/googleapi"

	"github.com/edgeflow/edgeflow/internal/objectstore"
)

// fail turns a client error into an *objectstore.Error of the right kind. A
// missing object is told apart from a missing bucket by asking for the
// bucket (GCS answers 404 for both), only on that error path.
func (s *Store) fail(ctx context.Context, op, bucket, key string, err error) error {
	e := &objectstore.Error{Op: op, Bucket: bucket, Key: key, Endpoint: s.host}
	var ge *googleapi.Error
	var ae *auth.Error
	switch {
	case errors.Is(err, storage.ErrBucketNotExist):
		e.Kind, e.StatusCode = objectstore.ErrNoSuchBucket, http.StatusNotFound
	case errors.Is(err, storage.ErrObjectNotExist):
		e.Kind, e.StatusCode = objectstore.ErrNoSuchKey, http.StatusNotFound
		if _, berr := s.client.Bucket(bucket).Attrs(ctx); errors.Is(berr, storage.ErrBucketNotExist) {
			e.Kind = objectstore.ErrNoSuchBucket
		}
	case errors.As(err, &ge):
		e.StatusCode, e.Message = ge.Code, ge.Message
		if len(ge.Errors) > 0 {
			e.Code = ge.Errors[0].Reason
		}
		e.Kind = kindOf(ge.Code, key)
	case errors.As(err, &ae):
		// The token exchange failed: the key is revoked, malformed or not
		// allowed. The auth error names no secret, only the OAuth answer.
		e.Kind, e.Err = objectstore.ErrBadCredentials, err
	default:
		e.Kind, e.Err = objectstore.ClassifyNetwork(err), err
	}
	return e
}

func kindOf(status int, key string) error {
	switch {
	case status == http.StatusNotFound && key == "":
		return objectstore.ErrNoSuchBucket
	case status == http.StatusNotFound:
		return objectstore.ErrNoSuchKey
	case status == http.StatusUnauthorized:
		return objectstore.ErrBadCredentials
	case status == http.StatusForbidden:
		return objectstore.ErrAccessDenied
	case status == http.StatusPreconditionFailed:
		return objectstore.ErrPreconditionFailed
	case status == http.StatusConflict:
		return objectstore.ErrConflict
	case status == http.StatusRequestedRangeNotSatisfiable, status == http.StatusBadRequest:
		return objectstore.ErrInvalid
	case status == http.StatusTooManyRequests, status == http.StatusRequestTimeout, status >= 500:
		return objectstore.ErrTransient
	}
	return nil
}
