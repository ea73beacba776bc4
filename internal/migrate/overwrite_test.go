package migrate_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/edgeflow/edgeflow/internal/migrate"
	"github.com/edgeflow/edgeflow/internal/migrate/migratetest"
	"github.com/edgeflow/edgeflow/internal/objectstore"
	"github.com/edgeflow/edgeflow/internal/objectstore/s3"
)

// racingDest is a real destination where another writer creates the key
// while the copy runs: after its first part (a multipart or composed
// copy), or before the page's listing ends (hidden from it: a single
// server-side copy).
type racingDest struct {
	*s3.Store
	bucket, key string
	intruder    []byte
	once        sync.Once
	t           *testing.T
}

func (d *racingDest) intrude() {
	d.once.Do(func() {
		if err := objectstore.PutBytes(context.Background(), d.Store, d.bucket, d.key, d.intruder, objectstore.PutOptions{}); err != nil {
			d.t.Error(err)
		}
	})
}

func (d *racingDest) UploadPart(ctx context.Context, u objectstore.Upload, n int, r io.Reader, size int64) (objectstore.Part, error) {
	p, err := d.Store.UploadPart(ctx, u, n, r, size)
	d.intrude()
	return p, err
}

func (d *racingDest) UploadPartCopy(ctx context.Context, u objectstore.Upload, n int, src objectstore.ByteRange) (objectstore.Part, error) {
	p, err := d.Store.UploadPartCopy(ctx, u, n, src)
	d.intrude()
	return p, err
}

// List does not show the intruder: it came after the listing.
func (d *racingDest) List(ctx context.Context, bucket string, opts objectstore.ListOptions) (objectstore.ListPage, error) {
	page, err := d.Store.List(ctx, bucket, opts)
	kept := page.Objects[:0]
	for _, o := range page.Objects {
		if o.Key != d.key {
			kept = append(kept, o)
		}
	}
	page.Objects = kept
	return page, err
}

// overwrite=never holds on every copy path: an object that appears at the
// destination during a multipart copy between stores, a composed
// server-side copy or (just before) a single server-side copy stays as it
// is, and the object is skipped with the reason.
func TestNeverOverwritesWhatAppearsDuringTheCopy(t *testing.T) {
	ctx := context.Background()
	big := make([]byte, 12*mib+3)
	if _, err := rand.Read(big); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		sameSide bool
		data     []byte
		preExist bool // created before, hidden from the listing
	}{
		{"multipart between stores", false, big, false},
		{"composed server-side copy", true, big, false},
		{"single server-side copy", true, []byte("small source object"), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srcBucket := migratetest.Bucket(t, env.Store, "nv-src")
			listed := migratetest.Seed(t, env.Store, srcBucket, []migratetest.Object{{Key: "k/obj.bin", Data: tc.data}})
			base, dstBucket := env.Store2, migratetest.Bucket(t, env.Store2, "nv-dst")
			if tc.sameSide {
				base, dstBucket = env.Store, migratetest.Bucket(t, env.Store, "nv-dst")
			}
			dest := &racingDest{Store: base, bucket: dstBucket, key: "k/obj.bin", intruder: []byte("written by someone else"), t: t}
			if tc.preExist {
				dest.intrude()
			}
			opts := testOptions()
			opts.Policy = migrate.OverwriteNever
			res := migrate.Transfer(ctx, migrate.Sides{Source: env.Store, SourceBucket: srcBucket, Dest: dest, DestBucket: dstBucket}, listed, opts)
			if len(res) != 1 || res[0].Status != migrate.StatusSkipped || !strings.Contains(res[0].Reason, "overwrite=never") {
				t.Fatalf("results %+v: want skipped, appeared during the copy", res)
			}
			got, _, err := objectstore.ReadAll(ctx, base, dstBucket, "k/obj.bin")
			if err != nil || !bytes.Equal(got, dest.intruder) {
				t.Fatalf("the destination holds %d bytes (%v): overwritten", len(got), err)
			}
		})
	}
}
