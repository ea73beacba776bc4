package migrate

import (
	"context"
	"io"

	"github.com/edgeflow/edgeflow/internal/objectstore"
)

// LimitSource paces every request to a source store, and the bytes it
// serves, by lim (nil: s itself). A whole read is booked at the size the
// caller expects (ReadingSize) before it is sent, a ranged read at its
// length, so a response never lands before its bytes were booked;
// whatever a response holds beyond that is charged when it arrives. A
// listing's response is charged as its estimated size, and so is the
// answer with an object's attributes on a store whose reads ask them first
// (objectstore.AttributesFirst: GCS), with its request.
func LimitSource(s objectstore.Store, lim *Limiter) objectstore.Store {
	if lim == nil {
		return s
	}
	l := limitedStore{inner: s, lim: lim}
	if rr, ok := s.(objectstore.RangeReader); ok {
		return limitedRangeStore{l, rr}
	}
	return l
}

// Unlimited is the store a LimitSource wraps (s itself otherwise): what a
// destination asks whether it can copy from server side.
func Unlimited(s objectstore.Store) objectstore.Store {
	if l, ok := asLimited(s); ok {
		return l.inner
	}
	return s
}

// ChargeServerCopy books a server-side copy of size bytes in requests
// requests against a limited source: the source store reads those bytes
// itself, so they count though they never cross the network.
func ChargeServerCopy(ctx context.Context, s objectstore.Store, size int64, requests int) error {
	l, ok := asLimited(s)
	if !ok {
		return ctx.Err()
	}
	for i := 1; i < requests; i++ {
		if err := l.lim.Wait(ctx, 0); err != nil {
			return err
		}
	}
	return l.lim.Wait(ctx, size)
}

func asLimited(s objectstore.Store) (limitedStore, bool) {
	switch l := s.(type) {
	case limitedStore:
		return l, true
	case limitedRangeStore:
		return l.limitedStore, true
	}
	return limitedStore{}, false
}

type readSizeKey struct{}

// ReadingSize tells a limited source the size of the whole object the
// next Get on ctx reads (from the listing), booked before it is sent.
func ReadingSize(ctx context.Context, size int64) context.Context {
	return context.WithValue(ctx, readSizeKey{}, size)
}

// listEntryBytes is about what one object costs in an S3 listing's XML
// (key, time, ETag, size, owner, storage class), beside its key.
const listEntryBytes = 320

type limitedStore struct {
	inner objectstore.Store
	lim   *Limiter
}

type limitedRangeStore struct {
	limitedStore
	rr objectstore.RangeReader
}

// attributes is what asking key's attributes first costs a read of it:
// a request and its answer's bytes (none on a store that does not).
func (l limitedStore) attributes(bucket, key string) (requests, bytes int64) {
	if a, ok := l.inner.(objectstore.AttributesFirst); ok {
		return 1, a.AttributesBytes(bucket, key)
	}
	return 0, 0
}

// chargeAttributes books what the attributes' answer held beyond the
// estimate booked before it: the user metadata (up to some 8 KiB on GCS)
// and the headers it names, as JSON, which the estimate leaves out.
func (l limitedStore) chargeAttributes(info objectstore.ObjectInfo) {
	if _, ok := l.inner.(objectstore.AttributesFirst); !ok {
		return
	}
	const perField = 8 // the quotes, colon and comma of a JSON field
	m := info.Metadata
	n := int64(len(m.ContentType) + len(m.CacheControl) + len(m.ContentEncoding) + len(m.ContentDisposition))
	for k, v := range m.User {
		n += int64(len(k)+len(v)) + perField
	}
	if n > 0 {
		l.lim.Charge(n)
	}
}

func (l limitedStore) Get(ctx context.Context, bucket, key string) (io.ReadCloser, objectstore.ObjectInfo, error) {
	booked, _ := ctx.Value(readSizeKey{}).(int64)
	attrRequests, attrBytes := l.attributes(bucket, key)
	if err := l.lim.WaitRequests(ctx, 1+attrRequests, booked+attrBytes); err != nil {
		return nil, objectstore.ObjectInfo{}, err
	}
	body, info, err := l.inner.Get(ctx, bucket, key)
	if err == nil {
		l.lim.Charge(info.Size - booked)
		l.chargeAttributes(info)
	}
	return body, info, err
}

func (l limitedRangeStore) GetRange(ctx context.Context, bucket, key string, offset, length int64) (io.ReadCloser, objectstore.ObjectInfo, error) {
	attrRequests, attrBytes := l.attributes(bucket, key)
	if err := l.lim.WaitRequests(ctx, 1+attrRequests, max(length, 0)+attrBytes); err != nil {
		return nil, objectstore.ObjectInfo{}, err
	}
	body, info, err := l.rr.GetRange(ctx, bucket, key, offset, length)
	if err == nil && length < 0 {
		l.lim.Charge(info.Size - offset)
	}
	if err == nil {
		l.chargeAttributes(info)
	}
	return body, info, err
}

func (l limitedStore) Put(ctx context.Context, bucket, key string, r io.Reader, size int64, opts objectstore.PutOptions) (objectstore.ObjectInfo, error) {
	if err := l.lim.Wait(ctx, 0); err != nil {
		return objectstore.ObjectInfo{}, err
	}
	return l.inner.Put(ctx, bucket, key, r, size, opts)
}

func (l limitedStore) Stat(ctx context.Context, bucket, key string) (objectstore.ObjectInfo, error) {
	_, attrBytes := l.attributes(bucket, key) // a Stat is that one request
	if err := l.lim.Wait(ctx, attrBytes); err != nil {
		return objectstore.ObjectInfo{}, err
	}
	info, err := l.inner.Stat(ctx, bucket, key)
	if err == nil {
		l.chargeAttributes(info)
	}
	return info, err
}

func (l limitedStore) Delete(ctx context.Context, bucket, key string) error {
	if err := l.lim.Wait(ctx, 0); err != nil {
		return err
	}
	return l.inner.Delete(ctx, bucket, key)
}

func (l limitedStore) List(ctx context.Context, bucket string, opts objectstore.ListOptions) (objectstore.ListPage, error) {
	if err := l.lim.Wait(ctx, 0); err != nil {
		return objectstore.ListPage{}, err
	}
	page, err := l.inner.List(ctx, bucket, opts)
	if err == nil {
		n := int64(listEntryBytes) // the envelope
		for _, o := range page.Objects {
			n += int64(len(o.Key)) + listEntryBytes
		}
		for _, p := range page.CommonPrefixes {
			n += int64(len(p)) + 40
		}
		l.lim.Charge(n)
	}
	return page, err
}
