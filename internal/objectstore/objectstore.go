// Package objectstore is the project's thin layer over any S3-compatible store
// (MinIO locally, R2/S3 in production): bytes in, bytes out, JSON documents
// with optimistic concurrency, and errors that never carry credentials.
package objectstore

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// ErrNotFound is returned (wrapped) when a key or bucket does not exist.
var ErrNotFound = errors.New("object not found")

// ErrConflict is returned (wrapped) when a conditional write lost a race.
var ErrConflict = errors.New("object changed concurrently")

// Config says how to reach one store. SecretKey is never printed.
type Config struct {
	Endpoint  string // host:port
	AccessKey string
	SecretKey string
	Secure    bool
	Region    string
}

// String describes the store without its secret.
func (c Config) String() string {
	scheme := "http"
	if c.Secure {
		scheme = "https"
	}
	return fmt.Sprintf("%s://%s (access key %s)", scheme, c.Endpoint, c.AccessKey)
}

// Info describes a stored object.
type Info struct {
	Key          string
	Size         int64
	ETag         string
	ContentType  string
	LastModified time.Time
}

// Store is one S3-compatible endpoint.
type Store struct {
	cfg    Config
	client *minio.Client
	core   *minio.Core
}

// New connects lazily: no request is made until the first call.
func New(cfg Config) (*Store, error) {
	if cfg.Endpoint == "" {
		return nil, errors.New("object store: endpoint is empty")
	}
	if strings.Contains(cfg.Endpoint, "://") {
		return nil, fmt.Errorf("object store: endpoint %q must be host:port without a scheme (set Secure for https)", cfg.Endpoint)
	}
	transport, err := minio.DefaultTransport(cfg.Secure)
	if err != nil {
		return nil, fmt.Errorf("object store %s: %w", cfg, err)
	}
	// Many small objects are written concurrently; keep connections warm.
	transport.MaxIdleConnsPerHost = 256
	transport.MaxIdleConns = 512
	core, err := minio.NewCore(cfg.Endpoint, &minio.Options{
		Creds:     credentials.NewStaticV4(cfg.AccessKey, cfg.SecretKey, ""),
		Secure:    cfg.Secure,
		Region:    cfg.Region,
		Transport: transport,
	})
	if err != nil {
		return nil, fmt.Errorf("object store %s: %w", cfg, err)
	}
	return &Store{cfg: cfg, client: core.Client, core: core}, nil
}

// Config returns the store's configuration.
func (s *Store) Config() Config { return s.cfg }

// SameEndpoint reports whether server-side copies between s and o are possible.
func (s *Store) SameEndpoint(o *Store) bool {
	return s == o || (s.cfg.Endpoint == o.cfg.Endpoint && s.cfg.AccessKey == o.cfg.AccessKey)
}

// EnsureBuckets creates the buckets that do not exist yet.
func (s *Store) EnsureBuckets(ctx context.Context, buckets ...string) error {
	for _, b := range buckets {
		ok, err := s.client.BucketExists(ctx, b)
		if err != nil {
			return s.wrap("check bucket", b, "", err)
		}
		if ok {
			continue
		}
		if err := s.client.MakeBucket(ctx, b, minio.MakeBucketOptions{Region: s.cfg.Region}); err != nil {
			var resp minio.ErrorResponse
			if errors.As(err, &resp) && (resp.Code == "BucketAlreadyOwnedByYou" || resp.Code == "BucketAlreadyExists") {
				continue
			}
			return s.wrap("create bucket", b, "", err)
		}
	}
	return nil
}

// Ping checks that the store answers and the credentials are accepted.
func (s *Store) Ping(ctx context.Context) error {
	_, err := s.client.ListBuckets(ctx)
	return s.wrap("list buckets", "", "", err)
}

// Put writes data under key.
func (s *Store) Put(ctx context.Context, bucket, key string, data []byte, contentType string) error {
	_, err := s.client.PutObject(ctx, bucket, key, bytes.NewReader(data), int64(len(data)), putOptions(contentType))
	return s.wrap("put", bucket, key, err)
}

// PutStream writes size bytes (or until EOF when size is -1) from r under key.
func (s *Store) PutStream(ctx context.Context, bucket, key string, r io.Reader, size int64, contentType string) error {
	opts := putOptions(contentType)
	if size < 0 {
		opts.PartSize = 16 << 20
	}
	_, err := s.client.PutObject(ctx, bucket, key, r, size, opts)
	return s.wrap("put", bucket, key, err)
}

func putOptions(contentType string) minio.PutObjectOptions {
	if contentType == "" {
		contentType = "application/octet-stream"
	}
	// Small objects dominate; MD5/SHA256 content hashing of every body is
	// wasted CPU on top of TLS/HTTP integrity, and the pipeline verifies SRI itself.
	return minio.PutObjectOptions{ContentType: contentType, DisableContentSha256: true}
}

// Get reads a whole object.
func (s *Store) Get(ctx context.Context, bucket, key string) ([]byte, error) {
	r, _, err := s.Open(ctx, bucket, key, nil)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	data, err := io.ReadAll(r)
	return data, s.wrap("read", bucket, key, err)
}

// Range asks Open for part of an object: bytes [Start, Start+Length).
type Range struct{ Start, Length int64 }

// Open starts reading an object; the headers are fetched before it returns, so
// a missing object is an error here, not on the first Read.
func (s *Store) Open(ctx context.Context, bucket, key string, rng *Range) (io.ReadCloser, Info, error) {
	opts := minio.GetObjectOptions{}
	if rng != nil {
		if err := opts.SetRange(rng.Start, rng.Start+rng.Length-1); err != nil {
			return nil, Info{}, err
		}
	}
	body, oi, _, err := s.core.GetObject(ctx, bucket, key, opts)
	if err != nil {
		return nil, Info{}, s.wrap("get", bucket, key, err)
	}
	return body, toInfo(oi), nil
}

// Stat returns an object's description.
func (s *Store) Stat(ctx context.Context, bucket, key string) (Info, error) {
	oi, err := s.client.StatObject(ctx, bucket, key, minio.StatObjectOptions{})
	if err != nil {
		return Info{}, s.wrap("stat", bucket, key, err)
	}
	return toInfo(oi), nil
}

// Copy copies an object server-side (both buckets on this store).
func (s *Store) Copy(ctx context.Context, srcBucket, srcKey, dstBucket, dstKey string) error {
	_, err := s.client.CopyObject(ctx,
		minio.CopyDestOptions{Bucket: dstBucket, Object: dstKey},
		minio.CopySrcOptions{Bucket: srcBucket, Object: srcKey})
	return s.wrap("copy "+srcBucket+"/"+srcKey+" to", dstBucket, dstKey, err)
}

// Delete removes one object; a missing object is not an error.
func (s *Store) Delete(ctx context.Context, bucket, key string) error {
	err := s.client.RemoveObject(ctx, bucket, key, minio.RemoveObjectOptions{})
	if err != nil && errors.Is(s.wrap("", bucket, key, err), ErrNotFound) {
		return nil
	}
	return s.wrap("delete", bucket, key, err)
}

// DeletePrefix removes every object under prefix.
func (s *Store) DeletePrefix(ctx context.Context, bucket, prefix string) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // stops the lister if removal fails first
	objects := make(chan minio.ObjectInfo)
	var listErr error
	go func() {
		defer close(objects)
		for oi := range s.client.ListObjects(ctx, bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: true}) {
			if oi.Err != nil {
				listErr = oi.Err
				return
			}
			select {
			case objects <- oi:
			case <-ctx.Done():
				return
			}
		}
	}()
	for res := range s.client.RemoveObjects(ctx, bucket, objects, minio.RemoveObjectsOptions{}) {
		if res.Err != nil {
			return s.wrap("delete", bucket, res.ObjectName, res.Err)
		}
	}
	// objects is closed (RemoveObjects drained it), so listErr is settled.
	return s.wrap("list", bucket, prefix, listErr)
}

// List returns every object under prefix, in key order.
func (s *Store) List(ctx context.Context, bucket, prefix string) ([]Info, error) {
	var out []Info
	for oi := range s.client.ListObjects(ctx, bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: true}) {
		if oi.Err != nil {
			return nil, s.wrap("list", bucket, prefix, oi.Err)
		}
		out = append(out, toInfo(oi))
	}
	return out, nil
}

// GetJSON decodes the object into v and returns its ETag.
func (s *Store) GetJSON(ctx context.Context, bucket, key string, v any) (string, error) {
	r, info, err := s.Open(ctx, bucket, key, nil)
	if err != nil {
		return "", err
	}
	defer r.Close()
	if err := json.NewDecoder(r).Decode(v); err != nil {
		return "", fmt.Errorf("decode %s/%s: %w", bucket, key, err)
	}
	return info.ETag, nil
}

// PutJSON writes v as JSON.
func (s *Store) PutJSON(ctx context.Context, bucket, key string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode %s/%s: %w", bucket, key, err)
	}
	return s.Put(ctx, bucket, key, data, "application/json")
}

// UpdateJSON is a read-modify-write of one JSON document that never loses a
// concurrent update: the write is conditional on the ETag that was read (or on
// absence), and a lost race re-reads and re-applies. newDoc returns a fresh
// zero document; apply mutates it (found says whether it existed) and returns
// false to skip the write.
func UpdateJSON[T any](ctx context.Context, s *Store, bucket, key string, apply func(doc *T, found bool) (bool, error)) (*T, error) {
	for attempt := 0; ; attempt++ {
		doc := new(T)
		etag, err := s.GetJSON(ctx, bucket, key, doc)
		found := err == nil
		if err != nil && !errors.Is(err, ErrNotFound) {
			return nil, err
		}
		write, err := apply(doc, found)
		if err != nil || !write {
			return doc, err
		}
		data, err := json.Marshal(doc)
		if err != nil {
			return nil, fmt.Errorf("encode %s/%s: %w", bucket, key, err)
		}
		opts := putOptions("application/json")
		if found {
			opts.SetMatchETag(etag)
		} else {
			opts.SetMatchETagExcept("*")
		}
		_, err = s.client.PutObject(ctx, bucket, key, bytes.NewReader(data), int64(len(data)), opts)
		err = s.wrap("put", bucket, key, err)
		if err == nil {
			return doc, nil
		}
		if !errors.Is(err, ErrConflict) || attempt >= 50 {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(time.Duration(attempt+1) * 5 * time.Millisecond):
		}
	}
}

// replicateAttempts bounds how often Replicate starts over because the source
// changed while it was being copied.
const replicateAttempts = 50

// Replicate copies the object under key from srcBucket on src to dstBucket on
// dst (another store, or the same one), with its content type. It copies what
// src holds when it reads, then checks that src still holds it, and starts
// over if not: when several processes read-modify-write one document on src
// and each replicates it afterwards, dst may briefly hold an older copy, but
// every replication ends only after copying what src held at its last check,
// so once they all return dst holds src's final state.
func Replicate(ctx context.Context, src *Store, srcBucket string, dst *Store, dstBucket, key string) error {
	for attempt := 1; ; attempt++ {
		r, info, err := src.Open(ctx, srcBucket, key, nil)
		if err != nil {
			return fmt.Errorf("replicate: %w", err)
		}
		data, err := io.ReadAll(r)
		r.Close()
		if err != nil {
			return fmt.Errorf("replicate: %w", src.wrap("read", srcBucket, key, err))
		}
		if err := dst.Put(ctx, dstBucket, key, data, info.ContentType); err != nil {
			return fmt.Errorf("replicate %s/%s: %w", srcBucket, key, err)
		}
		now, err := src.Stat(ctx, srcBucket, key)
		if err != nil {
			return fmt.Errorf("replicate: %w", err)
		}
		if now.ETag == info.ETag {
			return nil
		}
		if attempt == replicateAttempts {
			return fmt.Errorf("replicate %s/%s on %s to %s on %s: it changed during each of %d copies",
				srcBucket, key, src.cfg.Endpoint, dstBucket, dst.cfg.Endpoint, replicateAttempts)
		}
	}
}

func toInfo(oi minio.ObjectInfo) Info {
	return Info{Key: oi.Key, Size: oi.Size, ETag: strings.Trim(oi.ETag, `"`), ContentType: oi.ContentType, LastModified: oi.LastModified}
}

// wrap turns a client error into one that names the operation and object,
// maps not-found and precondition failures to sentinel errors, and is free of
// credentials (minio-go's messages carry none; signatures are never printed).
func (s *Store) wrap(op, bucket, key string, err error) error {
	if err == nil {
		return nil
	}
	where := bucket
	if key != "" {
		where += "/" + key
	}
	var resp minio.ErrorResponse
	if errors.As(err, &resp) {
		switch {
		case resp.Code == "NoSuchKey" || resp.Code == "NoSuchBucket" || resp.StatusCode == http.StatusNotFound:
			return fmt.Errorf("%s %s: %w", op, where, ErrNotFound)
		case resp.Code == "PreconditionFailed" || resp.StatusCode == http.StatusPreconditionFailed || resp.Code == "ConditionalRequestConflict":
			return fmt.Errorf("%s %s: %w", op, where, ErrConflict)
		case resp.Code == "AccessDenied" || resp.Code == "InvalidAccessKeyId" || resp.Code == "SignatureDoesNotMatch":
			return fmt.Errorf("%s %s on %s: credentials rejected (%s)", op, where, s.cfg.Endpoint, resp.Code)
		}
		return fmt.Errorf("%s %s on %s: %s: %s", op, where, s.cfg.Endpoint, resp.Code, resp.Message)
	}
	return fmt.Errorf("%s %s on %s: %w", op, where, s.cfg.Endpoint, err)
}
