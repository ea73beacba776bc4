// Package s3 is the objectstore implementation for any S3-compatible store
// (MinIO locally; R2, S3 and others in production), on minio-go. It has every
// capability of objectstore. Errors are *objectstore.Error values with their
// kind set, and never carry credentials.
package s3

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/edgeflow/edgeflow/internal/objectstore"
)

// Config says how to reach one store. SecretKey is never printed.
type Config struct {
	Endpoint  string // host:port, no scheme
	AccessKey string
	SecretKey string
	// SessionToken goes with temporary credentials (AWS STS); usually empty.
	SessionToken string
	Secure       bool // https
	Region       string
	// MaxRetries is how often minio-go retries a transient failure itself
	// (with backoff) before returning it; 0 means its default of 10, 1 means
	// no retry (the caller retries, e.g. a Temporal activity).
	MaxRetries int
	// Pinned are the IP addresses Endpoint's host was resolved to when a
	// job was checked against the allowed endpoints. When set, every
	// connection dials one of them, never the name again (no DNS rebinding
	// between the check and the use), and only for Endpoint's own host and
	// port; TLS and the Host header keep the name. Requests are path-style,
	// so no other host name (bucket.host) is ever asked for.
	Pinned []string
}

// String describes the store without its credentials: not even the access
// key ID, which names an account and ends up in errors, logs and workflow
// histories.
func (c Config) String() string {
	scheme := "http"
	if c.Secure {
		scheme = "https"
	}
	return fmt.Sprintf("%s://%s", scheme, c.Endpoint)
}

// Store is one S3 endpoint with one set of credentials.
type Store struct {
	cfg  Config
	core *minio.Core
}

// The capabilities this store has, checked at compile time.
var (
	_ objectstore.Store                = (*Store)(nil)
	_ objectstore.Copier               = (*Store)(nil)
	_ objectstore.MultipartUploader    = (*Store)(nil)
	_ objectstore.PartCopier           = (*Store)(nil)
	_ objectstore.ConditionalWriter    = (*Store)(nil)
	_ objectstore.ConditionalCompleter = (*Store)(nil)
	_ objectstore.RangeReader          = (*Store)(nil)
	_ objectstore.BucketManager        = (*Store)(nil)
	_ objectstore.BulkDeleter          = (*Store)(nil)
)

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
	lookup := minio.BucketLookupAuto
	if len(cfg.Pinned) > 0 {
		dial, err := PinnedDialer(cfg.Endpoint, cfg.Secure, cfg.Pinned)
		if err != nil {
			return nil, fmt.Errorf("object store %s: %w", cfg, err)
		}
		// A proxy would be dialled instead of the pinned address.
		transport.Proxy = nil
		transport.DialContext = dial
		lookup = minio.BucketLookupPath
	}
	core, err := minio.NewCore(cfg.Endpoint, &minio.Options{
		Creds:        credentials.NewStaticV4(cfg.AccessKey, cfg.SecretKey, cfg.SessionToken),
		Secure:       cfg.Secure,
		Region:       cfg.Region,
		Transport:    transport,
		MaxRetries:   cfg.MaxRetries,
		BucketLookup: lookup,
	})
	if err != nil {
		return nil, fmt.Errorf("object store %s: %w", cfg, err)
	}
	return &Store{cfg: cfg, core: core}, nil
}

// Config returns the store's configuration.
func (s *Store) Config() Config { return s.cfg }

// String names the store without its secret, for logs.
func (s *Store) String() string { return s.cfg.String() }

// Ping checks that the store answers and accepts the credentials.
func (s *Store) Ping(ctx context.Context) error {
	_, err := s.core.ListBuckets(ctx)
	return s.fail("list buckets", "", "", err)
}

// ---- core ----------------------------------------------------------------

func (s *Store) Get(ctx context.Context, bucket, key string) (io.ReadCloser, objectstore.ObjectInfo, error) {
	return s.get(ctx, bucket, key, minio.GetObjectOptions{})
}

func (s *Store) get(ctx context.Context, bucket, key string, opts minio.GetObjectOptions) (io.ReadCloser, objectstore.ObjectInfo, error) {
	body, oi, header, err := s.core.GetObject(ctx, bucket, key, opts)
	if err != nil {
		return nil, objectstore.ObjectInfo{}, s.fail("get", bucket, key, err)
	}
	info := toInfo(oi)
	if total, ok := rangeTotal(header.Get("Content-Range")); ok {
		info.Size = total
	}
	return body, info, nil
}

func (s *Store) Put(ctx context.Context, bucket, key string, r io.Reader, size int64, opts objectstore.PutOptions) (objectstore.ObjectInfo, error) {
	return s.put(ctx, bucket, key, r, size, putOptions(opts.Metadata))
}

func (s *Store) put(ctx context.Context, bucket, key string, r io.Reader, size int64, po minio.PutObjectOptions) (objectstore.ObjectInfo, error) {
	if size < 0 {
		po.PartSize = 16 << 20 // unknown size: minio-go buffers parts of this size
	}
	ui, err := s.core.Client.PutObject(ctx, bucket, key, r, size, po)
	if err != nil {
		return objectstore.ObjectInfo{}, s.fail("put", bucket, key, err)
	}
	return objectstore.ObjectInfo{Key: key, Size: ui.Size, ETag: trimETag(ui.ETag), LastModified: ui.LastModified,
		Metadata: metadataOf(po)}, nil
}

func (s *Store) Stat(ctx context.Context, bucket, key string) (objectstore.ObjectInfo, error) {
	oi, err := s.core.Client.StatObject(ctx, bucket, key, minio.StatObjectOptions{})
	if err != nil {
		return objectstore.ObjectInfo{}, s.fail("stat", bucket, key, err)
	}
	return toInfo(oi), nil
}

func (s *Store) Delete(ctx context.Context, bucket, key string) error {
	err := s.core.Client.RemoveObject(ctx, bucket, key, minio.RemoveObjectOptions{})
	if err = s.fail("delete", bucket, key, err); errors.Is(err, objectstore.ErrNoSuchKey) {
		return nil
	}
	return err
}

// ---- capabilities --------------------------------------------------------

// CanCopyFrom: server-side copies need the source on this endpoint, readable
// with these credentials.
func (s *Store) CanCopyFrom(src objectstore.Store) bool {
	o, ok := src.(*Store)
	return ok && (o == s || (o.cfg.Endpoint == s.cfg.Endpoint && o.cfg.AccessKey == s.cfg.AccessKey && o.cfg.Secure == s.cfg.Secure))
}

func (s *Store) Copy(ctx context.Context, srcBucket, srcKey, dstBucket, dstKey string, opts objectstore.CopyOptions) (objectstore.ObjectInfo, error) {
	dst := minio.CopyDestOptions{Bucket: dstBucket, Object: dstKey}
	if m := opts.Metadata; m != nil {
		dst.ReplaceMetadata = true
		dst.UserMetadata = m.User
		if dst.UserMetadata == nil {
			dst.UserMetadata = map[string]string{} // replace with none, not keep
		}
		dst.ContentType = orOctetStream(m.ContentType)
		dst.CacheControl, dst.ContentEncoding, dst.ContentDisposition = m.CacheControl, m.ContentEncoding, m.ContentDisposition
	}
	src := minio.CopySrcOptions{Bucket: srcBucket, Object: srcKey, MatchETag: opts.IfSourceMatch}
	ui, err := s.core.Client.CopyObject(ctx, dst, src)
	if err != nil {
		return objectstore.ObjectInfo{}, s.fail("copy "+srcBucket+"/"+srcKey+" to", dstBucket, dstKey, err)
	}
	// A copy reports no metadata; the caller that needs it asks Stat.
	return objectstore.ObjectInfo{Key: dstKey, ETag: trimETag(ui.ETag), LastModified: ui.LastModified}, nil
}

func (s *Store) CreateMultipartUpload(ctx context.Context, bucket, key string, opts objectstore.PutOptions) (objectstore.Upload, error) {
	id, err := s.core.NewMultipartUpload(ctx, bucket, key, putOptions(opts.Metadata))
	if err != nil {
		return objectstore.Upload{}, s.fail("create multipart upload", bucket, key, err)
	}
	return objectstore.Upload{Bucket: bucket, Key: key, ID: id}, nil
}

func (s *Store) UploadPart(ctx context.Context, u objectstore.Upload, n int, r io.Reader, size int64) (objectstore.Part, error) {
	p, err := s.core.PutObjectPart(ctx, u.Bucket, u.Key, u.ID, n, r, size, minio.PutObjectPartOptions{DisableContentSha256: true})
	if err != nil {
		return objectstore.Part{}, s.fail("upload part "+strconv.Itoa(n)+" of", u.Bucket, u.Key, err)
	}
	return objectstore.Part{Number: n, ETag: trimETag(p.ETag), Size: p.Size}, nil
}

func (s *Store) ListParts(ctx context.Context, u objectstore.Upload) ([]objectstore.Part, error) {
	var parts []objectstore.Part
	marker := 0
	for {
		res, err := s.core.ListObjectParts(ctx, u.Bucket, u.Key, u.ID, marker, 1000)
		if err != nil {
			return nil, s.fail("list parts of", u.Bucket, u.Key, err)
		}
		for _, p := range res.ObjectParts {
			parts = append(parts, objectstore.Part{Number: p.PartNumber, ETag: trimETag(p.ETag), Size: p.Size})
		}
		if !res.IsTruncated {
			return parts, nil
		}
		marker = res.NextPartNumberMarker
	}
}

func (s *Store) CompleteMultipartUpload(ctx context.Context, u objectstore.Upload, parts []objectstore.Part) (objectstore.ObjectInfo, error) {
	return s.complete(ctx, u, parts, minio.PutObjectOptions{})
}

// CompleteMultipartUploadIf sends If-None-Match: * (or If-Match) with the
// completion, which MinIO and S3 check against the object at that moment.
func (s *Store) CompleteMultipartUploadIf(ctx context.Context, u objectstore.Upload, parts []objectstore.Part, cond objectstore.Precondition) (objectstore.ObjectInfo, error) {
	var po minio.PutObjectOptions
	if err := s.precondition(&po, "complete multipart upload of", u.Bucket, u.Key, cond); err != nil {
		return objectstore.ObjectInfo{}, err
	}
	return s.complete(ctx, u, parts, po)
}

func (s *Store) complete(ctx context.Context, u objectstore.Upload, parts []objectstore.Part, po minio.PutObjectOptions) (objectstore.ObjectInfo, error) {
	complete := make([]minio.CompletePart, 0, len(parts))
	var size int64
	for _, p := range objectstore.SortedParts(parts) {
		complete = append(complete, minio.CompletePart{PartNumber: p.Number, ETag: p.ETag})
		size += p.Size
	}
	ui, err := s.core.CompleteMultipartUpload(ctx, u.Bucket, u.Key, u.ID, complete, po)
	if err != nil {
		return objectstore.ObjectInfo{}, s.fail("complete multipart upload of", u.Bucket, u.Key, err)
	}
	return objectstore.ObjectInfo{Key: u.Key, Size: size, ETag: trimETag(ui.ETag), LastModified: ui.LastModified}, nil
}

func (s *Store) AbortMultipartUpload(ctx context.Context, u objectstore.Upload) error {
	err := s.core.AbortMultipartUpload(ctx, u.Bucket, u.Key, u.ID)
	return s.fail("abort multipart upload of", u.Bucket, u.Key, err)
}

func (s *Store) UploadPartCopy(ctx context.Context, u objectstore.Upload, n int, src objectstore.ByteRange) (objectstore.Part, error) {
	var header map[string]string
	if src.IfMatch != "" {
		header = map[string]string{"x-amz-copy-source-if-match": src.IfMatch}
	}
	p, err := s.core.CopyObjectPart(ctx, src.Bucket, src.Key, u.Bucket, u.Key, u.ID, n, src.Offset, src.Length, header)
	if err != nil {
		return objectstore.Part{}, s.fail(fmt.Sprintf("copy %s/%s bytes %d+%d into part %d of", src.Bucket, src.Key, src.Offset, src.Length, n), u.Bucket, u.Key, err)
	}
	return objectstore.Part{Number: n, ETag: trimETag(p.ETag), Size: src.Length}, nil
}

func (s *Store) PutIf(ctx context.Context, bucket, key string, r io.Reader, size int64, opts objectstore.PutOptions, cond objectstore.Precondition) (objectstore.ObjectInfo, error) {
	po := putOptions(opts.Metadata)
	if err := s.precondition(&po, "put", bucket, key, cond); err != nil {
		return objectstore.ObjectInfo{}, err
	}
	// One request: a multipart upload would check the condition only at the end.
	po.DisableMultipart = true
	return s.put(ctx, bucket, key, r, size, po)
}

// precondition sets a write's If-Match or If-None-Match: * header.
func (s *Store) precondition(po *minio.PutObjectOptions, op, bucket, key string, cond objectstore.Precondition) error {
	switch {
	case cond.IfMatch != "" && cond.IfNoneMatch == "":
		po.SetMatchETag(cond.IfMatch)
	case cond.IfNoneMatch == "*" && cond.IfMatch == "":
		po.SetMatchETagExcept("*")
	default:
		return &objectstore.Error{Op: op, Bucket: bucket, Key: key, Endpoint: s.cfg.Endpoint,
			Kind: objectstore.ErrInvalid, Message: fmt.Sprintf("precondition %+v: give IfMatch, or IfNoneMatch \"*\"", cond)}
	}
	return nil
}

func (s *Store) GetRange(ctx context.Context, bucket, key string, offset, length int64) (io.ReadCloser, objectstore.ObjectInfo, error) {
	var opts minio.GetObjectOptions
	var err error
	switch {
	case offset < 0 || length == 0 || length < -1:
		err = fmt.Errorf("range offset %d length %d", offset, length)
	case length == -1:
		err = opts.SetRange(offset, 0)
	default:
		err = opts.SetRange(offset, offset+length-1)
	}
	if err != nil {
		return nil, objectstore.ObjectInfo{}, &objectstore.Error{Op: "get", Bucket: bucket, Key: key, Endpoint: s.cfg.Endpoint,
			Kind: objectstore.ErrInvalid, Err: err}
	}
	return s.get(ctx, bucket, key, opts)
}

func (s *Store) MakeBucket(ctx context.Context, bucket string) error {
	err := s.core.Client.MakeBucket(ctx, bucket, minio.MakeBucketOptions{Region: s.cfg.Region})
	return s.fail("create bucket", bucket, "", err)
}

func (s *Store) BucketExists(ctx context.Context, bucket string) (bool, error) {
	ok, err := s.core.Client.BucketExists(ctx, bucket)
	return ok, s.fail("check bucket", bucket, "", err)
}

func (s *Store) ListBuckets(ctx context.Context) ([]string, error) {
	bs, err := s.core.Client.ListBuckets(ctx)
	if err != nil {
		return nil, s.fail("list buckets", "", "", err)
	}
	names := make([]string, len(bs))
	for i, b := range bs {
		names[i] = b.Name
	}
	return names, nil
}

func (s *Store) RemoveBucket(ctx context.Context, bucket string) error {
	return s.fail("remove bucket", bucket, "", s.core.Client.RemoveBucket(ctx, bucket))
}

func (s *Store) DeleteKeys(ctx context.Context, bucket string, keys []string) error {
	objects := make(chan minio.ObjectInfo, len(keys))
	for _, k := range keys {
		objects <- minio.ObjectInfo{Key: k}
	}
	close(objects)
	for res := range s.core.Client.RemoveObjects(ctx, bucket, objects, minio.RemoveObjectsOptions{}) {
		if res.Err != nil {
			if err := s.fail("delete", bucket, res.ObjectName, res.Err); !errors.Is(err, objectstore.ErrNoSuchKey) {
				return err
			}
		}
	}
	return nil
}

// ---- errors --------------------------------------------------------------

// fail turns a minio-go error into an *objectstore.Error naming the request,
// classified by the store's code and status (or the network failure), with
// the store's message but no credentials: minio-go's messages carry none and
// request signatures are never printed.
func (s *Store) fail(op, bucket, key string, err error) error {
	if err == nil {
		return nil
	}
	e := &objectstore.Error{Op: op, Bucket: bucket, Key: key, Endpoint: s.cfg.Endpoint}
	var resp minio.ErrorResponse
	if errors.As(err, &resp) && (resp.Code != "" || resp.StatusCode != 0) {
		e.Code, e.StatusCode, e.Message = resp.Code, resp.StatusCode, resp.Message
		e.Kind = classify(resp.Code, resp.StatusCode, resp.Message)
		if e.Kind != nil && e.Kind != objectstore.ErrTransient && e.Kind != objectstore.ErrInvalid {
			e.Message = "" // the kind says it; S3's wording adds nothing
		}
		return e
	}
	e.Err = closedConnection(err)
	e.Kind = objectstore.ClassifyNetwork(e.Err)
	return e
}

// closedConnection gives back the io.EOF that minio-go drops: when the
// connection closes before an answer (a node behind a load balancer
// stopped mid-request) it replaces the EOF by a new error of text only,
// "Connection closed by foreign host … Retry again.", which no errors.Is
// recognises, so a store's hiccup became the object's error.
func closedConnection(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) && ue.Err != nil && strings.HasPrefix(ue.Err.Error(), "Connection closed by foreign host") {
		return fmt.Errorf("%w (%w)", err, io.ErrUnexpectedEOF)
	}
	return err
}

// classify maps an S3 error code and HTTP status to an objectstore kind.
func classify(code string, status int, message string) error {
	switch code {
	case "NoSuchKey":
		return objectstore.ErrNoSuchKey
	case "NoSuchBucket":
		return objectstore.ErrNoSuchBucket
	case "NoSuchUpload":
		return objectstore.ErrNoSuchUpload
	case "PreconditionFailed", "ConditionalRequestConflict":
		return objectstore.ErrPreconditionFailed
	case "BucketAlreadyOwnedByYou", "BucketAlreadyExists":
		return objectstore.ErrBucketExists
	case "BucketNotEmpty":
		return objectstore.ErrConflict
	case "InvalidAccessKeyId", "SignatureDoesNotMatch", "ExpiredToken", "InvalidToken", "InvalidSecurity":
		return objectstore.ErrBadCredentials
	case "AccessDenied", "AllAccessDisabled":
		return objectstore.ErrAccessDenied
	case "SlowDown", "SlowDownRead", "SlowDownWrite", "ServiceUnavailable", "InternalError", "RequestTimeout",
		"RequestTimeTooSkewed", "OperationAborted", "XMinioServerNotInitialized", "TooManyRequests",
		// MinIO's 499 when a request's connection, or one between its
		// nodes, went away mid-request (a node of a distributed MinIO
		// stopped): the request's luck, not the object's.
		"ClientDisconnected":
		return objectstore.ErrTransient
	case "EntityTooLarge":
		return objectstore.ErrTooLarge
	case "InvalidRequest":
		// AWS's answer to a single copy of more than 5 GiB.
		if strings.Contains(message, "copy source is larger than the maximum") {
			return objectstore.ErrTooLarge
		}
		return objectstore.ErrInvalid
	case "InvalidArgument", "InvalidBucketName", "XMinioInvalidObjectName", "InvalidPart", "InvalidPartOrder",
		"EntityTooSmall", "KeyTooLongError", "MalformedXML", "InvalidRange":
		return objectstore.ErrInvalid
	}
	return objectstore.KindOfStatus(status)
}
