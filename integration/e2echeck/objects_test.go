package e2echeck

import (
	"bytes"
	"context"
	"io"
	"sync"
	"testing"

	"github.com/edgeflow/edgeflow/internal/migrate"
	"github.com/edgeflow/edgeflow/internal/migrate/migratetest"
	"github.com/edgeflow/edgeflow/internal/objectstore"
)

// healingStore answers each object's first two requests of each kind with
// 503 SlowDownWrite, as a distributed MinIO does while a restarted node
// heals, then keeps objects in memory. Only Put and Get are used.
type healingStore struct {
	objectstore.Store
	mu      sync.Mutex
	refused map[string]int
	objects map[string][]byte
}

func newHealingStore() *healingStore {
	return &healingStore{refused: map[string]int{}, objects: map[string][]byte{}}
}

func (s *healingStore) throttle(what string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refused[what]++
	return s.refused[what] <= 2
}

func (s *healingStore) Put(_ context.Context, bucket, key string, r io.Reader, _ int64, _ objectstore.PutOptions) (objectstore.ObjectInfo, error) {
	if s.throttle("put " + key) {
		return objectstore.ObjectInfo{}, slowDownWrite
	}
	data, err := io.ReadAll(r)
	if err != nil {
		return objectstore.ObjectInfo{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.objects[bucket+"/"+key] = data
	return objectstore.ObjectInfo{Key: key, Size: int64(len(data))}, nil
}

func (s *healingStore) Get(_ context.Context, bucket, key string) (io.ReadCloser, objectstore.ObjectInfo, error) {
	if s.throttle("get " + key) {
		return nil, objectstore.ObjectInfo{}, slowDownWrite
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	data, ok := s.objects[bucket+"/"+key]
	if !ok {
		return nil, objectstore.ObjectInfo{}, &objectstore.Error{Op: "get", Bucket: bucket, Key: key, Code: "NoSuchKey", StatusCode: 404, Kind: objectstore.ErrNoSuchKey}
	}
	return io.NopCloser(bytes.NewReader(data)), objectstore.ObjectInfo{Key: key, Size: int64(len(data))}, nil
}

// make cluster-test seeded the migration's source right after the publish
// part stopped and started a MinIO node again, and the store answered
// SlowDownWrite past minio-go's own retries: the seeding failed and the
// migrate part never started. Seeding and the comparison wait out a store
// that throttles; only a copy missing or different counts.
func TestSeedAndCompareWaitOutAHealingStore(t *testing.T) {
	ctx := context.Background()
	objs := Generated(20, 7)
	s := newHealingStore()
	if err := Seed(ctx, s, "src", objs); err != nil {
		t.Fatalf("seed: %v", err)
	}
	if len(s.objects) != len(objs) {
		t.Fatalf("seed: %d objects stored, want %d", len(s.objects), len(objs))
	}
	delete(s.objects, "src/"+objs[3].Key)
	var missing []string
	same, diff := Compare(ctx, s, "src", migrate.KeyMap{}, objs, func(o migratetest.Object, _ []byte, _ error) { missing = append(missing, o.Key) })
	if same != int64(len(objs)-1) || diff != 1 || len(missing) != 1 || missing[0] != objs[3].Key {
		t.Errorf("compare: %d same, %d different %v; want all but %s the same", same, diff, missing, objs[3].Key)
	}
}
