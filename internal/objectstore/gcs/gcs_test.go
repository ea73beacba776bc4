package gcs_test

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/fsouza/fake-gcs-server/fakestorage"

	"github.com/edgeflow/edgeflow/internal/objectstore"
	"github.com/edgeflow/edgeflow/internal/objectstore/gcs"
	"github.com/edgeflow/edgeflow/internal/objectstore/storetest"
)

// fakeGCS runs fake-gcs-server in this process on a free port and points
// the client at it the way a worker would be: STORAGE_EMULATOR_HOST.
// Initial objects keep the checksums they are given (objects created later
// get computed ones), which makes corrupted objects.
func fakeGCS(t *testing.T, initial ...fakestorage.Object) (*fakestorage.Server, *gcs.Store) {
	t.Helper()
	srv, err := fakestorage.NewServerWithOptions(fakestorage.Options{Scheme: "http", Host: "127.0.0.1", PublicHost: "127.0.0.1",
		InitialObjects: initial})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	t.Setenv(gcs.EmulatorEnv, strings.TrimPrefix(srv.URL(), "http://"))
	s, err := gcs.New(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return srv, s
}

// buckets gives the store the BucketManager the conformance suite creates
// its bucket with (a source store needs none).
type buckets struct {
	*gcs.Store
	srv *fakestorage.Server
}

func (b buckets) MakeBucket(ctx context.Context, name string) error {
	if ok, _ := b.BucketExists(ctx, name); ok {
		return objectstore.ErrBucketExists
	}
	b.srv.CreateBucketWithOpts(fakestorage.CreateBucketOpts{Name: name})
	return nil
}

func (b buckets) BucketExists(_ context.Context, name string) (bool, error) {
	_, err := b.srv.Backend().GetBucket(name)
	return err == nil, nil
}

func (b buckets) ListBuckets(context.Context) ([]string, error) {
	all, err := b.srv.Backend().ListBuckets()
	var names []string
	for _, b := range all {
		names = append(names, b.Name)
	}
	return names, err
}

func (b buckets) RemoveBucket(_ context.Context, name string) error {
	return b.srv.Backend().DeleteBucket(name)
}

func TestConformance(t *testing.T) {
	srv, s := fakeGCS(t)
	storetest.Run(t, buckets{s, srv}, "conformance")
}

func TestListingWithPrefixPagesAndUnicode(t *testing.T) {
	srv, s := fakeGCS(t)
	srv.CreateBucketWithOpts(fakestorage.CreateBucketOpts{Name: "src"})
	var want []string
	for i := range 7 {
		want = append(want, fmt.Sprintf("photos/%02d", i))
	}
	want = append(want, "photos/été/naïve café.txt", "photos/日本語/ファイル+1.txt")
	slices.Sort(want)
	for _, k := range append(slices.Clone(want), "other/x", "photo") {
		srv.CreateObject(fakestorage.Object{ObjectAttrs: fakestorage.ObjectAttrs{BucketName: "src", Name: k}, Content: []byte(k)})
	}
	var got []string
	opts := objectstore.ListOptions{Prefix: "photos/", MaxKeys: 4}
	pages := 0
	for {
		page, err := s.List(context.Background(), "src", opts)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for _, o := range page.Objects {
			got = append(got, o.Key)
			sum := md5.Sum([]byte(o.Key))
			if o.ETag != fmt.Sprintf("%x", sum) || o.Size != int64(len(o.Key)) {
				t.Errorf("%s: listed ETag %s, size %d; want the hex MD5 %x and %d", o.Key, o.ETag, o.Size, sum, len(o.Key))
			}
		}
		if page.NextToken == "" {
			break
		}
		opts.ContinuationToken = page.NextToken
	}
	if !slices.Equal(got, want) || pages != 3 {
		t.Errorf("listed %q in %d pages; want %q in 3", got, pages, want)
	}
}

func TestMetadataCarried(t *testing.T) {
	srv, s := fakeGCS(t)
	srv.CreateBucketWithOpts(fakestorage.CreateBucketOpts{Name: "src"})
	srv.CreateObject(fakestorage.Object{ObjectAttrs: fakestorage.ObjectAttrs{BucketName: "src", Name: "site.css.gz",
		ContentType: "text/css", CacheControl: "public, max-age=60", ContentEncoding: "gzip",
		ContentDisposition: `inline; filename="site.css"`, Metadata: map[string]string{"Origin": "legacy"}},
		Content: []byte("not really gzip")})
	body, info, err := s.Get(context.Background(), "src", "site.css.gz")
	if err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(body)
	body.Close()
	if err != nil || string(data) != "not really gzip" {
		t.Fatalf("read %q, %v; want the stored bytes as they are (no decompression)", data, err)
	}
	want := objectstore.Metadata{ContentType: "text/css", CacheControl: "public, max-age=60", ContentEncoding: "gzip",
		ContentDisposition: `inline; filename="site.css"`, User: map[string]string{"origin": "legacy"}}
	if info.ContentType != want.ContentType || info.CacheControl != want.CacheControl || info.ContentEncoding != want.ContentEncoding ||
		info.ContentDisposition != want.ContentDisposition || info.User["origin"] != "legacy" || len(info.User) != 1 {
		t.Errorf("metadata %+v; want %+v", info.Metadata, want)
	}
}

// An object whose bytes no longer have the MD5 GCS keeps (corrupted, or a
// store that lies) fails at the end of the read, never quietly.
func TestMD5MismatchFailsTheRead(t *testing.T) {
	other := md5.Sum([]byte("what was written"))
	srv, s := fakeGCS(t, fakestorage.Object{ObjectAttrs: fakestorage.ObjectAttrs{BucketName: "src", Name: "bad",
		Md5Hash: base64.StdEncoding.EncodeToString(other[:])}, Content: []byte("what is stored")})
	srv.CreateObject(fakestorage.Object{ObjectAttrs: fakestorage.ObjectAttrs{BucketName: "src", Name: "good"}, Content: []byte("fine")})
	body, _, err := s.Get(context.Background(), "src", "bad")
	if err != nil {
		t.Fatal(err)
	}
	_, err = io.ReadAll(body)
	body.Close()
	if !errors.Is(err, gcs.ErrChecksum) || !strings.Contains(err.Error(), "MD5") || objectstore.IsTransient(err) {
		t.Errorf("reading an object that does not match its MD5: %v; want a checksum mismatch naming MD5, not transient", err)
	}
	body, _, err = s.Get(context.Background(), "src", "good")
	if err != nil {
		t.Fatal(err)
	}
	if data, err := io.ReadAll(body); err != nil || string(data) != "fine" {
		t.Errorf("reading an intact object: %q, %v", data, err)
	}
	body.Close()
}

// A composite object has no MD5, only a CRC32C: the CRC32C of the bytes read
// is what is compared. fake-gcs-server gives every object an MD5 (also
// composed ones), so the verifier is checked with attributes as GCS returns
// them for a composite object.
func TestCRC32CVerifiesObjectsWithoutMD5(t *testing.T) {
	data := []byte("part one|part two")
	for _, tc := range []struct {
		name    string
		content []byte
		wantErr bool
	}{{"intact", data, false}, {"corrupted", []byte("part one|part 2wo"), true}, {"short", data[:10], true}} {
		t.Run(tc.name, func(t *testing.T) {
			r := gcs.NewCheckedForTest(bytes.NewReader(tc.content), data, false)
			_, err := io.ReadAll(r)
			if tc.wantErr != (err != nil) || (err != nil && (!errors.Is(err, gcs.ErrChecksum) || !strings.Contains(err.Error(), "CRC32C"))) {
				t.Errorf("read %q against the CRC32C of %q: %v; want error %v", tc.content, data, err, tc.wantErr)
			}
		})
	}
}

// An object replaced between its attributes and its bytes is read as the
// generation the attributes describe, or not at all; and a composed object
// reads back whole and verified.
func TestComposedObjectReadsVerified(t *testing.T) {
	srv, s := fakeGCS(t)
	srv.CreateBucketWithOpts(fakestorage.CreateBucketOpts{Name: "src"})
	srv.CreateObject(fakestorage.Object{ObjectAttrs: fakestorage.ObjectAttrs{BucketName: "src", Name: "a"}, Content: []byte("part one|")})
	srv.CreateObject(fakestorage.Object{ObjectAttrs: fakestorage.ObjectAttrs{BucketName: "src", Name: "b"}, Content: []byte("part two")})
	if _, err := srv.Backend().ComposeObject("src", []string{"a", "b"}, "ab", nil, "text/plain", "", "", "", "", "", nil); err != nil {
		t.Fatal(err)
	}
	body, info, err := s.Get(context.Background(), "src", "ab")
	if err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(body)
	body.Close()
	if err != nil || string(data) != "part one|part two" || info.Size != 17 {
		t.Errorf("composed object: %q (size %d), %v", data, info.Size, err)
	}
}

func TestCredentialsType(t *testing.T) {
	secret := `{"type":"authorized_user","client_secret":"do-not-print"}`
	for in, want := range map[string]string{
		`{"type":"service_account","private_key":"do-not-print"}`: "",
		secret:                  "not supported",
		`{"private_key":"x"}`:   `no "type"`,
		`not json do-not-print`: "not a JSON credentials file",
	} {
		_, err := gcs.CredentialsType([]byte(in))
		if want == "" && err != nil || want != "" && (err == nil || !strings.Contains(err.Error(), want)) {
			t.Errorf("CredentialsType(%.30s…) = %v; want %q", in, err, want)
		}
		if err != nil && strings.Contains(err.Error(), "do-not-print") {
			t.Errorf("the error quotes the file: %v", err)
		}
	}
}

// A replaced object reads with a new ETag, so a copy whose ranges span the
// change (migrate's copyParts compares each range's ETag with the first's)
// notices it instead of joining bytes of two versions.
func TestReplacedObjectChangesItsETag(t *testing.T) {
	srv, s := fakeGCS(t)
	srv.CreateBucketWithOpts(fakestorage.CreateBucketOpts{Name: "src"})
	srv.CreateObject(fakestorage.Object{ObjectAttrs: fakestorage.ObjectAttrs{BucketName: "src", Name: "obj"}, Content: []byte("version one")})
	body, first, err := s.GetRange(context.Background(), "src", "obj", 0, 4)
	if err != nil {
		t.Fatal(err)
	}
	body.Close()
	srv.CreateObject(fakestorage.Object{ObjectAttrs: fakestorage.ObjectAttrs{BucketName: "src", Name: "obj"}, Content: []byte("version two")})
	body, second, err := s.GetRange(context.Background(), "src", "obj", 4, -1)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(body)
	body.Close()
	if first.ETag == second.ETag || string(data) != "ion two" {
		t.Errorf("ranges before and after a replacement: ETags %s and %s, second range %q; want different ETags", first.ETag, second.ETag, data)
	}
}

// An upload of a known size reads the object's last byte and stops: the
// mismatch must come with that read, not with an io.EOF it never asks for.
func TestChecksumFailsOnTheLastByteNotOnlyAtEOF(t *testing.T) {
	data := []byte("part one|part two")
	for _, md5 := range []bool{true, false} {
		r := gcs.NewCheckedForTest(bytes.NewReader([]byte("part one|part 2wo")), data, md5)
		buf := make([]byte, len(data))
		if _, err := io.ReadFull(r, buf); !errors.Is(err, gcs.ErrChecksum) {
			t.Errorf("md5 %v: reading exactly the object's size of corrupted bytes: %v; want a checksum mismatch", md5, err)
		}
		r = gcs.NewCheckedForTest(bytes.NewReader(data), data, md5)
		if got, err := io.ReadAll(r); err != nil || !bytes.Equal(got, data) {
			t.Errorf("md5 %v: intact bytes: %q, %v", md5, got, err)
		}
	}
}
