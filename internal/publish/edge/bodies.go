package edge

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/edgeflow/edgeflow/internal/objectstore"
)

// fileCacheKey names one representation of one published file by the object
// holding its bytes: a file reused from an earlier version is read (and
// cached once) where that version stored it.
type fileCacheKey struct {
	object string
	enc    encoding
}

// objectKey is the bucket key of the representation.
func (k fileCacheKey) objectKey() string {
	return k.object + k.enc.suffix()
}

// sourceCache is the source of a body the cache held (X-Edge-Source).
const sourceCache = "cache"

// cacheEntryOverhead approximates the memory of a cache entry beyond its body.
const cacheEntryOverhead = 256

// smallBody returns a whole (cacheable-size) representation: from the cache,
// else from the primary, else from the mirror. Concurrent misses for one key
// share a single fetch. source is "cache", "primary" or "mirror".
func (s *Server) smallBody(ctx context.Context, key fileCacheKey, size int64) (data []byte, source string, err error) {
	if data, ok := s.files.Get(key); ok {
		s.metrics.hits.Inc()
		return data, sourceCache, nil
	}
	s.metrics.misses.Inc()
	type result struct {
		data   []byte
		source string
	}
	// The fetch is shared, so it must not die with the first requester.
	ch := s.fileFlight.DoChan(key.objectKey(), func() (any, error) {
		data, source, err := s.fetchWhole(context.WithoutCancel(ctx), key, size)
		if err != nil {
			return nil, err
		}
		s.files.Add(key, data, int64(len(data))+cacheEntryOverhead+int64(len(key.object)))
		return result{data, source}, nil
	})
	select {
	case res := <-ch:
		if res.Err != nil {
			return nil, "", res.Err
		}
		r := res.Val.(result)
		return r.data, r.source, nil
	case <-ctx.Done():
		return nil, "", ctx.Err()
	}
}

// store is one place a file body can come from.
type store struct {
	name    string
	store   objectstore.Store
	bucket  string
	timeout time.Duration
	primary bool
}

// stores lists the places to read a file from, in order: the primary then
// the mirror, or the mirror first while the primary is in its cooldown after
// a failure (it stays the last resort).
func (s *Server) stores() [2]store {
	primary := store{"primary", s.cfg.Primary, s.cfg.Buckets.Files, s.cfg.PrimaryTimeout, true}
	mirror := store{"mirror", s.cfg.Mirror, s.cfg.Buckets.Mirror, s.cfg.MirrorTimeout, false}
	if s.primary.available() {
		return [2]store{primary, mirror}
	}
	return [2]store{mirror, primary}
}

// noteFailure logs a failed read and trips the primary's breaker when the
// store itself failed (a missing object means the store works).
func (s *Server) noteFailure(st store, key string, err error) {
	if st.primary && !errors.Is(err, objectstore.ErrNotFound) {
		s.primary.failed()
	}
	next := "mirror"
	if !st.primary {
		next = "primary"
	}
	s.log.Warn("file read failed; trying the other store", "store", st.name, "next", next, "key", key, "error", err)
}

func (s *Server) fetchWhole(ctx context.Context, key fileCacheKey, size int64) ([]byte, string, error) {
	objKey := key.objectKey()
	var errs []error
	for _, st := range s.stores() {
		fctx, cancel := context.WithTimeout(ctx, st.timeout)
		data, _, err := objectstore.ReadAll(fctx, st.store, st.bucket, objKey)
		cancel()
		if err == nil && int64(len(data)) != size {
			err = fmt.Errorf("%s/%s holds %d bytes where the version document says %d", st.bucket, objKey, len(data), size)
		}
		if err == nil {
			if !st.primary {
				s.log.Info("served from the mirror", "key", objKey)
			}
			return data, st.name, nil
		}
		if ctx.Err() != nil {
			return nil, "", ctx.Err()
		}
		errs = append(errs, fmt.Errorf("%s: %w", st.name, err))
		s.noteFailure(st, objKey, err)
	}
	return nil, "", fmt.Errorf("%w: %w", errBothStoresFailed, errors.Join(errs...))
}

// openBody opens bytes [start, start+length) of a large representation for
// streaming. The store's timeout covers the wait for the response headers,
// not the transfer.
func (s *Server) openBody(ctx context.Context, key fileCacheKey, start, length, size int64) (io.ReadCloser, string, error) {
	objKey := key.objectKey()
	ranged := start != 0 || length != size
	var errs []error
	for _, st := range s.stores() {
		octx, cancel := context.WithCancel(ctx)
		timer := time.AfterFunc(st.timeout, cancel)
		body, info, err := open(octx, st.store, st.bucket, objKey, ranged, start, length)
		if err == nil && !timer.Stop() {
			body.Close()
			err = fmt.Errorf("no response within %s", st.timeout)
		}
		if err == nil && info.Size != size {
			body.Close()
			err = fmt.Errorf("%s/%s holds %d bytes where the version document says %d", st.bucket, objKey, info.Size, size)
		}
		if err == nil {
			if !st.primary {
				s.log.Info("served from the mirror", "key", objKey)
			}
			return cancelOnClose{body, cancel}, st.name, nil
		}
		timer.Stop()
		cancel()
		if ctx.Err() != nil {
			return nil, "", ctx.Err()
		}
		errs = append(errs, fmt.Errorf("%s: %w", st.name, err))
		s.noteFailure(st, objKey, err)
	}
	return nil, "", fmt.Errorf("%w: %w", errBothStoresFailed, errors.Join(errs...))
}

// open reads the whole object, or a range of it from a store that can.
func open(ctx context.Context, s objectstore.Store, bucket, key string, ranged bool, start, length int64) (io.ReadCloser, objectstore.ObjectInfo, error) {
	if !ranged {
		return s.Get(ctx, bucket, key)
	}
	rr, ok := s.(objectstore.RangeReader)
	if !ok {
		return nil, objectstore.ObjectInfo{}, fmt.Errorf("%s/%s: range read: %w", bucket, key, objectstore.ErrNotSupported)
	}
	return rr.GetRange(ctx, bucket, key, start, length)
}

// cancelOnClose releases the read's context when the body is closed.
type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (c cancelOnClose) Close() error {
	err := c.ReadCloser.Close()
	c.cancel()
	return err
}
