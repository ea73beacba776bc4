package objectstore

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// JSON documents: small objects read and written whole, updated with
// optimistic concurrency on stores that have conditional writes.

var jsonPut = PutOptions{Metadata: Metadata{ContentType: "application/json"}}

// GetJSON decodes the object into v and returns its ETag.
func GetJSON(ctx context.Context, s Store, bucket, key string, v any) (string, error) {
	body, info, err := s.Get(ctx, bucket, key)
	if err != nil {
		return "", err
	}
	defer body.Close()
	if err := json.NewDecoder(body).Decode(v); err != nil {
		return "", fmt.Errorf("decode %s/%s: %w", bucket, key, err)
	}
	return info.ETag, nil
}

// PutJSON writes v as JSON.
func PutJSON(ctx context.Context, s Store, bucket, key string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode %s/%s: %w", bucket, key, err)
	}
	return PutBytes(ctx, s, bucket, key, data, jsonPut)
}

// updateAttempts bounds how often UpdateJSON re-applies after losing a race.
const updateAttempts = 50

// UpdateJSON is a read-modify-write of one JSON document that never loses a
// concurrent update: the write is conditional on the ETag that was read (or
// on absence), and a lost race re-reads and re-applies. apply mutates a
// fresh document (found says whether one existed) and returns false to skip
// the write. The store must be a ConditionalWriter.
func UpdateJSON[T any](ctx context.Context, s Store, bucket, key string, apply func(doc *T, found bool) (bool, error)) (*T, error) {
	cw, ok := s.(ConditionalWriter)
	if !ok {
		return nil, fmt.Errorf("update %s/%s: conditional writes: %w", bucket, key, ErrNotSupported)
	}
	for attempt := 0; ; attempt++ {
		doc := new(T)
		etag, err := GetJSON(ctx, s, bucket, key, doc)
		found := err == nil
		if err != nil && !errors.Is(err, ErrNotFound) {
			return nil, err
		}
		write, err := apply(doc, found)
		if err != nil || !write {
			return doc, err
		}
		data, err := json.Marshal(doc)
		if err != nil {
			return nil, fmt.Errorf("encode %s/%s: %w", bucket, key, err)
		}
		cond := Precondition{IfNoneMatch: "*"}
		if found {
			cond = Precondition{IfMatch: etag}
		}
		_, err = cw.PutIf(ctx, bucket, key, bytes.NewReader(data), int64(len(data)), jsonPut, cond)
		if err == nil {
			return doc, nil
		}
		if !errors.Is(err, ErrPreconditionFailed) || attempt+1 >= updateAttempts {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(time.Duration(attempt+1) * 5 * time.Millisecond):
		}
	}
}
