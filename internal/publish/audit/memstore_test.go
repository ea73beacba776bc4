package audit

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"io"
	"sort"
	"strings"
	"sync"

	"github.com/edgeflow/edgeflow/internal/objectstore"
)

// memStore is an in-memory objectstore.Store with conditional writes, for
// tests of the logic (the real store is tested in integration/publish).
type memStore struct {
	mu      sync.Mutex
	objects map[string][]byte // bucket + "/" + key
	types   map[string]string
}

func newMemStore() *memStore {
	return &memStore{objects: map[string][]byte{}, types: map[string]string{}}
}

func etag(b []byte) string { s := md5.Sum(b); return hex.EncodeToString(s[:]) }

func (m *memStore) Get(_ context.Context, bucket, key string) (io.ReadCloser, objectstore.ObjectInfo, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, ok := m.objects[bucket+"/"+key]
	if !ok {
		return nil, objectstore.ObjectInfo{}, objectstore.ErrNoSuchKey
	}
	return io.NopCloser(bytes.NewReader(b)), m.info(bucket, key, b), nil
}

func (m *memStore) info(bucket, key string, b []byte) objectstore.ObjectInfo {
	return objectstore.ObjectInfo{Key: key, Size: int64(len(b)), ETag: etag(b),
		Metadata: objectstore.Metadata{ContentType: m.types[bucket+"/"+key]}}
}

func (m *memStore) Put(_ context.Context, bucket, key string, r io.Reader, _ int64, opts objectstore.PutOptions) (objectstore.ObjectInfo, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return objectstore.ObjectInfo{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.objects[bucket+"/"+key] = b
	m.types[bucket+"/"+key] = opts.ContentType
	return m.info(bucket, key, b), nil
}

func (m *memStore) PutIf(ctx context.Context, bucket, key string, r io.Reader, size int64, opts objectstore.PutOptions, cond objectstore.Precondition) (objectstore.ObjectInfo, error) {
	m.mu.Lock()
	b, ok := m.objects[bucket+"/"+key]
	m.mu.Unlock()
	if (cond.IfNoneMatch == "*" && ok) || (cond.IfMatch != "" && (!ok || etag(b) != cond.IfMatch)) {
		return objectstore.ObjectInfo{}, objectstore.ErrPreconditionFailed
	}
	return m.Put(ctx, bucket, key, r, size, opts)
}

func (m *memStore) Stat(_ context.Context, bucket, key string) (objectstore.ObjectInfo, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, ok := m.objects[bucket+"/"+key]
	if !ok {
		return objectstore.ObjectInfo{}, objectstore.ErrNoSuchKey
	}
	return m.info(bucket, key, b), nil
}

func (m *memStore) Delete(_ context.Context, bucket, key string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.objects, bucket+"/"+key)
	return nil
}

func (m *memStore) List(_ context.Context, bucket string, opts objectstore.ListOptions) (objectstore.ListPage, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var page objectstore.ListPage
	for k, b := range m.objects {
		if key, ok := strings.CutPrefix(k, bucket+"/"); ok && strings.HasPrefix(key, opts.Prefix) {
			page.Objects = append(page.Objects, m.info(bucket, key, b))
		}
	}
	sort.Slice(page.Objects, func(i, j int) bool { return page.Objects[i].Key < page.Objects[j].Key })
	return page, nil
}
