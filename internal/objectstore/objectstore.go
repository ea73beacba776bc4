// Package objectstore is how every product talks to object storage: a small
// required core every store implements (Store: get, put, stat, delete and a
// paged list) and optional capabilities a caller discovers by type assertion,
// as rclone's fs does:
//
//	Copier             server-side copy, preserving or replacing metadata
//	MultipartUploader  create / upload part / list parts / complete / abort
//	PartCopier         server-side copy of a byte range into a part (compose)
//	ConditionalWriter  writes guarded by If-Match / If-None-Match
//	RangeReader        reads of a byte range
//	BucketManager      create, check, list and remove buckets
//	BulkDeleter        many deletes in one request
//	BatchWriter        many small objects written in one request
//
// The helpers in this package (Copy, Compose, DeletePrefix, EnsureBuckets,
// GetJSON/PutJSON/UpdateJSON, Replicate, ...) use a capability when the store
// has it and fall back, or say clearly that it is missing, when it does not.
// Errors are classified (see errors.go) so callers can tell a missing key from
// a lost race, a rejected credential or a failure worth retrying. The S3
// implementation, on minio-go, is in the s3 subpackage.
package objectstore

import (
	"context"
	"io"
	"maps"
	"path"
	"strings"
	"time"
	"unicode/utf8"
)

// Store is the core every object store implements.
type Store interface {
	// Get streams a whole object. The response headers are read before it
	// returns, so a missing object is an error here, not on the first Read.
	Get(ctx context.Context, bucket, key string) (io.ReadCloser, ObjectInfo, error)
	// Put writes size bytes from r (size -1: until EOF) under key.
	Put(ctx context.Context, bucket, key string, r io.Reader, size int64, opts PutOptions) (ObjectInfo, error)
	// Stat describes an object without reading it.
	Stat(ctx context.Context, bucket, key string) (ObjectInfo, error)
	// Delete removes an object; a missing object is not an error.
	Delete(ctx context.Context, bucket, key string) error
	// List returns one page of the objects in bucket, in key order.
	List(ctx context.Context, bucket string, opts ListOptions) (ListPage, error)
}

// Metadata is what a store keeps with an object besides its bytes. Migrate
// preserves all of it; Publish sets the content type.
type Metadata struct {
	ContentType        string `json:"contentType,omitempty"`
	CacheControl       string `json:"cacheControl,omitempty"`
	ContentEncoding    string `json:"contentEncoding,omitempty"`
	ContentDisposition string `json:"contentDisposition,omitempty"`
	// User is the user metadata (x-amz-meta-*). Keys are case-insensitive;
	// stores return them in lower case.
	User map[string]string `json:"user,omitempty"`
}

// Clone returns a copy that shares no map with m.
func (m Metadata) Clone() Metadata {
	m.User = maps.Clone(m.User)
	return m
}

// ObjectInfo describes a stored object. List results carry Key, Size, ETag
// and LastModified only (S3 listings have no more); Get, Stat and Put fill
// the metadata too.
type ObjectInfo struct {
	Key          string    `json:"key"`
	Size         int64     `json:"size"` // of the whole object, also for range reads
	ETag         string    `json:"etag"` // without quotes
	LastModified time.Time `json:"lastModified"`
	Metadata
}

// PutOptions are the metadata a Put stores with the object. An empty
// ContentType is stored as application/octet-stream.
type PutOptions struct {
	Metadata
}

// ListOptions select a page of a listing.
type ListOptions struct {
	Prefix string
	// Delimiter groups keys that share a prefix up to it into
	// ListPage.CommonPrefixes (e.g. "/" for one folder level); empty lists
	// every key under Prefix.
	Delimiter string
	// StartAfter lists keys after this one (first page only).
	StartAfter string
	// ContinuationToken is the NextToken of the previous page.
	ContinuationToken string
	// MaxKeys bounds the page; 0 means the store's maximum (1,000 on S3).
	MaxKeys int
}

// ListPage is one page of a listing.
type ListPage struct {
	Objects        []ObjectInfo
	CommonPrefixes []string
	// NextToken continues the listing; empty on the last page.
	NextToken string
}

// Copier copies objects server side: the bytes never leave the store.
type Copier interface {
	// Copy copies srcBucket/srcKey to dstBucket/dstKey, both on this store.
	// One request copies at most MaxCopySize bytes; larger objects need
	// Compose (the Copy helper picks it).
	Copy(ctx context.Context, srcBucket, srcKey, dstBucket, dstKey string, opts CopyOptions) (ObjectInfo, error)
	// CanCopyFrom reports whether objects of src can be copied into this
	// store server side (the same endpoint and credentials).
	CanCopyFrom(src Store) bool
}

// CopyOptions control a copy.
type CopyOptions struct {
	// Metadata, when set, replaces the source's metadata on the copy; nil
	// keeps the source's content type, cache control, encoding, disposition
	// and user metadata.
	Metadata *Metadata
	// IfSourceMatch copies only when the source still has this ETag
	// (ErrPreconditionFailed otherwise): a copy of exactly what was listed.
	IfSourceMatch string

	// The fields below are read by the Copy helper only.

	// Size is the source's size when the caller knows it (from a listing):
	// Copy composes objects above SingleCopyLimit at once. When it is 0, Copy
	// tries one request and composes if the store answers ErrTooLarge.
	Size int64
	// SingleCopyLimit is the largest object copied in one request; 0 means
	// MaxCopySize. Larger objects are composed from parts of PartSize.
	SingleCopyLimit int64
	// PartSize is the part size of composed copies and of streamed ones; 0
	// means DefaultPartSize.
	PartSize int64
	// Parallel bounds the parts copied at once; 0 means 4.
	Parallel int
	// IfNoneMatch "*" guards a composed copy: it completes only if the
	// destination still does not exist (see ComposeOptions). A single copy
	// request is not guarded; its caller checks before.
	IfNoneMatch string
}

// MaxCopySize is the largest object S3 copies in one request (5 GiB).
const MaxCopySize = 5 << 30

// Multipart limits of S3: every part but the last is at least MinPartSize,
// no part is larger than MaxPartSize, and an upload has at most MaxParts.
const (
	MinPartSize     = 5 << 20
	MaxPartSize     = 5 << 30
	MaxParts        = 10000
	DefaultPartSize = 64 << 20
)

// Upload names one multipart upload. It is plain data, so a workflow can
// keep it in its state and an activity on another host can add parts.
type Upload struct {
	Bucket string `json:"bucket"`
	Key    string `json:"key"`
	ID     string `json:"id"`
}

// Part is one uploaded part of a multipart upload.
type Part struct {
	Number int    `json:"number"`
	ETag   string `json:"etag"`
	Size   int64  `json:"size"`
}

// MultipartUploader uploads one object as parts that may be sent in
// parallel, from several processes, and in any order.
type MultipartUploader interface {
	CreateMultipartUpload(ctx context.Context, bucket, key string, opts PutOptions) (Upload, error)
	// UploadPart stores part number n (1..MaxParts) of size bytes from r.
	// Uploading a number again replaces that part.
	UploadPart(ctx context.Context, u Upload, n int, r io.Reader, size int64) (Part, error)
	// ListParts returns the parts uploaded so far, by number: what a resumed
	// transfer does not need to send again.
	ListParts(ctx context.Context, u Upload) ([]Part, error)
	// CompleteMultipartUpload joins the parts, in number order, into the object.
	CompleteMultipartUpload(ctx context.Context, u Upload, parts []Part) (ObjectInfo, error)
	// AbortMultipartUpload discards the upload and its parts.
	AbortMultipartUpload(ctx context.Context, u Upload) error
}

// ByteRange is part of an object on the same store: Length bytes from Offset.
type ByteRange struct {
	Bucket string `json:"bucket"`
	Key    string `json:"key"`
	Offset int64  `json:"offset"`
	Length int64  `json:"length"`
	// IfMatch, when set, is the ETag the source object must still have.
	IfMatch string `json:"ifMatch,omitempty"`
}

// PartCopier fills a part of a multipart upload from a range of an object
// already on the store (S3 UploadPartCopy): server-side compose, the way to
// copy objects larger than MaxCopySize.
type PartCopier interface {
	UploadPartCopy(ctx context.Context, u Upload, n int, src ByteRange) (Part, error)
}

// Precondition guards a conditional write.
type Precondition struct {
	// IfMatch writes only if the object exists with this ETag.
	IfMatch string
	// IfNoneMatch "*" writes only if the object does not exist.
	IfNoneMatch string
}

// ConditionalWriter writes only when a precondition holds; otherwise it
// returns an error that errors.Is ErrPreconditionFailed. It is the basis of
// optimistic concurrency (UpdateJSON) and of exactly-once creates.
type ConditionalWriter interface {
	PutIf(ctx context.Context, bucket, key string, r io.Reader, size int64, opts PutOptions, cond Precondition) (ObjectInfo, error)
}

// ConditionalCompleter completes a multipart upload only when a
// precondition on the destination holds (S3's If-None-Match: * on
// CompleteMultipartUpload), so an object that appeared while the parts were
// sent is never overwritten; ErrPreconditionFailed otherwise.
type ConditionalCompleter interface {
	CompleteMultipartUploadIf(ctx context.Context, u Upload, parts []Part, cond Precondition) (ObjectInfo, error)
}

// RangeReader reads part of an object.
type RangeReader interface {
	// GetRange streams length bytes from offset (length -1: to the end).
	// ObjectInfo.Size is the size of the whole object.
	GetRange(ctx context.Context, bucket, key string, offset, length int64) (io.ReadCloser, ObjectInfo, error)
}

// AttributesFirst is a store whose Get and GetRange first ask the object's
// attributes with a request of their own, answered with a document, before
// its bytes (GCS: the JSON API's object, then the media): what a read
// costs its server beyond the one request and the bytes a caller sees.
type AttributesFirst interface {
	// AttributesBytes is about how many bytes the answer with key's
	// attributes holds (a Stat's answer too).
	AttributesBytes(bucket, key string) int64
}

// BucketManager creates, checks, lists and removes buckets.
type BucketManager interface {
	// MakeBucket creates a bucket; ErrBucketExists when it exists already.
	MakeBucket(ctx context.Context, bucket string) error
	BucketExists(ctx context.Context, bucket string) (bool, error)
	ListBuckets(ctx context.Context) ([]string, error)
	// RemoveBucket removes an empty bucket.
	RemoveBucket(ctx context.Context, bucket string) error
}

// BulkDeleter deletes many objects of one bucket in few requests.
type BulkDeleter interface {
	// DeleteKeys deletes the keys; missing ones are not an error.
	DeleteKeys(ctx context.Context, bucket string, keys []string) error
}

// BatchEntry is one small object of a batched write.
type BatchEntry struct {
	Key      string
	Data     []byte
	Metadata Metadata
}

// BatchWriter writes many small objects in one request: a tar archive the
// store extracts into objects, as MinIO does with its "snowball" uploads
// (the `X-Amz-Meta-Snowball-Auto-Extract` header AWS Snowball Edge also
// knows). A store that does not extract it stores the archive as one
// object under the first entry's key instead, so a caller checks one
// batch's result (an entry's ETag) before relying on it.
type BatchWriter interface {
	// PutBatch writes the entries (keys BatchKey accepts); an error says
	// nothing of which were written.
	PutBatch(ctx context.Context, bucket string, entries []BatchEntry) error
}

// BatchKey reports whether a key survives a batch's archive unchanged:
// the extracting store cleans each path (path.Clean) and trims a leading
// slash, so keys such as "a//b", "./a", "a/" or "/a" go one by one.
func BatchKey(key string) bool {
	return key != "" && key != "." && utf8.ValidString(key) && !strings.ContainsRune(key, 0) &&
		!strings.HasPrefix(key, "/") && !strings.HasPrefix(key, "../") && key != ".." && path.Clean(key) == key
}
