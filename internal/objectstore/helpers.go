package objectstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
)

// ReadAll reads a whole object into memory.
func ReadAll(ctx context.Context, s Store, bucket, key string) ([]byte, ObjectInfo, error) {
	body, info, err := s.Get(ctx, bucket, key)
	if err != nil {
		return nil, info, err
	}
	defer body.Close()
	data, err := io.ReadAll(body)
	if err != nil {
		return nil, info, wrapf(err, "read %s/%s", bucket, key)
	}
	return data, info, nil
}

// PutBytes writes data under key.
func PutBytes(ctx context.Context, s Store, bucket, key string, data []byte, opts PutOptions) error {
	_, err := s.Put(ctx, bucket, key, bytes.NewReader(data), int64(len(data)), opts)
	return err
}

// Objects iterates over every object under prefix, in key order, one page at
// a time. Iteration stops at the first error, which is yielded.
func Objects(ctx context.Context, s Store, bucket, prefix string) iter.Seq2[ObjectInfo, error] {
	return func(yield func(ObjectInfo, error) bool) {
		opts := ListOptions{Prefix: prefix}
		for {
			page, err := s.List(ctx, bucket, opts)
			if err != nil {
				yield(ObjectInfo{}, err)
				return
			}
			for _, o := range page.Objects {
				if !yield(o, nil) {
					return
				}
			}
			if page.NextToken == "" {
				return
			}
			opts.ContinuationToken = page.NextToken
		}
	}
}

// ListAll returns every object under prefix, in key order.
func ListAll(ctx context.Context, s Store, bucket, prefix string) ([]ObjectInfo, error) {
	var out []ObjectInfo
	for o, err := range Objects(ctx, s, bucket, prefix) {
		if err != nil {
			return nil, err
		}
		out = append(out, o)
	}
	return out, nil
}

// DeletePrefix removes every object under prefix, in bulk when the store can.
func DeletePrefix(ctx context.Context, s Store, bucket, prefix string) error {
	bulk, _ := s.(BulkDeleter)
	var keys []string
	flush := func() error {
		if len(keys) == 0 {
			return nil
		}
		defer func() { keys = keys[:0] }()
		if bulk != nil {
			return bulk.DeleteKeys(ctx, bucket, keys)
		}
		for _, k := range keys {
			if err := s.Delete(ctx, bucket, k); err != nil {
				return err
			}
		}
		return nil
	}
	for o, err := range Objects(ctx, s, bucket, prefix) {
		if err != nil {
			return err
		}
		if keys = append(keys, o.Key); len(keys) == 1000 {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	return flush()
}

// EnsureBuckets creates the buckets that do not exist yet.
func EnsureBuckets(ctx context.Context, s Store, buckets ...string) error {
	bm, ok := s.(BucketManager)
	if !ok {
		return fmt.Errorf("create buckets %v: %w", buckets, ErrNotSupported)
	}
	for _, b := range buckets {
		exists, err := bm.BucketExists(ctx, b)
		if err != nil {
			return err
		}
		if exists {
			continue
		}
		if err := bm.MakeBucket(ctx, b); err != nil && !errors.Is(err, ErrBucketExists) {
			return err
		}
	}
	return nil
}
