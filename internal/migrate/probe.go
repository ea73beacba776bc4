package migrate

import (
	"context"
	"errors"
	"fmt"

	"github.com/edgeflow/edgeflow/internal/objectstore"
)

// Probe asks a store that seemed down whether it is back, with the
// precheck's requests made once each: the source is listed and one object
// read, the destination listed and written (a multipart upload begun and
// aborted, so nothing appears there). Any failure, a 403 included, says
// the store is not usable yet; the caller waits and asks again.
func Probe(ctx context.Context, side string, store objectstore.Store, loc Location, job string) error {
	if side == SideSource {
		return probeSource(ctx, store, loc)
	}
	return probeDest(ctx, store, loc, job)
}

func probeSource(ctx context.Context, src objectstore.Store, loc Location) error {
	page, err := src.List(ctx, loc.Bucket, objectstore.ListOptions{Prefix: loc.Prefix, MaxKeys: 1})
	if err != nil {
		return fmt.Errorf("listing: %w", err)
	}
	if len(page.Objects) == 0 {
		return nil
	}
	key := page.Objects[0].Key
	var body interface{ Close() error }
	if rr, ok := src.(objectstore.RangeReader); ok {
		body, _, err = rr.GetRange(ctx, loc.Bucket, key, 0, 1)
	} else {
		body, _, err = src.Get(ctx, loc.Bucket, key)
	}
	switch {
	case errors.Is(err, objectstore.ErrInvalid), errors.Is(err, objectstore.ErrNoSuchKey):
		return nil // a zero-byte object, or one just deleted: reading works
	case err != nil:
		return fmt.Errorf("reading %s: %w", key, err)
	}
	return body.Close()
}

func probeDest(ctx context.Context, dst objectstore.Store, loc Location, job string) error {
	if _, err := dst.List(ctx, loc.Bucket, objectstore.ListOptions{Prefix: loc.Prefix, MaxKeys: 1}); err != nil {
		return fmt.Errorf("listing: %w", err)
	}
	probe := loc.Prefix + ".edgeflow-precheck-" + job
	if mu, ok := dst.(objectstore.MultipartUploader); ok {
		up, err := mu.CreateMultipartUpload(ctx, loc.Bucket, probe, objectstore.PutOptions{})
		if err != nil {
			return fmt.Errorf("writing: %w", err)
		}
		if err := mu.AbortMultipartUpload(context.WithoutCancel(ctx), up); err != nil {
			return fmt.Errorf("aborting a test upload: %w", err)
		}
		return nil
	}
	if _, err := dst.Put(ctx, loc.Bucket, probe, eofReader{}, 0, objectstore.PutOptions{}); err != nil {
		return fmt.Errorf("writing: %w", err)
	}
	if err := dst.Delete(ctx, loc.Bucket, probe); err != nil {
		return fmt.Errorf("removing the test object %s: %w", probe, err)
	}
	return nil
}
