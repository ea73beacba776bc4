package e2echeck

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"

	"github.com/edgeflow/edgeflow/internal/migrate"
	"github.com/edgeflow/edgeflow/internal/migrate/migratetest"
	"github.com/edgeflow/edgeflow/internal/objectstore"
)

// Generated makes n objects of 1 byte to 4 KiB of pseudo-random bytes (a
// byte out of place shows) under 50 prefixes; salt picks the bytes.
func Generated(n int, salt uint64) []migratetest.Object {
	out := make([]migratetest.Object, n)
	for i := range out {
		r := rand.New(rand.NewPCG(uint64(i), salt))
		data := make([]byte, 1+r.IntN(4<<10))
		for j := range data {
			data[j] = byte(r.Uint32())
		}
		out[i] = migratetest.Object{Key: fmt.Sprintf("gen/%02d/%06d.bin", i%50, i), Data: data}
	}
	return out
}

// TotalBytes is the objects' size.
func TotalBytes(objs []migratetest.Object) int64 {
	var n int64
	for _, o := range objs {
		n += int64(len(o.Data))
	}
	return n
}

// Parallel runs fn for each index below n on 16 goroutines.
func Parallel(n int, fn func(i int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				fn(i)
			}
		})
	}
	wg.Wait()
}

// Seed puts the objects into bucket, each waiting out a store that
// throttles or heals (Retry, StoreWait); it stops at the first object that
// fails for good and returns its error.
func Seed(ctx context.Context, s objectstore.Store, bucket string, objs []migratetest.Object) error {
	var failed atomic.Value
	Parallel(len(objs), func(i int) {
		if failed.Load() != nil {
			return
		}
		o := objs[i]
		err := Retry(ctx, StoreWait, "put "+bucket+"/"+o.Key, func() error {
			_, err := s.Put(ctx, bucket, o.Key, bytes.NewReader(o.Data), int64(len(o.Data)), objectstore.PutOptions{Metadata: o.Meta})
			return err
		})
		if err != nil {
			failed.CompareAndSwap(nil, err)
		}
	})
	err, _ := failed.Load().(error)
	return err
}

// Compare reads every object's copy (where m puts it) back from bucket and
// counts the byte-identical ones and the rest; different is told each of
// the rest (the copy's bytes and the error reading it), one at a time. A
// read the store throttles is tried again (Retry, StoreWait): only a copy
// missing or different, or a store failing past the bound, counts.
func Compare(ctx context.Context, s objectstore.Store, bucket string, m migrate.KeyMap, objs []migratetest.Object,
	different func(o migratetest.Object, got []byte, err error)) (same, diff int64) {
	var nSame, nDiff atomic.Int64
	var mu sync.Mutex
	Parallel(len(objs), func(i int) {
		o := objs[i]
		var data []byte
		key := m.Dest(o.Key)
		err := Retry(ctx, StoreWait, "read "+bucket+"/"+key, func() (err error) {
			data, _, err = objectstore.ReadAll(ctx, s, bucket, key)
			return err
		})
		if err == nil && bytes.Equal(data, o.Data) {
			nSame.Add(1)
			return
		}
		nDiff.Add(1)
		mu.Lock()
		defer mu.Unlock()
		different(o, data, err)
	})
	return nSame.Load(), nDiff.Load()
}
