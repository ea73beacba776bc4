package migratetest

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"testing"
	"time"

	"github.com/edgeflow/edgeflow/internal/migrate"
	"github.com/edgeflow/edgeflow/internal/objectstore"
)

// Object is an object a test puts at a source.
type Object struct {
	Key  string
	Data []byte
	Meta objectstore.Metadata
}

// OddObjects are the objects every copy test uses: keys with spaces, '+',
// '%', unicode and deep prefixes, a zero-byte object, an object with every
// kind of metadata, and one of largeSize random bytes (over a test-sized
// multipart cutoff).
func OddObjects(t testing.TB, largeSize int) []Object {
	big := make([]byte, largeSize)
	if _, err := rand.Read(big); err != nil {
		t.Fatal(err)
	}
	return []Object{
		{Key: "empty.txt", Data: nil, Meta: objectstore.Metadata{ContentType: "text/plain"}},
		{Key: "with space/and+plus/100%.js", Data: []byte("console.log('odd key')\n"), Meta: objectstore.Metadata{ContentType: "application/javascript"}},
		{Key: "ünïcødé/日本語/ключ.css", Data: []byte("body{}"), Meta: objectstore.Metadata{ContentType: "text/css; charset=utf-8"}},
		{Key: "deep/a/b/c/d/e/f/g/h/i/j/k/l/m/n/o/p/leaf", Data: []byte("deep"), Meta: objectstore.Metadata{}},
		{Key: "meta/full.json", Data: []byte(`{"a":1}`), Meta: objectstore.Metadata{
			ContentType: "application/json", CacheControl: "public, max-age=31536000, immutable",
			ContentEncoding: "identity", ContentDisposition: `attachment; filename="full.json"`,
			User: map[string]string{"origin": "seed", "sri": "sha384-abc"}}},
		{Key: "large/blob.bin", Data: big, Meta: objectstore.Metadata{ContentType: "application/octet-stream", User: map[string]string{"kind": "big"}}},
	}
}

// Small makes n small objects under prefix, of 1 to maxSize bytes.
func Small(prefix string, n, maxSize int) []Object {
	out := make([]Object, n)
	for i := range out {
		size := 1 + (i*7919)%maxSize
		out[i] = Object{Key: fmt.Sprintf("%s%05d.bin", prefix, i), Data: bytes.Repeat([]byte{byte(i)}, size)}
	}
	return out
}

// Bucket creates a bucket with a unique name starting with name.
func Bucket(t testing.TB, s objectstore.Store, name string) string {
	t.Helper()
	bucket := fmt.Sprintf("%s-%d", name, time.Now().UnixNano()%1e9)
	if err := objectstore.EnsureBuckets(context.Background(), s, bucket); err != nil {
		t.Fatal(err)
	}
	return bucket
}

// Seed puts the objects into bucket and returns its listing.
func Seed(t testing.TB, s objectstore.Store, bucket string, objs []Object) []migrate.Object {
	t.Helper()
	ctx := context.Background()
	for _, o := range objs {
		if _, err := s.Put(ctx, bucket, o.Key, bytes.NewReader(o.Data), int64(len(o.Data)), objectstore.PutOptions{Metadata: o.Meta}); err != nil {
			t.Fatal(err)
		}
	}
	return List(t, s, bucket, "")
}

// List lists a bucket (under prefix) as migrate objects.
func List(t testing.TB, s objectstore.Store, bucket, prefix string) []migrate.Object {
	t.Helper()
	infos, err := objectstore.ListAll(context.Background(), s, bucket, prefix)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]migrate.Object, len(infos))
	for i, o := range infos {
		out[i] = migrate.Object{Key: o.Key, Size: o.Size, ETag: o.ETag, LastModified: o.LastModified}
	}
	return out
}

// CheckCopies compares every object, bytes and metadata, with its copy.
func CheckCopies(t testing.TB, dst objectstore.Store, dstBucket string, m migrate.KeyMap, objs []Object) {
	t.Helper()
	ctx := context.Background()
	for _, o := range objs {
		data, info, err := objectstore.ReadAll(ctx, dst, dstBucket, m.Dest(o.Key))
		if err != nil {
			t.Fatalf("%s: %v", o.Key, err)
		}
		if !bytes.Equal(data, o.Data) {
			t.Fatalf("%s: %d bytes at the destination, %d at the source", o.Key, len(data), len(o.Data))
		}
		want := o.Meta
		if want.ContentType == "" {
			want.ContentType = "application/octet-stream"
		}
		got := info.Metadata
		if got.ContentType != want.ContentType || got.CacheControl != want.CacheControl ||
			got.ContentEncoding != want.ContentEncoding || got.ContentDisposition != want.ContentDisposition {
			t.Errorf("%s: metadata %+v, want %+v", o.Key, got, want)
		}
		for k, v := range want.User {
			if got.User[k] != v {
				t.Errorf("%s: user metadata %q = %q, want %q (all: %v)", o.Key, k, got.User[k], v, got.User)
			}
		}
	}
}

// DeadLetters are every dead letter a job's run left, page by page.
func DeadLetters(t testing.TB, jobs migrate.JobStore, job, execution string) []migrate.DeadLetter {
	t.Helper()
	var all []migrate.DeadLetter
	after := -1
	for {
		seqs, last, err := jobs.DeadPages(context.Background(), job, execution, after, 100)
		if err != nil {
			t.Fatal(err)
		}
		for _, seq := range seqs {
			dead, err := jobs.GetDead(context.Background(), job, execution, seq)
			if err != nil {
				t.Fatal(err)
			}
			all = append(all, dead...)
			after = seq
		}
		if last || len(seqs) == 0 {
			return all
		}
	}
}
