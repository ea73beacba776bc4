package objectstore

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"golang.org/x/sync/errgroup"
)

// Copy copies an object from one store to another (or within one) with its
// metadata, the cheapest way the stores allow: a server-side copy when dst
// can reach src, composed from server-side part copies above the single-copy
// limit, and otherwise streamed through this process, never held whole.
func Copy(ctx context.Context, src Store, srcBucket, srcKey string, dst Store, dstBucket, dstKey string, opts CopyOptions) (ObjectInfo, error) {
	limit := opts.SingleCopyLimit
	if limit <= 0 {
		limit = MaxCopySize
	}
	if c, ok := dst.(Copier); ok && c.CanCopyFrom(src) {
		if opts.Size <= limit {
			info, err := c.Copy(ctx, srcBucket, srcKey, dstBucket, dstKey, opts)
			if !errors.Is(err, ErrTooLarge) || opts.Size > 0 {
				return info, err
			}
		}
		// Too large for one request: compose it from part copies, if dst can.
		if _, ok := dst.(PartCopier); ok {
			return composeCopy(ctx, dst, srcBucket, srcKey, dstBucket, dstKey, opts)
		}
	}
	return streamCopy(ctx, src, srcBucket, srcKey, dst, dstBucket, dstKey, opts)
}

func composeCopy(ctx context.Context, s Store, srcBucket, srcKey, dstBucket, dstKey string, opts CopyOptions) (ObjectInfo, error) {
	info, err := s.Stat(ctx, srcBucket, srcKey)
	if err != nil {
		return ObjectInfo{}, err
	}
	if opts.IfSourceMatch != "" && info.ETag != opts.IfSourceMatch {
		return ObjectInfo{}, &Error{Op: "copy", Bucket: srcBucket, Key: srcKey, Kind: ErrPreconditionFailed,
			Message: fmt.Sprintf("its ETag is %s, the copy asked for %s", info.ETag, opts.IfSourceMatch)}
	}
	meta := info.Metadata
	if opts.Metadata != nil {
		meta = *opts.Metadata
	}
	return Compose(ctx, s, dstBucket, dstKey,
		[]ByteRange{{Bucket: srcBucket, Key: srcKey, Length: info.Size, IfMatch: info.ETag}},
		ComposeOptions{Metadata: meta, PartSize: opts.PartSize, Parallel: opts.Parallel, IfNoneMatch: opts.IfNoneMatch})
}

func streamCopy(ctx context.Context, src Store, srcBucket, srcKey string, dst Store, dstBucket, dstKey string, opts CopyOptions) (ObjectInfo, error) {
	body, info, err := src.Get(ctx, srcBucket, srcKey)
	if err != nil {
		return ObjectInfo{}, err
	}
	defer body.Close()
	if opts.IfSourceMatch != "" && info.ETag != opts.IfSourceMatch {
		return ObjectInfo{}, &Error{Op: "copy", Bucket: srcBucket, Key: srcKey, Kind: ErrPreconditionFailed,
			Message: fmt.Sprintf("its ETag is %s, the copy asked for %s", info.ETag, opts.IfSourceMatch)}
	}
	meta := info.Metadata
	if opts.Metadata != nil {
		meta = *opts.Metadata
	}
	return dst.Put(ctx, dstBucket, dstKey, body, info.Size, PutOptions{Metadata: meta})
}

// ComposeOptions control Compose.
type ComposeOptions struct {
	Metadata Metadata // of the new object
	PartSize int64    // 0: DefaultPartSize
	Parallel int      // parts copied at once; 0: 4
	// IfNoneMatch "*" completes only if the destination does not exist
	// (ErrPreconditionFailed otherwise): with a ConditionalCompleter by the
	// store itself, else by a Stat just before completing.
	IfNoneMatch string
}

// Compose builds dstBucket/dstKey on s from ranges of objects already on s,
// in order, without the bytes leaving the store: one multipart upload whose
// parts are server-side range copies, several at a time. Every range but the
// last must be at least MinPartSize (S3's rule for parts). A failed compose
// aborts its upload.
func Compose(ctx context.Context, s Store, dstBucket, dstKey string, srcs []ByteRange, opts ComposeOptions) (ObjectInfo, error) {
	mu, ok1 := s.(MultipartUploader)
	pc, ok2 := s.(PartCopier)
	if !ok1 || !ok2 {
		return ObjectInfo{}, fmt.Errorf("compose %s/%s: multipart part copies: %w", dstBucket, dstKey, ErrNotSupported)
	}
	parts, err := planParts(srcs, opts.PartSize)
	if err != nil {
		return ObjectInfo{}, fmt.Errorf("compose %s/%s: %w", dstBucket, dstKey, err)
	}
	up, err := mu.CreateMultipartUpload(ctx, dstBucket, dstKey, PutOptions{Metadata: opts.Metadata})
	if err != nil {
		return ObjectInfo{}, err
	}
	done := make([]Part, len(parts))
	g, gctx := errgroup.WithContext(ctx)
	parallel := opts.Parallel
	if parallel <= 0 {
		parallel = 4
	}
	g.SetLimit(parallel)
	for i, r := range parts {
		g.Go(func() error {
			p, err := pc.UploadPartCopy(gctx, up, i+1, r)
			done[i] = p
			return err
		})
	}
	if err = g.Wait(); err == nil {
		var info ObjectInfo
		if info, err = CompleteIf(ctx, mu, up, done, opts.IfNoneMatch); err == nil {
			return info, nil
		}
	}
	// The upload's parts cost storage until aborted; abort even if ctx ended.
	if abortErr := mu.AbortMultipartUpload(context.WithoutCancel(ctx), up); abortErr != nil {
		return ObjectInfo{}, errors.Join(err, abortErr)
	}
	return ObjectInfo{}, err
}

// CompleteIf completes an upload; with ifNoneMatch "*" only if its key does
// not exist: conditionally where the store can (ConditionalCompleter),
// else after a Stat just before, which leaves a moment for a race.
func CompleteIf(ctx context.Context, mu MultipartUploader, up Upload, parts []Part, ifNoneMatch string) (ObjectInfo, error) {
	if ifNoneMatch == "" {
		return mu.CompleteMultipartUpload(ctx, up, parts)
	}
	if cc, ok := mu.(ConditionalCompleter); ok {
		return cc.CompleteMultipartUploadIf(ctx, up, parts, Precondition{IfNoneMatch: ifNoneMatch})
	}
	if s, ok := mu.(Store); ok {
		_, err := s.Stat(ctx, up.Bucket, up.Key)
		switch {
		case err == nil:
			return ObjectInfo{}, &Error{Op: "complete multipart upload of", Bucket: up.Bucket, Key: up.Key, Kind: ErrPreconditionFailed,
				Message: "the object exists (If-None-Match: *)"}
		case !errors.Is(err, ErrNoSuchKey):
			return ObjectInfo{}, err
		}
	}
	return mu.CompleteMultipartUpload(ctx, up, parts)
}

// planParts cuts the sources into parts of at most partSize bytes.
func planParts(srcs []ByteRange, partSize int64) ([]ByteRange, error) {
	if partSize <= 0 {
		partSize = DefaultPartSize
	}
	if partSize < MinPartSize || partSize > MaxPartSize {
		return nil, fmt.Errorf("part size %d is outside [%d, %d]: %w", partSize, int64(MinPartSize), int64(MaxPartSize), ErrInvalid)
	}
	if len(srcs) == 0 {
		return nil, fmt.Errorf("no sources: %w", ErrInvalid)
	}
	var parts []ByteRange
	for i, src := range srcs {
		if src.Offset < 0 || src.Length <= 0 {
			return nil, fmt.Errorf("source %d (%s/%s): offset %d length %d: %w", i, src.Bucket, src.Key, src.Offset, src.Length, ErrInvalid)
		}
		if i < len(srcs)-1 && src.Length < MinPartSize {
			return nil, fmt.Errorf("source %d (%s/%s) is %d bytes; every source but the last needs at least %d: %w",
				i, src.Bucket, src.Key, src.Length, int64(MinPartSize), ErrInvalid)
		}
		if i == len(srcs)-1 {
			// The last part of all may be small: plain chunks.
			for off := int64(0); off < src.Length; off += partSize {
				p := src
				p.Offset = src.Offset + off
				p.Length = min(partSize, src.Length-off)
				parts = append(parts, p)
			}
			continue
		}
		// Inside the object every part must reach MinPartSize: cut this
		// source into n near-equal parts of at least partSize each.
		n := max(src.Length/partSize, 1)
		for (src.Length+n-1)/n > MaxPartSize {
			n++
		}
		q, r := src.Length/n, src.Length%n
		off := src.Offset
		for k := range n {
			p := src
			p.Offset, p.Length = off, q
			if k < r {
				p.Length++
			}
			off += p.Length
			parts = append(parts, p)
		}
	}
	if len(parts) > MaxParts {
		return nil, fmt.Errorf("%d parts, more than %d: use a larger part size: %w", len(parts), MaxParts, ErrInvalid)
	}
	return parts, nil
}

// replicateAttempts bounds how often Replicate starts over because the source
// changed while it was being copied.
const replicateAttempts = 50

// Replicate copies the object under key from srcBucket on src to dstBucket on
// dst (another store, or the same one), with its metadata. It copies what
// src holds when it reads, then checks that src still holds it, and starts
// over if not: when several processes read-modify-write one document on src
// and each replicates it afterwards, dst may briefly hold an older copy, but
// every replication ends only after copying what src held at its last check,
// so once they all return dst holds src's final state. Meant for small
// documents: each attempt reads the object whole.
func Replicate(ctx context.Context, src Store, srcBucket string, dst Store, dstBucket, key string) error {
	for attempt := 1; ; attempt++ {
		data, info, err := ReadAll(ctx, src, srcBucket, key)
		if err != nil {
			return fmt.Errorf("replicate: %w", err)
		}
		if err := PutBytes(ctx, dst, dstBucket, key, data, PutOptions{Metadata: info.Metadata}); err != nil {
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
			return fmt.Errorf("replicate %s/%s to %s: it changed during each of %d copies", srcBucket, key, dstBucket, replicateAttempts)
		}
	}
}

// SortedParts returns parts in number order, as S3's complete request needs.
func SortedParts(parts []Part) []Part {
	out := slices.Clone(parts)
	slices.SortFunc(out, func(a, b Part) int { return a.Number - b.Number })
	return out
}
