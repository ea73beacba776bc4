package publish

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/edgeflow/edgeflow/internal/objectstore"
	"github.com/edgeflow/edgeflow/internal/publish/metadata"
	"github.com/edgeflow/edgeflow/internal/publish/plan"
	"github.com/edgeflow/edgeflow/internal/publish/transform"
	"github.com/edgeflow/edgeflow/workflows/publish/contract"
)

// compressStreamed processes the one file of a streamed batch (over
// plan.OwnBatchBytes) as it reads it from the batch: hashed and compressed
// in one pass (transform.Stream), its bytes and twins kept on disk, then
// each stored by multipart upload from the disk. The file is never held
// whole in memory.
func (c *Compress) compressStreamed(ctx context.Context, in contract.BatchInput, opts transform.Options, f *plan.BatchFile, body io.Reader, progress func(int64)) (plan.FileResult, contract.BatchSummary, error) {
	original, err := os.CreateTemp(c.TempDir, "original-*")
	if err != nil {
		return plan.FileResult{}, contract.BatchSummary{}, err
	}
	defer func() {
		_ = original.Close()
		_ = os.Remove(original.Name()) // scratch space
	}()
	var out transform.Streamed
	var perr error
	var cpu time.Duration
	if err := c.CPU.Do(ctx, func() {
		start := time.Now()
		out, perr = transform.Stream(ctx, f.Path, io.TeeReader(body, original), f.Size, opts, c.TempDir, progress)
		cpu = time.Since(start)
	}); err != nil {
		return plan.FileResult{}, contract.BatchSummary{}, err
	}
	defer out.Remove()
	var panicked *transform.PanicError
	if errors.As(perr, &panicked) {
		return plan.FileResult{}, contract.BatchSummary{}, c.panicked(ctx, in, panicked)
	}
	if perr != nil {
		return plan.FileResult{}, contract.BatchSummary{}, fmt.Errorf("%s: %w", f.Path, perr)
	}
	meta := metadata.File{Path: out.Path, Size: out.Size, SRI: out.SRI, ContentType: out.ContentType}
	key := metadata.FileKey(in.Name, in.Version, f.Path)
	uploads := []struct{ key, file string }{{key, original.Name()}}
	// A file the release ships holds a twin's key: it wins.
	if out.BrotliFile != "" && !slices.Contains(f.Blocked, f.Path+metadata.BrotliSuffix) {
		meta.BrotliSize, meta.BrotliLevel = out.BrotliSize, out.Levels.Brotli
		uploads = append(uploads, struct{ key, file string }{key + metadata.BrotliSuffix, out.BrotliFile})
	}
	if out.GzipFile != "" && !slices.Contains(f.Blocked, f.Path+metadata.GzipSuffix) {
		meta.GzipSize, meta.GzipLevel = out.GzipSize, out.Levels.Gzip
		uploads = append(uploads, struct{ key, file string }{key + metadata.GzipSuffix, out.GzipFile})
	}
	g, gctx := errgroup.WithContext(ctx)
	for _, u := range uploads {
		for _, dst := range []struct {
			store  objectstore.Store
			bucket string
		}{{c.Primary, c.Buckets.Files}, {c.Mirror, c.Buckets.Mirror}} {
			g.Go(func() error { return uploadFile(gctx, dst.store, dst.bucket, u.key, u.file, out.ContentType) })
		}
	}
	if err := g.Wait(); err != nil {
		return plan.FileResult{}, contract.BatchSummary{}, err
	}
	if m := c.metrics; m != nil {
		m.files.Inc()
		if meta.BrotliSize > 0 {
			m.observe("br", int(meta.Size), int(meta.BrotliSize))
		}
		if meta.GzipSize > 0 {
			m.observe("gzip", int(meta.Size), int(meta.GzipSize))
		}
	}
	summary := contract.BatchSummary{Files: 1, BytesIn: out.Size, BytesOut: meta.Size + meta.BrotliSize + meta.GzipSize, CPUMillis: cpu.Milliseconds()}
	return plan.FileResult{File: meta, TwinWanted: f.TwinWanted}, summary, nil
}

// uploadFile stores the file at path under key by multipart upload, read
// from the disk part by part.
func uploadFile(ctx context.Context, s objectstore.Store, bucket, key, path, contentType string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }() // read-only
	st, err := f.Stat()
	if err != nil {
		return err
	}
	_, err = objectstore.UploadFile(ctx, s, bucket, key, f, st.Size(), objectstore.PutOptions{Metadata: objectstore.Metadata{ContentType: contentType}}, 0)
	return err
}

// bodyError marks an error reading a batch object from its store, which a
// retry may not meet, from an error in the batch's content, which it will.
type bodyError struct{ err error }

func (e *bodyError) Error() string { return "reading the batch: " + e.err.Error() }
func (e *bodyError) Unwrap() error { return e.err }

// markedBody marks every read error but EOF as a bodyError.
type markedBody struct{ r io.Reader }

func (m markedBody) Read(p []byte) (int, error) {
	n, err := m.r.Read(p)
	if err != nil && err != io.EOF {
		err = &bodyError{err}
	}
	return n, err
}
