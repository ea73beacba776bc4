package s3_test

import (
	"context"
	"io"
	"testing"

	"github.com/edgeflow/edgeflow/internal/objectstore"
	"github.com/edgeflow/edgeflow/internal/testenv"
)

// A batch is extracted by MinIO into its objects, each with its bytes and
// metadata, whatever its first key looks like (here a bzip2 stream's magic
// number, which MinIO would otherwise take the archive for).
func TestPutBatchExtracts(t *testing.T) {
	testenv.Require(t, env)
	ctx := context.Background()
	bucket := "batch-extract"
	if err := env.Store.MakeBucket(ctx, bucket); err != nil {
		t.Fatal(err)
	}
	entries := []objectstore.BatchEntry{
		{Key: "BZh91AY", Data: []byte("not a bzip2 stream")},
		{Key: "dir/ünïcødé +%.css", Data: []byte("body{}"), Metadata: objectstore.Metadata{ContentType: "text/css", CacheControl: "max-age=60",
			ContentDisposition: "inline", User: map[string]string{"origin": "batch"}}},
		{Key: "empty", Data: nil},
	}
	if err := env.Store.PutBatch(ctx, bucket, entries); err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		body, info, err := env.Store.Get(ctx, bucket, e.Key)
		if err != nil {
			t.Fatalf("%s: %v", e.Key, err)
		}
		data, _ := io.ReadAll(body)
		body.Close()
		if string(data) != string(e.Data) {
			t.Errorf("%s: %q, want %q", e.Key, data, e.Data)
		}
		want := e.Metadata
		if want.ContentType == "" {
			want.ContentType = "application/octet-stream"
		}
		if info.Metadata.ContentType != want.ContentType || info.Metadata.CacheControl != want.CacheControl ||
			info.Metadata.ContentDisposition != want.ContentDisposition || info.Metadata.User["origin"] != want.User["origin"] {
			t.Errorf("%s: metadata %+v, want %+v", e.Key, info.Metadata, want)
		}
	}
	// Only the entries: the first key holds its own bytes, nothing else is there.
	page, err := env.Store.List(ctx, bucket, objectstore.ListOptions{})
	if err != nil || len(page.Objects) != len(entries) {
		t.Fatalf("listed %+v, %v; want the %d entries", page.Objects, err, len(entries))
	}
	if err := env.Store.PutBatch(ctx, bucket, []objectstore.BatchEntry{{Key: "a//b"}}); err == nil {
		t.Fatal("a key the archive would change (a//b) was accepted")
	}
}
