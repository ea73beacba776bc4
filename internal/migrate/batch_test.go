package migrate_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/edgeflow/edgeflow/internal/migrate"
	"github.com/edgeflow/edgeflow/internal/migrate/migratetest"
	"github.com/edgeflow/edgeflow/internal/objectstore"
	"github.com/edgeflow/edgeflow/internal/objectstore/s3"
	"github.com/edgeflow/edgeflow/internal/testenv"
)

// Small objects reach a MinIO destination in batches (archives it
// extracts), each written once, with its bytes and metadata; odd keys and
// large objects go on their own.
func TestTransferBatchesSmallObjects(t *testing.T) {
	testenv.Require(t, env)
	objs := append(migratetest.Small("many/", 300, 8<<10), migratetest.OddObjects(t, 7*mib)...)
	srcBucket := migratetest.Bucket(t, env.Store, "src")
	listed := migratetest.Seed(t, env.Store, srcBucket, objs)
	dstBucket := migratetest.Bucket(t, env.Store2, "dst")
	proxy := migratetest.NewProxy(env.MinIO2.Endpoint)
	defer proxy.Close()
	sides := migrate.Sides{Source: env.Store, SourceBucket: srcBucket, Dest: through(t, proxy, env.Store2), DestBucket: dstBucket}
	opts := testOptions()
	opts.Concurrency = 32
	results := migrate.Transfer(context.Background(), sides, listed, opts)
	if got := byStatus(results)[migrate.StatusCopied]; len(got) != len(objs) {
		t.Fatalf("copied %d of %d: %+v", len(got), len(objs), results)
	}
	migratetest.CheckCopies(t, env.Store2, dstBucket, sides.Map, objs)
	writes := proxy.Writes()
	for _, o := range objs {
		if n := writes[dstBucket+"/"+o.Key]; n != 1 {
			t.Errorf("%s written %d times", o.Key, n)
		}
	}
	if b := proxy.Batches(); b == 0 || b > len(objs)/4 {
		t.Fatalf("%d batches for %d objects, want some, of several objects each", b, len(objs))
	}

	// Never overwriting needs a conditional write per object: no batch.
	never := migratetest.Bucket(t, env.Store2, "never")
	sides.DestBucket = never
	opts.Policy = migrate.OverwriteNever
	before := proxy.Batches()
	migrate.Transfer(context.Background(), sides, listed, opts)
	migratetest.CheckCopies(t, env.Store2, never, sides.Map, objs)
	if b := proxy.Batches(); b != before {
		t.Fatalf("overwrite=never sent %d batches", b-before)
	}

	// Per-object writes (what a store without extraction gets): no batch,
	// each object written once.
	perObject := migratetest.Bucket(t, env.Store2, "per-object")
	sides.DestBucket = perObject
	opts.Policy, opts.PerObjectWrites = migrate.OverwriteIfDifferent, true
	before = proxy.Batches()
	migrate.Transfer(context.Background(), sides, listed, opts)
	migratetest.CheckCopies(t, env.Store2, perObject, sides.Map, objs)
	if b := proxy.Batches(); b != before {
		t.Fatalf("per-object writes sent %d batches", b-before)
	}
	writes = proxy.Writes()
	for _, o := range objs {
		if n := writes[perObject+"/"+o.Key]; n != 1 {
			t.Errorf("per-object: %s written %d times", o.Key, n)
		}
	}
}

// keepsArchives is a store that does not extract batches: it keeps the
// request's body as one object under the first entry's key, as AWS S3 does
// with an archive it does not know.
type keepsArchives struct {
	*s3.Store
	batches *atomic.Int64 // PutBatch calls (nil: not counted)
}

func (k keepsArchives) PutBatch(ctx context.Context, bucket string, entries []objectstore.BatchEntry) error {
	if k.batches != nil {
		k.batches.Add(1)
	}
	_, err := k.Put(ctx, bucket, entries[0].Key, strings.NewReader("an archive kept whole"), 21, objectstore.PutOptions{})
	return err
}

// A destination that keeps the first batch whole gets every object on its
// own, the first batch's included: every copy is right.
func TestTransferFallsBackWhenBatchesAreNotExtracted(t *testing.T) {
	testenv.Require(t, env)
	objs := migratetest.Small("many/", 120, 4<<10)
	srcBucket := migratetest.Bucket(t, env.Store, "src")
	listed := migratetest.Seed(t, env.Store, srcBucket, objs)
	dstBucket := migratetest.Bucket(t, env.Store2, "dst")
	sides := migrate.Sides{Source: env.Store, SourceBucket: srcBucket, Dest: keepsArchives{Store: env.Store2}, DestBucket: dstBucket}
	opts := testOptions()
	opts.Concurrency = 16
	results := migrate.Transfer(context.Background(), sides, listed, opts)
	if got := byStatus(results)[migrate.StatusCopied]; len(got) != len(objs) {
		t.Fatalf("copied %d of %d: %+v", len(got), len(objs), results)
	}
	migratetest.CheckCopies(t, env.Store2, dstBucket, sides.Map, objs)
}

// A destination found keeping archives whole is remembered for the pages
// after (each probing it would write its first batch twice, as an archive
// and then object by object): only the first page sends a batch.
func TestTransferRemembersAStoreThatKeepsArchives(t *testing.T) {
	testenv.Require(t, env)
	objs := migratetest.Small("pages/", 200, 2<<10)
	srcBucket := migratetest.Bucket(t, env.Store, "src")
	listed := migratetest.Seed(t, env.Store, srcBucket, objs)
	dstBucket := migratetest.Bucket(t, env.Store2, "dst")
	var batches atomic.Int64
	sides := migrate.Sides{Source: env.Store, SourceBucket: srcBucket, Dest: keepsArchives{Store: env.Store2, batches: &batches}, DestBucket: dstBucket}
	opts := testOptions()
	opts.Concurrency = 16
	opts.BatchVerdicts = &migrate.BatchVerdicts{}
	for page := range 4 {
		results := migrate.Transfer(context.Background(), sides, listed[page*50:(page+1)*50], opts)
		if got := byStatus(results)[migrate.StatusCopied]; len(got) != 50 {
			t.Fatalf("page %d: copied %d of 50: %+v", page, len(got), results)
		}
	}
	migratetest.CheckCopies(t, env.Store2, dstBucket, sides.Map, objs)
	if n := batches.Load(); n != 1 {
		t.Fatalf("%d batches sent over 4 pages, want only the first page's probe", n)
	}
}

// A batch whose write, or the lookup that confirms it, is answered with
// SlowDown leaves its objects to retries that look before they write:
// every object is still written once, whichever request the store refused.
func TestTransferBatchesUnderThrottlingWriteOnce(t *testing.T) {
	testenv.Require(t, env)
	objs := migratetest.Small("t/", 200, 2<<10)
	srcBucket := migratetest.Bucket(t, env.Store, "src")
	listed := migratetest.Seed(t, env.Store, srcBucket, objs)
	proxy := migratetest.NewProxy(env.MinIO2.Endpoint)
	defer proxy.Close()
	// Every other request refused, from the first, second, third or fourth
	// on: the page's listing, its first batch and the lookup after it each
	// get refused in one of the runs.
	for offset := range 4 {
		dstBucket := migratetest.Bucket(t, env.Store2, "dst")
		sides := migrate.Sides{Source: env.Store, SourceBucket: srcBucket, Dest: through(t, proxy, env.Store2), DestBucket: dstBucket}
		proxy.ResetWrites()
		proxy.Throttle(40 + offset)
		opts := testOptions()
		opts.Concurrency = 16
		results := migrate.Transfer(context.Background(), sides, listed, opts)
		if got := byStatus(results)[migrate.StatusCopied]; len(got) != len(objs) {
			t.Fatalf("offset %d: copied %d of %d: %+v", offset, len(got), len(objs), byStatus(results))
		}
		migratetest.CheckCopies(t, env.Store2, dstBucket, sides.Map, objs)
		writes := proxy.Writes()
		for _, o := range objs {
			if n := writes[dstBucket+"/"+o.Key]; n != 1 {
				t.Errorf("offset %d: %s written %d times", offset, o.Key, n)
			}
		}
	}
}
