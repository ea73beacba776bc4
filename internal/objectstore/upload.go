package objectstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	"golang.org/x/sync/errgroup"
)

// UploadPartSize is the part size of UploadFile and UploadStream when none is
// given: large enough that a 1 GiB file is 64 parts, small enough that
// UploadStream's one buffer stays small.
const UploadPartSize = 16 << 20

// UploadFile writes size bytes of r (a file, say) under key without holding
// them: one Put up to partSize (0: UploadPartSize), else a multipart upload
// (MultipartUploader) whose parts are sections of r, two sent at a time. A
// failed upload is aborted. A store without multipart gets one streamed
// Put.
func UploadFile(ctx context.Context, s Store, bucket, key string, r io.ReaderAt, size int64, opts PutOptions, partSize int64) (ObjectInfo, error) {
	partSize = uploadPartSize(partSize, size)
	mu, ok := s.(MultipartUploader)
	if !ok || size <= partSize {
		return s.Put(ctx, bucket, key, io.NewSectionReader(r, 0, size), size, opts)
	}
	up, err := mu.CreateMultipartUpload(ctx, bucket, key, opts)
	if err != nil {
		return ObjectInfo{}, err
	}
	n := int((size + partSize - 1) / partSize)
	parts := make([]Part, n)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(2)
	for i := range n {
		g.Go(func() error {
			off := int64(i) * partSize
			length := min(partSize, size-off)
			p, err := mu.UploadPart(gctx, up, i+1, io.NewSectionReader(r, off, length), length)
			parts[i] = p
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return ObjectInfo{}, abortUpload(ctx, mu, up, err)
	}
	info, err := mu.CompleteMultipartUpload(ctx, up, parts)
	if err != nil {
		return ObjectInfo{}, abortUpload(ctx, mu, up, err)
	}
	return info, nil
}

// UploadStream writes everything r yields under key, its size unknown
// beforehand, holding one part at a time: what fits in one part (partSize;
// 0: UploadPartSize) is one Put, more is a multipart upload of parts read
// one after another into the same buffer. A failed upload is aborted. A
// store without multipart gets one Put of unknown size.
func UploadStream(ctx context.Context, s Store, bucket, key string, r io.Reader, opts PutOptions, partSize int64) (ObjectInfo, error) {
	partSize = uploadPartSize(partSize, 0)
	mu, ok := s.(MultipartUploader)
	if !ok {
		return s.Put(ctx, bucket, key, r, -1, opts)
	}
	buf := make([]byte, partSize)
	k, err := io.ReadFull(r, buf)
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return s.Put(ctx, bucket, key, bytes.NewReader(buf[:k]), int64(k), opts)
	}
	if err != nil {
		return ObjectInfo{}, err
	}
	up, err := mu.CreateMultipartUpload(ctx, bucket, key, opts)
	if err != nil {
		return ObjectInfo{}, err
	}
	var parts []Part
	for n := 1; ; n++ {
		if n > MaxParts {
			return ObjectInfo{}, abortUpload(ctx, mu, up, fmt.Errorf("upload %s/%s: more than %d parts of %d bytes", bucket, key, MaxParts, partSize))
		}
		p, err := mu.UploadPart(ctx, up, n, bytes.NewReader(buf[:k]), int64(k))
		if err != nil {
			return ObjectInfo{}, abortUpload(ctx, mu, up, err)
		}
		parts = append(parts, p)
		k, err = io.ReadFull(r, buf)
		if err == io.EOF {
			break
		}
		if err != nil && err != io.ErrUnexpectedEOF {
			return ObjectInfo{}, abortUpload(ctx, mu, up, err)
		}
	}
	info, err := mu.CompleteMultipartUpload(ctx, up, parts)
	if err != nil {
		return ObjectInfo{}, abortUpload(ctx, mu, up, err)
	}
	return info, nil
}

// uploadPartSize is the part size to use: the one given (0: UploadPartSize),
// at least MinPartSize, and large enough that size fits in MaxParts.
func uploadPartSize(partSize, size int64) int64 {
	if partSize <= 0 {
		partSize = UploadPartSize
	}
	partSize = max(partSize, MinPartSize)
	if need := (size + MaxParts - 1) / MaxParts; need > partSize {
		partSize = need
	}
	return min(partSize, MaxPartSize)
}

// abortUpload discards a failed upload's parts; err is what failed.
func abortUpload(ctx context.Context, mu MultipartUploader, up Upload, err error) error {
	if abortErr := mu.AbortMultipartUpload(context.WithoutCancel(ctx), up); abortErr != nil {
		return errors.Join(err, fmt.Errorf("abort the upload of %s/%s: %w", up.Bucket, up.Key, abortErr))
	}
	return err
}
