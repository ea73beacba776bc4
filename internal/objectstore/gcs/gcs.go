// Package gcs is the objectstore implementation for Google Cloud Storage, on
// cloud.google.com/go/storage. Migrate reads from it as a source: listing,
// whole and ranged reads, stat; Put and Delete complete the core. There is
// no server-side copy to another provider, so copies stream through the
// worker.
//
// ETags are the hex MD5 of the bytes when GCS has one, so they compare with
// an S3 ETag of a single-part upload; composite objects have no MD5 (GCS
// keeps only a CRC32C for them), so their ETag is GCS's own etag, which a
// comparison with S3 never mistakes for an MD5. Whole reads are verified
// against the stored MD5, or the CRC32C when there is no MD5: a mismatch
// fails the read at its end, before a destination upload completes.
package gcs

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"cloud.google.com/go/storage"
	"google.golang.org/api/iterator"
	"google.golang.org/api/option"

	"github.com/edgeflow/edgeflow/internal/objectstore"
)

// EmulatorEnv names the emulator the client talks to instead of Google (a
// variable of the Go client; tests point it at fake-gcs-server).
const EmulatorEnv = "STORAGE_EMULATOR_HOST"

// Host is what errors name as the endpoint.
const Host = "storage.googleapis.com"

// Store is Google Cloud Storage with one set of credentials.
type Store struct {
	client *storage.Client
	host   string
}

var (
	_ objectstore.Store           = (*Store)(nil)
	_ objectstore.RangeReader     = (*Store)(nil)
	_ objectstore.AttributesFirst = (*Store)(nil)
)

// AttributesBytes is about what GCS answers an object's attributes with
// (the JSON API's object, projection full, as Stat, Get and GetRange ask
// it): some 1 KiB of fields, with the key and the bucket in four of them
// each. An estimate, booked before the answer: its user metadata is
// charged once read (migrate's limited source); the access control lists
// of a bucket without uniform access add to it uncounted.
func (s *Store) AttributesBytes(bucket, key string) int64 {
	return 1<<10 + 4*int64(len(bucket)+len(key))
}

// New connects with the credentials JSON (a service-account key file's
// contents), or with the application default credentials of this host when
// credentialsJSON is empty. No request is made until the first call.
func New(ctx context.Context, credentialsJSON []byte) (*Store, error) {
	var opts []option.ClientOption
	host := Host
	if emu := os.Getenv(EmulatorEnv); emu != "" {
		// The emulator takes no credentials (the client turns auth off).
		host = emu
	} else if len(credentialsJSON) > 0 {
		t, err := CredentialsType(credentialsJSON)
		if err != nil {
			return nil, err
		}
		opts = append(opts, option.WithAuthCredentialsJSON(t, credentialsJSON))
	}
	c, err := storage.NewClient(ctx, opts...)
	if err != nil && len(opts) > 0 {
		// A parse error could quote the key: say only that it failed.
		return nil, errors.New("google cloud storage: the service-account key is not usable (a key file from the Google Cloud console or gcloud iam service-accounts keys create)")
	}
	if err != nil {
		// Application default credentials: the error names files and variables.
		return nil, fmt.Errorf("google cloud storage: %w", err)
	}
	// Transfers retry themselves, with backoff, and see throttling.
	c.SetRetry(storage.WithPolicy(storage.RetryNever))
	return &Store{client: c, host: host}, nil
}

// Close releases the client's connections.
func (s *Store) Close() error { return s.client.Close() }

func (s *Store) obj(bucket, key string) *storage.ObjectHandle {
	// Raw bytes: content-encoding gzip is carried, not undone.
	return s.client.Bucket(bucket).Object(key).ReadCompressed(true)
}

// Stat describes an object without reading it.
func (s *Store) Stat(ctx context.Context, bucket, key string) (objectstore.ObjectInfo, error) {
	a, err := s.obj(bucket, key).Attrs(ctx)
	if err != nil {
		return objectstore.ObjectInfo{}, s.fail(ctx, "stat", bucket, key, err)
	}
	return infoOf(a), nil
}

// Get streams a whole object, verified against its MD5 (or CRC32C).
func (s *Store) Get(ctx context.Context, bucket, key string) (io.ReadCloser, objectstore.ObjectInfo, error) {
	a, r, err := s.open(ctx, "get", bucket, key, 0, -1)
	if err != nil {
		return nil, objectstore.ObjectInfo{}, err
	}
	return newChecked(r, a, bucket, key), infoOf(a), nil
}

// GetRange streams length bytes from offset (length -1: to the end). A
// range cannot be checked against the whole object's checksum; the ETag
// says which version it came from.
func (s *Store) GetRange(ctx context.Context, bucket, key string, offset, length int64) (io.ReadCloser, objectstore.ObjectInfo, error) {
	a, r, err := s.open(ctx, "get", bucket, key, offset, length)
	if err != nil {
		return nil, objectstore.ObjectInfo{}, err
	}
	return r, infoOf(a), nil
}

// open reads the attributes, then the bytes of that very generation: the
// attributes (metadata, checksums) always describe the bytes read.
func (s *Store) open(ctx context.Context, op, bucket, key string, offset, length int64) (*storage.ObjectAttrs, *storage.Reader, error) {
	o := s.obj(bucket, key)
	a, err := o.Attrs(ctx)
	if err != nil {
		return nil, nil, s.fail(ctx, op, bucket, key, err)
	}
	if offset > 0 && offset >= a.Size {
		return nil, nil, &objectstore.Error{Op: op, Bucket: bucket, Key: key, Endpoint: s.host, StatusCode: 416,
			Message: fmt.Sprintf("offset %d is past the object's %d bytes", offset, a.Size), Kind: objectstore.ErrInvalid}
	}
	r, err := o.Generation(a.Generation).NewRangeReader(ctx, offset, length)
	if errors.Is(err, storage.ErrObjectNotExist) {
		// Replaced or deleted since its attributes were read: try again.
		return nil, nil, &objectstore.Error{Op: op, Bucket: bucket, Key: key, Endpoint: s.host,
			Message: "the object changed while it was read", Kind: objectstore.ErrTransient}
	}
	if err != nil {
		return nil, nil, s.fail(ctx, op, bucket, key, err)
	}
	return a, r, nil
}

// Put writes size bytes from r (size -1: until EOF) under key.
func (s *Store) Put(ctx context.Context, bucket, key string, r io.Reader, size int64, opts objectstore.PutOptions) (objectstore.ObjectInfo, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // an unfinished upload is abandoned, not completed
	w := s.client.Bucket(bucket).Object(key).NewWriter(ctx)
	m := opts.Metadata
	w.ContentType = m.ContentType
	if w.ContentType == "" {
		w.ContentType = "application/octet-stream"
	}
	w.CacheControl, w.ContentEncoding, w.ContentDisposition = m.CacheControl, m.ContentEncoding, m.ContentDisposition
	w.Metadata = m.User
	if size >= 0 {
		r = io.LimitReader(r, size)
	}
	if _, err := io.Copy(w, r); err != nil {
		return objectstore.ObjectInfo{}, s.fail(ctx, "put", bucket, key, err)
	}
	if err := w.Close(); err != nil {
		return objectstore.ObjectInfo{}, s.fail(ctx, "put", bucket, key, err)
	}
	return infoOf(w.Attrs()), nil
}

// Delete removes an object; a missing object is not an error.
func (s *Store) Delete(ctx context.Context, bucket, key string) error {
	err := s.client.Bucket(bucket).Object(key).Delete(ctx)
	if err == nil || errors.Is(err, storage.ErrObjectNotExist) {
		return nil
	}
	return s.fail(ctx, "delete", bucket, key, err)
}

// List returns one page of the objects in bucket, in key order (GCS lists
// by the bytes of the name, as S3 does).
func (s *Store) List(ctx context.Context, bucket string, opts objectstore.ListOptions) (objectstore.ListPage, error) {
	q := &storage.Query{Prefix: opts.Prefix, Delimiter: opts.Delimiter}
	if opts.ContinuationToken == "" {
		// StartOffset is inclusive; the key itself is dropped below.
		q.StartOffset = opts.StartAfter
	}
	if err := q.SetAttrSelection([]string{"Name", "Size", "MD5", "Etag", "Updated", "Generation"}); err != nil {
		return objectstore.ListPage{}, err
	}
	max := opts.MaxKeys
	if max <= 0 {
		max = 1000
	}
	it := s.client.Bucket(bucket).Objects(ctx, q)
	var attrs []*storage.ObjectAttrs
	next, err := iterator.NewPager(it, max, opts.ContinuationToken).NextPage(&attrs)
	if err != nil {
		return objectstore.ListPage{}, s.fail(ctx, "list", bucket, "", err)
	}
	page := objectstore.ListPage{NextToken: next}
	for _, a := range attrs {
		switch {
		case a.Prefix != "":
			page.CommonPrefixes = append(page.CommonPrefixes, a.Prefix)
		case opts.ContinuationToken == "" && opts.StartAfter != "" && a.Name <= opts.StartAfter:
		default:
			i := infoOf(a)
			i.Metadata = objectstore.Metadata{} // a listing carries no metadata, as on S3
			page.Objects = append(page.Objects, i)
		}
	}
	return page, nil
}

// ETag is the hex MD5 of an object's bytes when GCS keeps one, else GCS's
// etag (composite objects).
func ETag(a *storage.ObjectAttrs) string {
	if len(a.MD5) > 0 {
		return hex.EncodeToString(a.MD5)
	}
	return strings.Trim(a.Etag, `"`)
}

func infoOf(a *storage.ObjectAttrs) objectstore.ObjectInfo {
	var user map[string]string
	for k, v := range a.Metadata {
		if user == nil {
			user = make(map[string]string, len(a.Metadata))
		}
		// S3 keeps user metadata keys in lower case; so does the contract.
		user[strings.ToLower(k)] = v
	}
	return objectstore.ObjectInfo{Key: a.Name, Size: a.Size, ETag: ETag(a), LastModified: a.Updated,
		Metadata: objectstore.Metadata{ContentType: a.ContentType, CacheControl: a.CacheControl,
			ContentEncoding: a.ContentEncoding, ContentDisposition: a.ContentDisposition, User: user}}
}
