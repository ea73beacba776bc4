package migrate

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"io"

	"golang.org/x/sync/errgroup"

	"github.com/edgeflow/edgeflow/internal/objectstore"
)

// errSourceChanged: the source object changed while its parts were read.
var errSourceChanged = fmt.Errorf("the source object changed during the copy: %w", objectstore.ErrTransient)

// copy writes one object to the destination with its metadata, the
// cheapest way the stores allow: server side on one store (composed from
// part copies above CopyCutoff), as parallel ranged parts between stores
// above MultipartCutoff, and otherwise streamed in one request. Nothing is
// held whole in memory.
// The note it returns says what it chose that the options did not ask for
// (a larger part size), for the object's reason.
// A first attempt of a small object may go in a batch (see batcher); a
// retry goes alone.
func (t *transfer) copy(ctx context.Context, src Object, dk string, first bool) (note string, err error) {
	s, o := t.sides, t.opts
	if c, ok := s.Dest.(objectstore.Copier); ok && c.CanCopyFrom(Unlimited(s.Source)) {
		partSize, raised, err := PartSizeFor(src.Size, o.PartSize)
		if err != nil {
			return "", err
		}
		opts := objectstore.CopyOptions{Size: src.Size, SingleCopyLimit: o.CopyCutoff, PartSize: partSize, Parallel: o.PartConcurrency}
		if o.Policy == OverwriteNever {
			// A composed copy completes only if the key is still free; one
			// copy request cannot say so, so the key is checked just before.
			opts.IfNoneMatch = "*"
			if src.Size <= o.CopyCutoff {
				if err := t.stillFree(ctx, dk); err != nil {
					return "", err
				}
			}
		}
		// The source store reads the bytes of a server-side copy itself:
		// they count against its limits as a read would, one request per
		// copy request (a composed copy: a look at the source, and a part
		// copy per part).
		requests := 1
		if src.Size > o.CopyCutoff {
			requests = 1 + int((src.Size+partSize-1)/partSize)
		}
		if err := ChargeServerCopy(ctx, s.Source, src.Size, requests); err != nil {
			return "", err
		}
		_, err = objectstore.Copy(ctx, Unlimited(s.Source), s.SourceBucket, src.Key, s.Dest, s.DestBucket, dk, opts)
		if raised && src.Size > o.CopyCutoff {
			note = partSizeNote(partSize, o.PartSize)
		}
		return note, t.appeared(ctx, dk, err)
	}
	if src.Size > o.MultipartCutoff {
		mu, ok1 := s.Dest.(objectstore.MultipartUploader)
		rr, ok2 := s.Source.(objectstore.RangeReader)
		if ok1 && ok2 {
			return t.copyParts(ctx, mu, rr, src, dk)
		}
	}
	return "", t.copyWhole(ctx, src, dk, first)
}

// errAppeared: overwrite=never found the key taken by the time of the write.
var errAppeared = errSkipped{"appeared at the destination during the copy; overwrite=never"}

// stillFree is the check just before a write that cannot be conditional.
func (t *transfer) stillFree(ctx context.Context, dk string) error {
	_, err := t.sides.Dest.Stat(ctx, t.sides.DestBucket, dk)
	switch {
	case err == nil:
		return errAppeared
	case errors.Is(err, objectstore.ErrNoSuchKey):
		return nil
	}
	return err
}

// appeared turns a refused conditional write into a skip. A precondition
// also guards the source (its ETag while parts are read), so the key is
// looked at: only an object there now means the destination refused.
func (t *transfer) appeared(ctx context.Context, dk string, err error) error {
	if t.opts.Policy != OverwriteNever || !errors.Is(err, objectstore.ErrPreconditionFailed) {
		return err
	}
	if free := t.stillFree(ctx, dk); free != nil {
		return free
	}
	return err
}

// partSizeNote says a part size was raised to fit S3's 10,000 parts.
func partSizeNote(used, asked int64) string {
	return fmt.Sprintf("part size raised from %s to %s: S3 allows at most %d parts", HumanBytes(float64(asked)), HumanBytes(float64(used)), objectstore.MaxParts)
}

// copyWhole streams an object in one request.
func (t *transfer) copyWhole(ctx context.Context, src Object, dk string, first bool) error {
	s, o := t.sides, t.opts
	body, info, err := s.Source.Get(ReadingSize(ctx, src.Size), s.SourceBucket, src.Key)
	if err != nil {
		return err
	}
	defer body.Close()
	put := objectstore.PutOptions{Metadata: info.Metadata}
	if first && t.batch.batchable(info.Size, dk, o.Policy) {
		return t.copyBatched(ctx, body, src.Key, info, dk, put)
	}
	if cw, ok := s.Dest.(objectstore.ConditionalWriter); ok && o.Policy == OverwriteNever {
		// Never overwrite, even what appeared since the listing.
		_, err = cw.PutIf(ctx, s.DestBucket, dk, body, info.Size, put, objectstore.Precondition{IfNoneMatch: "*"})
		if errors.Is(err, objectstore.ErrPreconditionFailed) {
			return errAppeared
		}
		return err
	}
	_, err = s.Dest.Put(ctx, s.DestBucket, dk, body, info.Size, put)
	return err
}

// copyBatched reads a small object whole and writes it in a batch, or on
// its own if the batch was not written.
func (t *transfer) copyBatched(ctx context.Context, body io.Reader, key string, info objectstore.ObjectInfo, dk string, put objectstore.PutOptions) error {
	data := make([]byte, info.Size)
	if _, err := io.ReadFull(body, data); err != nil {
		return fmt.Errorf("reading %s from the source: %w: %w", key, objectstore.ErrTransient, err)
	}
	// Waiting for its batch, the object makes no request: its slot goes to
	// another object's read meanwhile (Transfer runs three times as many
	// workers as slots when it batches).
	t.opts.Controller.StepAside()
	err := t.batch.put(ctx, objectstore.BatchEntry{Key: dk, Data: data, Metadata: info.Metadata})
	t.opts.Controller.Rejoin(ctx, t.opts.Priority)
	switch {
	case err == nil || ctx.Err() != nil:
		return err
	case !errors.Is(err, errNotBatched):
		return err // the batch failed: a retry looks before it writes
	}
	_, err = t.sides.Dest.Put(ctx, t.sides.DestBucket, dk, bytes.NewReader(data), info.Size, put)
	return err
}

// copyParts streams a large object between stores as a multipart upload
// whose parts are read as ranges and sent PartConcurrency at a time. Every
// range must come from the same version of the source (same ETag); a
// failed upload is aborted so its parts do not linger.
func (t *transfer) copyParts(ctx context.Context, mu objectstore.MultipartUploader, rr objectstore.RangeReader, src Object, dk string) (note string, err error) {
	s, o := t.sides, t.opts
	partSize, _, err := PartSizeFor(src.Size, o.PartSize)
	if err != nil {
		return "", err
	}
	first, info, err := rr.GetRange(ctx, s.SourceBucket, src.Key, 0, partSize)
	if err != nil {
		return "", err
	}
	size := info.Size
	fits, raised, err := PartSizeFor(size, o.PartSize)
	if err != nil {
		first.Close()
		return "", err
	}
	if fits != partSize {
		// The object changed size since it was listed: read part 1 again.
		first.Close()
		partSize = fits
		if first, info, err = rr.GetRange(ctx, s.SourceBucket, src.Key, 0, partSize); err != nil {
			return "", err
		}
	}
	if raised {
		note = partSizeNote(partSize, o.PartSize)
	}
	up, err := mu.CreateMultipartUpload(ctx, s.DestBucket, dk, objectstore.PutOptions{Metadata: info.Metadata})
	if err != nil {
		first.Close()
		return "", err
	}
	defer func() {
		if err != nil {
			// The upload's parts cost storage until aborted, even if ctx ended.
			_ = mu.AbortMultipartUpload(context.WithoutCancel(ctx), up)
		}
	}()
	n := int((size + partSize - 1) / partSize)
	// Part 1's body is read, and closed, by the first goroutine.
	parts := make([]objectstore.Part, n)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(o.PartConcurrency)
	for i := range n {
		off := int64(i) * partSize
		length := min(partSize, size-off)
		g.Go(func() error {
			body := first
			if i > 0 {
				var part objectstore.ObjectInfo
				var err error
				if body, part, err = rr.GetRange(gctx, s.SourceBucket, src.Key, off, length); err != nil {
					return err
				}
				if part.ETag != info.ETag {
					body.Close()
					return errSourceChanged
				}
			}
			defer body.Close()
			p, err := mu.UploadPart(gctx, up, i+1, body, length)
			parts[i] = p
			return err
		})
	}
	if err = g.Wait(); err != nil {
		return "", err
	}
	cond := ""
	if o.Policy == OverwriteNever {
		cond = "*" // never overwrite what appeared while the parts were sent
	}
	_, err = objectstore.CompleteIf(ctx, mu, up, parts, cond)
	if err = t.appeared(ctx, dk, err); err != nil {
		return "", err
	}
	return note, nil
}

// checksums computes the MD5s Decide asked for: of each side whose ETag is
// not already one.
func (t *transfer) checksums(ctx context.Context, src Object, dk string, dst Object) (srcMD5, dstMD5 string, err error) {
	s := t.sides
	if !IsMD5ETag(src.ETag) {
		if srcMD5, err = MD5Of(ReadingSize(ctx, src.Size), s.Source, s.SourceBucket, src.Key); err != nil {
			return "", "", err
		}
	}
	if !IsMD5ETag(dst.ETag) {
		if dstMD5, err = MD5Of(ctx, s.Dest, s.DestBucket, dk); err != nil {
			return "", "", err
		}
	}
	return srcMD5, dstMD5, nil
}

// verify compares a copy with its source: size, then ETags where both are
// MD5s, else MD5s computed from the bytes of the sides that need them.
func (t *transfer) verify(ctx context.Context, src Object, dk string) (verdict, detail string, err error) {
	s := t.sides
	info, err := s.Dest.Stat(ctx, s.DestBucket, dk)
	if errors.Is(err, objectstore.ErrNoSuchKey) {
		return VerifyMismatch, "missing at the destination", nil
	}
	if err != nil {
		return "", "", err
	}
	dst := objectOf(info)
	plan, cmp := PlanVerify(src, dst)
	switch cmp {
	case Same:
		return VerifyMatch, "", nil
	case Different:
		return VerifyMismatch, fmt.Sprintf("%d bytes at the source, %d at the destination", src.Size, dst.Size), nil
	}
	srcSum, dstSum := NormalizeETag(src.ETag), NormalizeETag(dst.ETag)
	if plan.SourceMD5 {
		if srcSum, err = MD5Of(ReadingSize(ctx, src.Size), s.Source, s.SourceBucket, src.Key); err != nil {
			return "", "", err
		}
	}
	if plan.DestMD5 {
		if dstSum, err = MD5Of(ctx, s.Dest, s.DestBucket, dk); err != nil {
			return "", "", err
		}
	}
	if srcSum == dstSum {
		return VerifyMatch, "", nil
	}
	return VerifyMismatch, fmt.Sprintf("MD5 %s at the source, %s at the destination", srcSum, dstSum), nil
}

// MD5Of reads an object and returns the hex MD5 of its bytes.
func MD5Of(ctx context.Context, s objectstore.Store, bucket, key string) (string, error) {
	body, _, err := s.Get(ctx, bucket, key)
	if err != nil {
		return "", err
	}
	defer body.Close()
	h := md5.New()
	if _, err := io.Copy(h, body); err != nil {
		return "", fmt.Errorf("read %s/%s: %w", bucket, key, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
