package migrate

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/edgeflow/edgeflow/internal/objectstore"
)

// Small objects go to a destination that extracts archives (MinIO's
// "snowball" uploads) in batches: one request for up to Concurrency of
// them, which MinIO writes in parallel, instead of one request each. The
// source is still read object by object; what changes is the destination's
// cost per object, its largest.
const (
	// batchCutoff is the largest object batched: it is held in memory
	// until its batch is written (at most three times Concurrency of them,
	// the workers Transfer runs when it batches).
	batchCutoff = 512 << 10
	batchBytes  = 8 << 20
	// batchesInFlight is how many batches go at once: while they are
	// written the next one fills, so batches grow with the rate of reads
	// (Nagle's way) and no timer is needed.
	batchesInFlight = 2
)

// errNotBatched: the object was not written (its batch was never sent, or
// the store kept the batch whole); it is to be written on its own.
var errNotBatched = errors.New("not batched")

// batchFailed is the error of each object of a batch whose write failed,
// or could not be confirmed: what the store wrote is unknown, so each is
// tried again on its own, as a retry, which looks at the destination
// first (Decide's recovering) and so never writes an object twice. It
// carries the batch's error as text only: one request's failure is not
// each key's (the store health counts failures per key), and the retry's
// own requests say what the store does.
func batchFailed(err error) error {
	return fmt.Errorf("its batch failed (%v): %w", err, objectstore.ErrTransient)
}

// batcher gathers one page's small writes into batches. Whether the store
// extracts them is not known before the first batch: it is written alone,
// and its last entry looked up; a store that kept the archive as one
// object (its first entry's key) gets every entry written on its own,
// which replaces it, and no batch after.
type batcher struct {
	w       objectstore.BatchWriter
	store   objectstore.Store
	bucket  string
	entries int

	mu       sync.Mutex
	cur      *batch
	inFlight int

	probe    sync.Mutex // held while the first batch finds out
	settled  bool       // under probe
	works    bool       // under probe (read after settled)
	off      chan struct{}
	offOnce  sync.Once
	verdicts *BatchVerdicts // told when the store keeps archives whole
}

type batch struct {
	entries []objectstore.BatchEntry
	bytes   int
	done    chan struct{}
	err     error
}

func newBatcher(dst objectstore.Store, bucket string, concurrency int, verdicts *BatchVerdicts) *batcher {
	w, ok := dst.(objectstore.BatchWriter)
	if !ok {
		return nil
	}
	return &batcher{w: w, store: dst, bucket: bucket, entries: max(4, concurrency), off: make(chan struct{}), verdicts: verdicts}
}

// batchable says whether an object of this size and destination key may
// go in a batch under the policy: never overwriting needs a conditional
// write, which an archive's entries cannot carry.
func (b *batcher) batchable(size int64, key string, policy Overwrite) bool {
	if b == nil || size > batchCutoff || policy == OverwriteNever || !objectstore.BatchKey(key) {
		return false
	}
	select {
	case <-b.off:
		return false
	default:
		return true
	}
}

// put adds an entry to the open batch and waits until its batch is written.
// The batch goes when it is full or when fewer than batchesInFlight are
// being written; otherwise the end of one being written sends it.
// errNotBatched (or any error) means the caller writes it on its own.
func (b *batcher) put(ctx context.Context, e objectstore.BatchEntry) error {
	b.mu.Lock()
	cur := b.cur
	if cur == nil {
		cur = &batch{done: make(chan struct{})}
		b.cur = cur
	}
	cur.entries = append(cur.entries, e)
	cur.bytes += len(e.Data)
	send := len(cur.entries) >= b.entries || cur.bytes >= batchBytes || b.inFlight < batchesInFlight
	if send {
		b.cur = nil
		b.inFlight++
	}
	b.mu.Unlock()
	if send {
		b.send(cur)
	}
	select {
	case <-cur.done:
		return cur.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// send writes a batch, then sends whatever filled meanwhile (from a new
// goroutine: this one's writer is waiting for its own object).
func (b *batcher) send(cur *batch) {
	b.flush(cur)
	b.mu.Lock()
	b.inFlight--
	next := b.cur
	if next != nil {
		b.cur = nil
		b.inFlight++
	}
	b.mu.Unlock()
	if next != nil {
		go b.send(next)
	}
}

// flush writes a batch; the first one alone, to find out whether the store
// extracts it.
func (b *batcher) flush(cur *batch) {
	defer close(cur.done)
	// A batch is written whatever the context of the entry that filled it:
	// its other entries' writers wait for it.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	b.probe.Lock()
	if b.settled {
		works := b.works
		b.probe.Unlock()
		if !works {
			cur.err = errNotBatched
			return
		}
		cur.err = b.write(ctx, cur)
		return
	}
	defer b.probe.Unlock()
	if cur.err = b.write(ctx, cur); cur.err != nil {
		return // not settled: the next batch finds out
	}
	last := cur.entries[len(cur.entries)-1]
	info, err := b.store.Stat(ctx, b.bucket, last.Key)
	if err != nil && !errors.Is(err, objectstore.ErrNoSuchKey) {
		cur.err = batchFailed(err) // written, maybe: the retries look first
		return
	}
	sum := md5.Sum(last.Data)
	b.settled = true
	b.works = err == nil && info.Size == int64(len(last.Data)) && NormalizeETag(info.ETag) == hex.EncodeToString(sum[:])
	if !b.works {
		// A store that kept the batch whole, or whose ETags are no MD5
		// (encryption), gets single writes from now on; they replace
		// the archive kept under the first entry's key.
		b.offOnce.Do(func() { close(b.off) })
		b.verdicts.setKept(b.bucket)
		cur.err = errNotBatched
	}
}

// write sends a batch. A store asking to slow down gets, for each entry,
// the answer a single write would: it is waited out in the throttle path,
// which cuts concurrency and retries looking first, like batchFailed.
func (b *batcher) write(ctx context.Context, cur *batch) error {
	err := b.w.PutBatch(ctx, b.bucket, cur.entries)
	switch {
	case err == nil:
		return nil
	case IsThrottle(err):
		return fmt.Errorf("its batch was throttled: %w", err)
	}
	return batchFailed(err)
}

// BatchVerdicts remembers the buckets of one destination store that kept
// a batch whole (R2, S3 and most stores other than MinIO): their pages
// write each object on its own from the start.
type BatchVerdicts struct {
	mu   sync.Mutex
	kept map[string]bool
}

// Kept says whether bucket was found keeping archives whole.
func (v *BatchVerdicts) Kept(bucket string) bool {
	if v == nil {
		return false
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.kept[bucket]
}

func (v *BatchVerdicts) setKept(bucket string) {
	if v == nil {
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.kept == nil {
		v.kept = map[string]bool{}
	}
	v.kept[bucket] = true
}
