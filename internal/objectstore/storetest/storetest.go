// Package storetest is the conformance suite of objectstore: Run checks the
// core of a Store and every capability it has against the behaviour the
// objectstore package documents, on a real store. Each implementation runs it
// in its own tests (the s3 package against MinIO).
package storetest

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/edgeflow/edgeflow/internal/objectstore"
)

// Run checks s; bucket is created if missing and must be used by nothing
// else while Run runs.
func Run(t *testing.T, s objectstore.Store, bucket string) {
	ctx := context.Background()
	if err := objectstore.EnsureBuckets(ctx, s, bucket); err != nil {
		t.Fatalf("create bucket %s: %v", bucket, err)
	}
	t.Run("PutGetStatKeepMetadata", func(t *testing.T) { putGetStat(t, s, bucket) })
	t.Run("PutOfUnknownSize", func(t *testing.T) { putUnknownSize(t, s, bucket) })
	t.Run("NotFoundIsClassified", func(t *testing.T) { notFound(t, s, bucket) })
	t.Run("Delete", func(t *testing.T) { deleteObject(t, s, bucket) })
	t.Run("ListPages", func(t *testing.T) { listPages(t, s, bucket) })
	t.Run("DeletePrefix", func(t *testing.T) { deletePrefix(t, s, bucket) })
	capability[objectstore.Copier](t, s, "Copier", func(t *testing.T, c objectstore.Copier) { serverSideCopy(t, s, c, bucket) })
	capability[objectstore.ConditionalWriter](t, s, "ConditionalWriter", func(t *testing.T, c objectstore.ConditionalWriter) {
		conditionalWrites(t, s, c, bucket)
		updateJSON(t, s, bucket)
	})
	capability[objectstore.RangeReader](t, s, "RangeReader", func(t *testing.T, r objectstore.RangeReader) { rangeReads(t, s, r, bucket) })
	capability[objectstore.MultipartUploader](t, s, "MultipartUploader", func(t *testing.T, m objectstore.MultipartUploader) {
		multipart(t, s, m, bucket)
	})
	capability[objectstore.PartCopier](t, s, "PartCopier", func(t *testing.T, _ objectstore.PartCopier) { compose(t, s, bucket) })
	capability[objectstore.BucketManager](t, s, "BucketManager", func(t *testing.T, b objectstore.BucketManager) {
		buckets(t, b, bucket+"-made")
	})
}

// capability runs check when s has capability C, and logs that it has not.
func capability[C any](t *testing.T, s objectstore.Store, name string, check func(*testing.T, C)) {
	c, ok := s.(C)
	if !ok {
		t.Logf("%T has no %s: skipped its checks", s, name)
		return
	}
	t.Run(name, func(t *testing.T) { check(t, c) })
}

var fullMetadata = objectstore.Metadata{
	ContentType: "text/css; charset=utf-8", CacheControl: "public, max-age=31536000, immutable",
	ContentEncoding: "br", ContentDisposition: `attachment; filename="site.css"`,
	User: map[string]string{"origin-job": "job-42", "sri": "sha384-abc"},
}

func put(t *testing.T, s objectstore.Store, bucket, key string, data []byte, meta objectstore.Metadata) objectstore.ObjectInfo {
	t.Helper()
	info, err := s.Put(context.Background(), bucket, key, bytes.NewReader(data), int64(len(data)), objectstore.PutOptions{Metadata: meta})
	if err != nil {
		t.Fatalf("put %s: %v", key, err)
	}
	return info
}

func read(t *testing.T, s objectstore.Store, bucket, key string) ([]byte, objectstore.ObjectInfo) {
	t.Helper()
	data, info, err := objectstore.ReadAll(context.Background(), s, bucket, key)
	if err != nil {
		t.Fatalf("get %s: %v", key, err)
	}
	return data, info
}

func checkMetadata(t *testing.T, what string, got, want objectstore.Metadata) {
	t.Helper()
	if got.ContentType != want.ContentType || got.CacheControl != want.CacheControl ||
		got.ContentEncoding != want.ContentEncoding || got.ContentDisposition != want.ContentDisposition ||
		!maps.Equal(got.User, want.User) {
		t.Errorf("%s: metadata\n got %+v\nwant %+v", what, got, want)
	}
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
}

func putGetStat(t *testing.T, s objectstore.Store, bucket string) {
	before := time.Now().Add(-time.Minute)
	data := []byte(".a{color:red}")
	written := put(t, s, bucket, "meta/site.css", data, fullMetadata)
	if written.ETag == "" || strings.Contains(written.ETag, `"`) {
		t.Errorf("put returned ETag %q; want one without quotes", written.ETag)
	}
	got, info := read(t, s, bucket, "meta/site.css")
	if !bytes.Equal(got, data) {
		t.Errorf("get returned %q, want %q", got, data)
	}
	stat, err := s.Stat(context.Background(), bucket, "meta/site.css")
	if err != nil {
		t.Fatal(err)
	}
	for name, i := range map[string]objectstore.ObjectInfo{"get": info, "stat": stat} {
		checkMetadata(t, name, i.Metadata, fullMetadata)
		if i.Size != int64(len(data)) || i.ETag != written.ETag || i.LastModified.Before(before) || i.Key != "meta/site.css" {
			t.Errorf("%s: info %+v; want size %d, ETag %s, a recent LastModified", name, i, len(data), written.ETag)
		}
	}
	put(t, s, bucket, "meta/plain", []byte("x"), objectstore.Metadata{})
	if _, info := read(t, s, bucket, "meta/plain"); info.ContentType != "application/octet-stream" || len(info.User) != 0 {
		t.Errorf("no metadata given: stored %+v; want application/octet-stream and no user metadata", info.Metadata)
	}
}

func putUnknownSize(t *testing.T, s objectstore.Store, bucket string) {
	data := randomBytes(70_000)
	info, err := s.Put(context.Background(), bucket, "unknown-size", io.MultiReader(bytes.NewReader(data)), -1, objectstore.PutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := read(t, s, bucket, "unknown-size"); !bytes.Equal(got, data) || info.ETag == "" {
		t.Errorf("read back %d bytes (ETag %q), wrote %d", len(got), info.ETag, len(data))
	}
}

func notFound(t *testing.T, s objectstore.Store, bucket string) {
	ctx := context.Background()
	_, _, err := s.Get(ctx, bucket, "missing/key.json")
	if !errors.Is(err, objectstore.ErrNoSuchKey) || !errors.Is(err, objectstore.ErrNotFound) || errors.Is(err, objectstore.ErrNoSuchBucket) {
		t.Errorf("get of a missing key: %v; want ErrNoSuchKey (an ErrNotFound)", err)
	}
	if err == nil || !strings.Contains(err.Error(), bucket+"/missing/key.json") {
		t.Errorf("get of a missing key: %v; the error must name the object", err)
	}
	if _, err := s.Stat(ctx, bucket, "missing/key.json"); !errors.Is(err, objectstore.ErrNotFound) {
		t.Errorf("stat of a missing key: %v; want ErrNotFound", err)
	}
	if objectstore.IsTransient(err) {
		t.Errorf("a missing key is not transient: %v", err)
	}
	_, _, err = s.Get(ctx, bucket+"-no-such-bucket", "key")
	if !errors.Is(err, objectstore.ErrNoSuchBucket) || errors.Is(err, objectstore.ErrNoSuchKey) {
		t.Errorf("get from a missing bucket: %v; want ErrNoSuchBucket, distinct from ErrNoSuchKey", err)
	}
	if _, err := s.List(ctx, bucket+"-no-such-bucket", objectstore.ListOptions{}); !errors.Is(err, objectstore.ErrNoSuchBucket) {
		t.Errorf("list of a missing bucket: %v; want ErrNoSuchBucket", err)
	}
}

func deleteObject(t *testing.T, s objectstore.Store, bucket string) {
	ctx := context.Background()
	put(t, s, bucket, "delete/me", []byte("x"), objectstore.Metadata{})
	if err := s.Delete(ctx, bucket, "delete/me"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Stat(ctx, bucket, "delete/me"); !errors.Is(err, objectstore.ErrNotFound) {
		t.Errorf("stat after delete: %v; want ErrNotFound", err)
	}
	if err := s.Delete(ctx, bucket, "delete/me"); err != nil {
		t.Errorf("deleting a missing key: %v; want no error", err)
	}
}

func listPages(t *testing.T, s objectstore.Store, bucket string) {
	ctx := context.Background()
	var want []string
	for _, k := range []string{"list/a/1", "list/a/2", "list/b", "list/c/1", "list/d", "list/e", "list/f"} {
		put(t, s, bucket, k, []byte(k), objectstore.Metadata{})
		want = append(want, k)
	}
	var got []string
	opts := objectstore.ListOptions{Prefix: "list/", MaxKeys: 3}
	pages := 0
	for {
		page, err := s.List(ctx, bucket, opts)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		if len(page.Objects) > 3 {
			t.Errorf("page %d has %d objects; MaxKeys is 3", pages, len(page.Objects))
		}
		for _, o := range page.Objects {
			got = append(got, o.Key)
			if o.Size != int64(len(o.Key)) || o.ETag == "" || o.LastModified.IsZero() {
				t.Errorf("listed %+v; want size, ETag and LastModified", o)
			}
		}
		if page.NextToken == "" {
			break
		}
		opts.ContinuationToken = page.NextToken
	}
	if !slices.Equal(got, want) || pages != 3 {
		t.Errorf("listed %v in %d pages; want %v in 3", got, pages, want)
	}
	page, err := s.List(ctx, bucket, objectstore.ListOptions{Prefix: "list/", Delimiter: "/"})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, o := range page.Objects {
		keys = append(keys, o.Key)
	}
	if !slices.Equal(page.CommonPrefixes, []string{"list/a/", "list/c/"}) || !slices.Equal(keys, []string{"list/b", "list/d", "list/e", "list/f"}) {
		t.Errorf("delimited listing: prefixes %v, keys %v", page.CommonPrefixes, keys)
	}
	page, err = s.List(ctx, bucket, objectstore.ListOptions{Prefix: "list/", StartAfter: "list/d"})
	if err != nil || len(page.Objects) != 2 || page.Objects[0].Key != "list/e" {
		t.Errorf("listing after list/d: %+v %v; want list/e, list/f", page.Objects, err)
	}
	all, err := objectstore.ListAll(ctx, s, bucket, "list/a/")
	if err != nil || len(all) != 2 {
		t.Errorf("ListAll list/a/: %v %v", all, err)
	}
}

func deletePrefix(t *testing.T, s objectstore.Store, bucket string) {
	ctx := context.Background()
	for i := range 5 {
		put(t, s, bucket, fmt.Sprintf("staging/v1/%d", i), []byte("x"), objectstore.Metadata{})
	}
	put(t, s, bucket, "staging/v2/keep", []byte("x"), objectstore.Metadata{})
	if err := objectstore.DeletePrefix(ctx, s, bucket, "staging/v1/"); err != nil {
		t.Fatal(err)
	}
	left, err := objectstore.ListAll(ctx, s, bucket, "staging/")
	if err != nil || len(left) != 1 || left[0].Key != "staging/v2/keep" {
		t.Errorf("after DeletePrefix: %v %v; want only staging/v2/keep", left, err)
	}
}

func serverSideCopy(t *testing.T, s objectstore.Store, c objectstore.Copier, bucket string) {
	ctx := context.Background()
	if !c.CanCopyFrom(s) {
		t.Fatal("a store cannot copy from itself")
	}
	src := put(t, s, bucket, "copy/src", []byte("source bytes"), fullMetadata)
	if _, err := c.Copy(ctx, bucket, "copy/src", bucket, "copy/kept", objectstore.CopyOptions{IfSourceMatch: src.ETag}); err != nil {
		t.Fatal(err)
	}
	data, info := read(t, s, bucket, "copy/kept")
	if string(data) != "source bytes" {
		t.Errorf("copy holds %q", data)
	}
	checkMetadata(t, "copy preserving metadata", info.Metadata, fullMetadata)

	replaced := objectstore.Metadata{ContentType: "application/json", User: map[string]string{"replaced": "yes"}}
	if _, err := c.Copy(ctx, bucket, "copy/src", bucket, "copy/replaced", objectstore.CopyOptions{Metadata: &replaced}); err != nil {
		t.Fatal(err)
	}
	_, info = read(t, s, bucket, "copy/replaced")
	checkMetadata(t, "copy replacing metadata", info.Metadata, replaced)

	_, err := c.Copy(ctx, bucket, "copy/src", bucket, "copy/stale", objectstore.CopyOptions{IfSourceMatch: "0123456789abcdef0123456789abcdef"})
	if !errors.Is(err, objectstore.ErrPreconditionFailed) {
		t.Errorf("copy of a source that no longer has the ETag asked for: %v; want ErrPreconditionFailed", err)
	}
	if _, err := c.Copy(ctx, bucket, "copy/missing", bucket, "copy/x", objectstore.CopyOptions{}); !errors.Is(err, objectstore.ErrNotFound) {
		t.Errorf("copy of a missing source: %v; want ErrNotFound", err)
	}
	// The helper, within one store, copies server-side with the metadata.
	if _, err := objectstore.Copy(ctx, s, bucket, "copy/src", s, bucket, "copy/helper", objectstore.CopyOptions{}); err != nil {
		t.Fatal(err)
	}
	_, info = read(t, s, bucket, "copy/helper")
	checkMetadata(t, "objectstore.Copy", info.Metadata, fullMetadata)
}

func conditionalWrites(t *testing.T, s objectstore.Store, c objectstore.ConditionalWriter, bucket string) {
	ctx := context.Background()
	putIf := func(data string, cond objectstore.Precondition) (objectstore.ObjectInfo, error) {
		return c.PutIf(ctx, bucket, "cond/doc", strings.NewReader(data), int64(len(data)), objectstore.PutOptions{}, cond)
	}
	first, err := putIf("v1", objectstore.Precondition{IfNoneMatch: "*"})
	if err != nil {
		t.Fatalf("create if absent: %v", err)
	}
	if _, err := putIf("v1 again", objectstore.Precondition{IfNoneMatch: "*"}); !errors.Is(err, objectstore.ErrPreconditionFailed) {
		t.Errorf("create if absent over an existing object: %v; want ErrPreconditionFailed", err)
	}
	second, err := putIf("v2", objectstore.Precondition{IfMatch: first.ETag})
	if err != nil {
		t.Fatalf("write if unchanged: %v", err)
	}
	if _, err := putIf("v3", objectstore.Precondition{IfMatch: first.ETag}); !errors.Is(err, objectstore.ErrPreconditionFailed) || objectstore.IsTransient(err) {
		t.Errorf("write with a stale ETag: %v; want ErrPreconditionFailed, not transient", err)
	}
	if data, info := read(t, s, bucket, "cond/doc"); string(data) != "v2" || info.ETag != second.ETag {
		t.Errorf("document holds %q (ETag %s); want v2 (%s)", data, info.ETag, second.ETag)
	}
	if _, err := putIf("v4", objectstore.Precondition{}); !errors.Is(err, objectstore.ErrInvalid) {
		t.Errorf("write with no precondition: %v; want ErrInvalid", err)
	}
}

func updateJSON(t *testing.T, s objectstore.Store, bucket string) {
	ctx := context.Background()
	type counter struct{ N int }
	const writers = 16
	var wg sync.WaitGroup
	for range writers {
		wg.Go(func() {
			if _, err := objectstore.UpdateJSON(ctx, s, bucket, "json/counter.json", func(c *counter, _ bool) (bool, error) {
				c.N++
				return true, nil
			}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	var c counter
	if _, err := objectstore.GetJSON(ctx, s, bucket, "json/counter.json", &c); err != nil {
		t.Fatal(err)
	}
	if c.N != writers {
		t.Errorf("counter = %d after %d concurrent increments: an update was lost", c.N, writers)
	}
}

func rangeReads(t *testing.T, s objectstore.Store, r objectstore.RangeReader, bucket string) {
	ctx := context.Background()
	data := []byte("0123456789abcdefghij")
	put(t, s, bucket, "range/obj", data, objectstore.Metadata{ContentType: "text/plain"})
	for _, tc := range []struct {
		offset, length int64
		want           string
	}{{0, 5, "01234"}, {10, 6, "abcdef"}, {15, -1, "fghij"}} {
		body, info, err := r.GetRange(ctx, bucket, "range/obj", tc.offset, tc.length)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(body)
		body.Close()
		if err != nil || string(got) != tc.want || info.Size != int64(len(data)) || info.ContentType != "text/plain" {
			t.Errorf("range %d+%d: %q (size %d, %v); want %q and the whole size %d", tc.offset, tc.length, got, info.Size, err, tc.want, len(data))
		}
	}
	if _, _, err := r.GetRange(ctx, bucket, "range/missing", 0, 1); !errors.Is(err, objectstore.ErrNoSuchKey) {
		t.Errorf("range of a missing key: %v", err)
	}
}

func multipart(t *testing.T, s objectstore.Store, m objectstore.MultipartUploader, bucket string) {
	ctx := context.Background()
	part1, part2 := randomBytes(objectstore.MinPartSize), randomBytes(1000)
	up, err := m.CreateMultipartUpload(ctx, bucket, "multipart/obj", objectstore.PutOptions{Metadata: fullMetadata})
	if err != nil {
		t.Fatal(err)
	}
	// Parts go up in parallel and out of order.
	parts := make([]objectstore.Part, 2)
	var wg sync.WaitGroup
	for i, body := range [][]byte{part1, part2} {
		wg.Go(func() {
			p, err := m.UploadPart(ctx, up, i+1, bytes.NewReader(body), int64(len(body)))
			if err != nil {
				t.Error(err)
			}
			parts[1-i] = p
		})
	}
	wg.Wait()
	listed, err := m.ListParts(ctx, up)
	if err != nil || len(listed) != 2 || listed[0].Number != 1 || listed[1].ETag != parts[0].ETag || listed[0].Size != objectstore.MinPartSize {
		t.Errorf("listed parts %+v (%v); uploaded %+v", listed, err, parts)
	}
	info, err := m.CompleteMultipartUpload(ctx, up, parts)
	if err != nil {
		t.Fatal(err)
	}
	data, got := read(t, s, bucket, "multipart/obj")
	if !bytes.Equal(data, append(part1, part2...)) || info.Size != int64(len(data)) || got.ETag != info.ETag {
		t.Errorf("completed object: %d bytes, ETag %s; want %d bytes, ETag %s", len(data), got.ETag, info.Size, info.ETag)
	}
	checkMetadata(t, "multipart upload", got.Metadata, fullMetadata)

	aborted, err := m.CreateMultipartUpload(ctx, bucket, "multipart/aborted", objectstore.PutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.UploadPart(ctx, aborted, 1, bytes.NewReader(part2), int64(len(part2))); err != nil {
		t.Fatal(err)
	}
	if err := m.AbortMultipartUpload(ctx, aborted); err != nil {
		t.Fatal(err)
	}
	if _, err := m.ListParts(ctx, aborted); !errors.Is(err, objectstore.ErrNoSuchUpload) || !errors.Is(err, objectstore.ErrNotFound) {
		t.Errorf("parts of an aborted upload: %v; want ErrNoSuchUpload", err)
	}
	if _, err := s.Stat(ctx, bucket, "multipart/aborted"); !errors.Is(err, objectstore.ErrNotFound) {
		t.Errorf("an aborted upload left an object: %v", err)
	}
}

func compose(t *testing.T, s objectstore.Store, bucket string) {
	ctx := context.Background()
	a, b := randomBytes(objectstore.MinPartSize+10), randomBytes(3000)
	put(t, s, bucket, "compose/a", a, objectstore.Metadata{})
	put(t, s, bucket, "compose/b", b, objectstore.Metadata{})
	meta := objectstore.Metadata{ContentType: "application/octet-stream", User: map[string]string{"composed": "true"}}
	_, err := objectstore.Compose(ctx, s, bucket, "compose/ab", []objectstore.ByteRange{
		{Bucket: bucket, Key: "compose/a", Length: int64(len(a))},
		{Bucket: bucket, Key: "compose/b", Offset: 1000, Length: 2000},
	}, objectstore.ComposeOptions{Metadata: meta, PartSize: objectstore.MinPartSize})
	if err != nil {
		t.Fatal(err)
	}
	data, info := read(t, s, bucket, "compose/ab")
	if !bytes.Equal(data, append(slices.Clone(a), b[1000:]...)) {
		t.Errorf("composed %d bytes; want a then b[1000:] (%d)", len(data), len(a)+2000)
	}
	checkMetadata(t, "compose", info.Metadata, meta)

	// Above the single-copy limit, Copy composes, keeping the metadata.
	put(t, s, bucket, "compose/big", a, fullMetadata)
	if _, err := objectstore.Copy(ctx, s, bucket, "compose/big", s, bucket, "compose/big-copy",
		objectstore.CopyOptions{Size: int64(len(a)), SingleCopyLimit: 1 << 20, PartSize: objectstore.MinPartSize}); err != nil {
		t.Fatal(err)
	}
	data, info = read(t, s, bucket, "compose/big-copy")
	if !bytes.Equal(data, a) || !strings.HasSuffix(info.ETag, "-2") {
		t.Errorf("composed copy: %d bytes, ETag %s; want %d bytes from two parts", len(data), info.ETag, len(a))
	}
	checkMetadata(t, "composed copy", info.Metadata, fullMetadata)

	_, err = objectstore.Compose(ctx, s, bucket, "compose/bad", []objectstore.ByteRange{
		{Bucket: bucket, Key: "compose/b", Length: 3000}, {Bucket: bucket, Key: "compose/a", Length: 10},
	}, objectstore.ComposeOptions{})
	if !errors.Is(err, objectstore.ErrInvalid) || !strings.Contains(err.Error(), "at least") {
		t.Errorf("compose with a small first source: %v; want ErrInvalid saying why", err)
	}
}

func buckets(t *testing.T, b objectstore.BucketManager, name string) {
	ctx := context.Background()
	_ = b.RemoveBucket(ctx, name) // a leftover of an earlier run
	if err := b.MakeBucket(ctx, name); err != nil {
		t.Fatal(err)
	}
	if err := b.MakeBucket(ctx, name); !errors.Is(err, objectstore.ErrBucketExists) || !errors.Is(err, objectstore.ErrConflict) {
		t.Errorf("creating an existing bucket: %v; want ErrBucketExists", err)
	}
	if ok, err := b.BucketExists(ctx, name); !ok || err != nil {
		t.Errorf("BucketExists = %v, %v", ok, err)
	}
	if names, err := b.ListBuckets(ctx); err != nil || !slices.Contains(names, name) {
		t.Errorf("ListBuckets = %v, %v; want %s in it", names, err, name)
	}
	if err := b.RemoveBucket(ctx, name); err != nil {
		t.Fatal(err)
	}
	if ok, err := b.BucketExists(ctx, name); ok || err != nil {
		t.Errorf("after RemoveBucket: exists %v, %v", ok, err)
	}
}
