package publish

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"golang.org/x/sync/errgroup"

	"github.com/edgeflow/edgeflow/internal/heartbeat"
	"github.com/edgeflow/edgeflow/internal/objectstore"
	"github.com/edgeflow/edgeflow/internal/publish/metadata"
	"github.com/edgeflow/edgeflow/internal/publish/plan"
	"github.com/edgeflow/edgeflow/internal/publish/transform"
	"github.com/edgeflow/edgeflow/workflows/publish/contract"
)

// CompressBatch (registered as "ProcessBatch") minifies, compresses and
// hashes every file of a staged batch, writes each output to the primary and
// mirror buckets at its final key, and records the results. Rerunning it
// rewrites the same bytes: outputs are deterministic.
func (c *Compress) CompressBatch(ctx context.Context, in contract.BatchInput) (*contract.BatchSummary, error) {
	opts := transform.Options(in.Options)
	if fp := transform.Fingerprint(opts); in.Fingerprint != "" && fp != in.Fingerprint {
		// A rolling deploy: outputs recorded under the plan's fingerprint must
		// come from those tools. Retryable, so a matching worker takes it.
		return nil, fmt.Errorf("this compress worker processes as %q, the plan assumed %q", fp, in.Fingerprint)
	}
	body, _, err := c.Primary.Get(ctx, c.Buckets.Incoming, metadata.BatchKey(in.Name, in.Version, in.Batch))
	if err != nil {
		return nil, err
	}
	defer func() { _ = body.Close() }() // read-only
	var done atomic.Int64
	defer heartbeat.Every(ctx, 5*time.Second, func() any { return done.Load() })()
	batch, err := plan.OpenBatch(markedBody{body})
	if err != nil {
		return nil, batchError(err)
	}
	if len(batch.Files) == 1 && batch.Files[0].Streamed {
		// One file too large to hold: processed as it streams in.
		f, r, err := batch.Next()
		if err != nil {
			return nil, batchError(err)
		}
		result, summary, err := c.compressStreamed(ctx, in, opts, f, r, func(n int64) { done.Store(n) })
		if err != nil {
			return nil, err
		}
		if err := objectstore.PutJSON(ctx, c.Primary, c.Buckets.Incoming, metadata.ResultKey(in.Name, in.Version, in.Batch), []plan.FileResult{result}); err != nil {
			return nil, err
		}
		return &summary, nil
	}
	files, err := batch.ReadAll()
	if err != nil {
		return nil, batchError(err)
	}
	_ = body.Close() // every file is in memory: the connection can go

	results := make([]plan.FileResult, len(files))
	var summary contract.BatchSummary
	var mu sync.Mutex
	var cpu atomic.Int64
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(c.ioParallel())
	for i, f := range files {
		g.Go(func() error {
			var outs []transform.Output
			var warnings []string
			var perr error
			if err := c.CPU.Do(gctx, func() {
				start := time.Now()
				outs, warnings, perr = c.process(f.Path, f.Data, opts, func(string) bool { return !f.TwinWanted })
				cpu.Add(time.Since(start).Milliseconds())
			}); err != nil {
				return err
			}
			for i := range outs {
				// A file the release ships holds this key: it wins.
				if slices.Contains(f.Blocked, outs[i].Path+metadata.BrotliSuffix) {
					outs[i].Brotli = nil
				}
				if slices.Contains(f.Blocked, outs[i].Path+metadata.GzipSuffix) {
					outs[i].Gzip = nil
				}
			}
			var panicked *transform.PanicError
			if errors.As(perr, &panicked) {
				return c.panicked(ctx, in, panicked)
			}
			if perr != nil {
				return fmt.Errorf("%s: %w", f.Path, perr)
			}
			r := plan.FileResult{TwinWanted: f.TwinWanted}
			if len(warnings) > 0 {
				r.Warning = strings.Join(warnings, "; ")
				activity.GetLogger(ctx).Warn("minify failed; publishing the original", "package", in.Name, "version", in.Version, "reason", r.Warning)
			}
			var out int64
			for _, o := range outs {
				meta := metadata.File{Path: o.Path, Size: int64(len(o.Data)), SRI: o.SRI, ContentType: o.ContentType,
					BrotliSize: int64(len(o.Brotli)), GzipSize: int64(len(o.Gzip)), MinifiedFrom: o.MinifiedFrom}
				if o.Brotli != nil {
					meta.BrotliLevel = o.Levels.Brotli
				}
				if o.Gzip != nil {
					meta.GzipLevel = o.Levels.Gzip
				}
				if err := c.writeOutput(gctx, in.Name, in.Version, o); err != nil {
					return err
				}
				out += meta.Size + meta.BrotliSize + meta.GzipSize
				if o.MinifiedFrom == "" {
					r.File = meta
				} else {
					twin := meta
					r.Twin = &twin
				}
			}
			results[i] = r
			done.Add(1)
			c.metrics.file(f.Data, outs)
			mu.Lock()
			defer mu.Unlock()
			summary.Files++
			summary.BytesIn += int64(len(f.Data))
			summary.BytesOut += out
			if r.Twin != nil {
				summary.Twins++
			}
			if r.Warning != "" {
				summary.MinifyFailed++
				if len(summary.Warnings) < 3 {
					summary.Warnings = append(summary.Warnings, f.Path+": "+r.Warning)
				}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	summary.CPUMillis = cpu.Load()
	if err := objectstore.PutJSON(ctx, c.Primary, c.Buckets.Incoming, metadata.ResultKey(in.Name, in.Version, in.Batch), results); err != nil {
		return nil, err
	}
	return &summary, nil
}

// batchError classifies an error met reading a batch: one from the
// store's stream is retried, one in the batch's content fails for good.
func batchError(err error) error {
	if _, read := errors.AsType[*bodyError](err); read {
		return err
	}
	return temporal.NewNonRetryableApplicationError(err.Error(), contract.ErrBadArchive, nil)
}

// process is transform.File, or the test seam Process.
func (c *Compress) process(path string, data []byte, opts transform.Options, shipped func(string) bool) ([]transform.Output, []string, error) {
	if c.Process != nil {
		return c.Process(path, data, opts, shipped)
	}
	return transform.File(path, data, opts, shipped)
}

// panicked handles a file whose processing panicked (transform recovers
// it, so the worker process lives on). The first time, the batch fails and
// is retried: the panic may come from this machine. If the same batch
// panics again, the release triggers a bug in a minifier or compressor:
// the version is rejected for good, with a marker, and fails.
func (c *Compress) panicked(ctx context.Context, in contract.BatchInput, p *transform.PanicError) error {
	activity.GetLogger(ctx).Error("processing panicked", "package", in.Name, "version", in.Version, "batch", in.Batch,
		"path", p.Path, "panic", p.Value, "stack", p.Stack)
	key := metadata.PanicKey(in.Name, in.Version, in.Batch)
	_, err := c.Primary.Stat(ctx, c.Buckets.Incoming, key)
	switch {
	case errors.Is(err, objectstore.ErrNotFound):
		if err := objectstore.PutJSON(ctx, c.Primary, c.Buckets.Incoming, key, map[string]string{"path": p.Path, "panic": p.Value}); err != nil {
			return err
		}
		return fmt.Errorf("%w (the batch is retried once)", p)
	case err != nil:
		return err
	}
	reason := fmt.Sprintf("%s@%s: %v, twice", in.Name, in.Version, p)
	marker := metadata.Rejection{Name: in.Name, Version: in.Version, Type: contract.ErrProcessing, Reason: reason, At: time.Now().UTC()}
	if err := objectstore.PutJSON(ctx, c.Primary, c.Buckets.Meta, metadata.RejectedKey(in.Name, in.Version), marker); err != nil {
		return err
	}
	return temporal.NewNonRetryableApplicationError(reason, contract.ErrProcessing, nil)
}

// writeOutput stores one output and its precompressed representations in the
// primary and the mirror bucket, all at once.
func (c *Compress) writeOutput(ctx context.Context, name, version string, o transform.Output) error {
	key := metadata.FileKey(name, version, o.Path)
	type object struct {
		key  string
		data []byte
	}
	objects := []object{{key, o.Data}}
	if o.Brotli != nil {
		objects = append(objects, object{key + metadata.BrotliSuffix, o.Brotli})
	}
	if o.Gzip != nil {
		objects = append(objects, object{key + metadata.GzipSuffix, o.Gzip})
	}
	g, gctx := errgroup.WithContext(ctx)
	for _, ob := range objects {
		g.Go(func() error { return putBytes(gctx, c.Primary, c.Buckets.Files, ob.key, ob.data, o.ContentType) })
		g.Go(func() error { return putBytes(gctx, c.Mirror, c.Buckets.Mirror, ob.key, ob.data, o.ContentType) })
	}
	return g.Wait()
}
