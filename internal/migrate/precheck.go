package migrate

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/edgeflow/edgeflow/internal/objectstore"
)

// PrecheckError says which side of a job cannot work and why.
type PrecheckError struct {
	Side    string // SideSource or SideDest
	Where   string // the location and endpoint
	Problem string // what is missing: a bucket, a permission
	Err     error
}

func (e *PrecheckError) Error() string {
	return fmt.Sprintf("%s %s: %s", e.Side, e.Where, e.Problem)
}

func (e *PrecheckError) Unwrap() error { return e.Err }

// Precheck proves, before a job copies anything, that the source can be
// listed and read and the destination listed and written, and says
// precisely what is missing otherwise (a *PrecheckError; transient
// failures are returned as they are, for a retry). With a key list (firstKey set), the
// source is checked by reading that key instead of listing. The write test
// starts a multipart upload and aborts it; then an empty object under a
// random key, removed at once, tells whether both sides are one bucket
// (see sameBucket).
func Precheck(ctx context.Context, src objectstore.Store, srcLoc Location, srcWhere string,
	dst objectstore.Store, dstLoc Location, dstWhere string, firstKey, job string) error {
	fail := func(side, where, action, permission string, err error) error {
		if objectstore.IsTransient(err) {
			return err // worth retrying: not a verdict on the job
		}
		problem := fmt.Sprintf("%s failed: %v", action, err)
		switch {
		case errors.Is(err, objectstore.ErrNoSuchBucket):
			problem = "the bucket does not exist"
		case errors.Is(err, objectstore.ErrBadCredentials):
			problem = "the credentials are not accepted (check the access and secret keys)"
		case errors.Is(err, objectstore.ErrAccessDenied):
			problem = fmt.Sprintf("%s was denied: the credentials need the %s permission", action, permission)
		}
		return &PrecheckError{Side: side, Where: where, Problem: problem, Err: err}
	}
	// Source: list, then read one object.
	key := firstKey
	if key == "" {
		var page objectstore.ListPage
		err := retrying(ctx, func() (err error) {
			page, err = src.List(ctx, srcLoc.Bucket, objectstore.ListOptions{Prefix: srcLoc.Prefix, MaxKeys: 1})
			return err
		})
		if err != nil {
			return fail(SideSource, srcWhere, "listing", "s3:ListBucket", err)
		}
		if len(page.Objects) > 0 {
			key = page.Objects[0].Key
		}
	}
	if key != "" {
		var body io.ReadCloser
		err := retrying(ctx, func() (err error) {
			if rr, ok := src.(objectstore.RangeReader); ok {
				body, _, err = rr.GetRange(ctx, srcLoc.Bucket, key, 0, 1)
			} else {
				body, _, err = src.Get(ctx, srcLoc.Bucket, key)
			}
			return err
		})
		switch {
		case errors.Is(err, objectstore.ErrInvalid):
			// A zero-byte object has no byte 0 to read: reading was allowed.
		case errors.Is(err, objectstore.ErrNoSuchKey) && firstKey != "":
			// A key list may name missing keys; each fails on its own.
		case err != nil:
			return fail(SideSource, srcWhere, "reading "+key, "s3:GetObject", err)
		default:
			body.Close()
		}
	}
	// Destination: list (to skip what is there), then write.
	err := retrying(ctx, func() error {
		_, err := dst.List(ctx, dstLoc.Bucket, objectstore.ListOptions{Prefix: dstLoc.Prefix, MaxKeys: 1})
		return err
	})
	if err != nil {
		return fail(SideDest, dstWhere, "listing", "s3:ListBucket", err)
	}
	probe := dstLoc.Prefix + ".edgeflow-precheck-" + job
	if mu, ok := dst.(objectstore.MultipartUploader); ok {
		var up objectstore.Upload
		err := retrying(ctx, func() (err error) {
			up, err = mu.CreateMultipartUpload(ctx, dstLoc.Bucket, probe, objectstore.PutOptions{})
			return err
		})
		if err != nil {
			return fail(SideDest, dstWhere, "writing", "s3:PutObject", err)
		}
		err = retrying(ctx, func() error { return mu.AbortMultipartUpload(context.WithoutCancel(ctx), up) })
		if err != nil {
			return fail(SideDest, dstWhere, "aborting a test upload", "s3:AbortMultipartUpload", err)
		}
	}
	return sameBucket(ctx, src, srcLoc, srcWhere, dst, dstLoc, dstWhere, firstKey != "", fail)
}

// sameBucket decides by identity, not by endpoint strings (MINIO.internal
// and minio.internal, an IP for a name, :443 or not), whether the two sides
// are one bucket: it writes an empty object under a random key at the
// destination, looks for it through the source, and removes it. One bucket
// is refused when the prefixes overlap (the copies would be listed and
// copied again, or land on their sources); disjoint prefixes are fine.
// With a key list nothing is listed, so only copies onto themselves (no
// destination prefix) are refused.
func sameBucket(ctx context.Context, src objectstore.Store, srcLoc Location, srcWhere string,
	dst objectstore.Store, dstLoc Location, dstWhere string, keyList bool,
	fail func(side, where, action, permission string, err error) error) error {
	var nonce [12]byte
	if _, err := rand.Read(nonce[:]); err != nil {
		return err
	}
	probe := dstLoc.Prefix + PrecheckProbeDir + hex.EncodeToString(nonce[:])
	err := retrying(ctx, func() error {
		_, err := dst.Put(ctx, dstLoc.Bucket, probe, eofReader{}, 0, objectstore.PutOptions{})
		return err
	})
	if err != nil {
		return fail(SideDest, dstWhere, "writing", "s3:PutObject", err)
	}
	var seen error
	err = retrying(ctx, func() error {
		_, seen = src.Stat(ctx, srcLoc.Bucket, probe)
		if objectstore.IsTransient(seen) {
			return seen
		}
		return nil
	})
	// Removed whatever the verdict, even if ctx ended.
	if derr := retrying(ctx, func() error { return dst.Delete(context.WithoutCancel(ctx), dstLoc.Bucket, probe) }); derr != nil {
		return fail(SideDest, dstWhere, "removing the test object "+probe, "s3:DeleteObject", derr)
	}
	if err != nil {
		return err
	}
	// Not found, or not readable through the source (another bucket or
	// account): two buckets.
	if seen != nil {
		return nil
	}
	overlap := strings.HasPrefix(dstLoc.Prefix, srcLoc.Prefix) || strings.HasPrefix(srcLoc.Prefix, dstLoc.Prefix)
	if keyList {
		overlap = dstLoc.Prefix == ""
	}
	if !overlap {
		return nil
	}
	return &PrecheckError{Side: SideDest, Where: dstWhere, Err: ErrSameBucket,
		Problem: fmt.Sprintf("is the same bucket as the source %s and the prefixes overlap: the copies would be copied again or land on their sources; use prefixes that do not contain each other", srcWhere)}
}

// ErrSameBucket: source and destination are one bucket with overlapping prefixes.
var ErrSameBucket = errors.New("source and destination overlap")

type eofReader struct{}

func (eofReader) Read([]byte) (int, error) { return 0, io.EOF }

// retrying runs one precheck request, trying again with backoff while the
// store answers SlowDown or fails transiently: a busy store is not a
// missing permission.
func retrying(ctx context.Context, request func() error) error {
	var err error
	for attempt := 1; ; attempt++ {
		if err = request(); err == nil || !objectstore.IsTransient(err) || attempt == 8 {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(DefaultBackoff.Delay(attempt, nil)):
		}
	}
}

// PrecheckProbeDir is the folder, under the destination's prefix, of the
// empty object the precheck writes and removes to tell whether the two
// sides are one bucket: the one write of a job that is not a copy.
const PrecheckProbeDir = ".edgeflow-precheck/"

// WithoutProbes returns the writes counted at a destination (bucket/key →
// count) less the precheck's probe objects, for tests that count a job's
// copies.
func WithoutProbes(writes map[string]int) map[string]int {
	out := make(map[string]int, len(writes))
	for k, n := range writes {
		if !strings.Contains(k, "/"+PrecheckProbeDir) && !strings.HasPrefix(k, PrecheckProbeDir) {
			out[k] = n
		}
	}
	return out
}
