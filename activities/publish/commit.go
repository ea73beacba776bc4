package publish

import (
	"context"
	"errors"
	"fmt"
	"sort"
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

// Commit commits a processed version: the version document (reused files
// point at the bytes an earlier version stored), then the package document
// listing it — the edge serves a version only once both exist — then the
// reuse and search indexes. Each document the edge reads is copied to the
// mirror's metadata bucket right after it is written, in the same order, so
// the mirror has the same commit point. Every step is idempotent, so a
// retried attempt finishes what a failed one began. Materialize then copies
// reused files to this version's own keys.
func (a *Publish) Commit(ctx context.Context, in contract.PackageVersion) (*contract.CommitResult, error) {
	defer heartbeat.Every(ctx, 10*time.Second, func() any { return "committing" })()
	var p plan.Plan
	if _, err := objectstore.GetJSON(ctx, a.Primary, a.Buckets.Incoming, metadata.PlanKey(in.Name, in.Version), &p); err != nil {
		if errors.Is(err, objectstore.ErrNotFound) {
			// An attempt that finished (and cleaned staging) but whose
			// completion was lost: report what it committed.
			return a.committed(ctx, in)
		}
		return nil, err
	}
	processed, err := a.readResults(ctx, &p)
	if err != nil {
		return nil, err
	}
	asm, err := plan.Assemble(&p, processed, transform.MinifiedPath)
	if err != nil {
		errType := contract.ErrBadArchive
		if _, refused := errors.AsType[*metadata.StoredAtError](err); refused {
			errType = contract.ErrStoredAt
		}
		return nil, temporal.NewNonRetryableApplicationError(err.Error(), errType, nil)
	}
	doc, err := plan.VersionDocument(p.Name, p.Version, p.Fingerprint, asm)
	if err != nil {
		return nil, temporal.NewNonRetryableApplicationError(err.Error(), contract.ErrFileMapConflict, nil)
	}
	_, reused, _ := p.Counts()
	doc.Stats.ReusedFiles = reused
	doc.Stats.Processed = len(processed)
	doc.Stats.SkippedFiles = len(p.Skipped)
	doc.Skipped = p.NotProcessed
	doc.PublishedAt = a.now()
	var existing metadata.Version
	if _, err := objectstore.GetJSON(ctx, a.Primary, a.Buckets.Meta, metadata.VersionKey(p.Name, p.Version), &existing); err == nil {
		doc.PublishedAt = existing.PublishedAt // a retry keeps the first commit time
	}
	if err := objectstore.PutJSON(ctx, a.Primary, a.Buckets.Meta, metadata.VersionKey(p.Name, p.Version), doc); err != nil {
		return nil, err
	}
	if err := a.mirrorMeta(ctx, metadata.VersionKey(p.Name, p.Version)); err != nil {
		return nil, err
	}
	pkgDoc, err := objectstore.UpdateJSON(ctx, a.Primary, a.Buckets.Meta, metadata.PackageKey(p.Name),
		func(d *metadata.Package, _ bool) (bool, error) {
			d.AddVersion(p.Package, p.Version, a.now())
			d.MarkIncomplete(p.Version) // until its last step is done
			return true, nil
		})
	if err != nil {
		return nil, err
	}
	if err := a.mirrorMeta(ctx, metadata.PackageKey(p.Name)); err != nil {
		return nil, err
	}
	fresh := make([]plan.FileResult, 0, len(processed))
	for _, r := range processed {
		fresh = append(fresh, r)
	}
	sort.Slice(fresh, func(i, j int) bool { return fresh[i].File.Path < fresh[j].File.Path })
	if _, err := objectstore.UpdateJSON(ctx, a.Primary, a.Buckets.Meta, metadata.ReuseIndexKey(p.Name),
		func(ix *plan.ReuseIndex, _ bool) (bool, error) {
			return ix.Add(p.Version, p.Fingerprint, fresh, transform.Class), nil
		}); err != nil {
		return nil, err
	}
	if err := a.updateSearchIndex(ctx, p.Name); err != nil {
		return nil, err
	}
	if err := a.mirrorMeta(ctx, metadata.SearchShardKey(metadata.SearchShardOf(p.Name))); err != nil {
		return nil, err
	}
	if len(asm.Copies) == 0 {
		if err := a.markComplete(ctx, p.Name, p.Version); err != nil {
			return nil, err
		}
	}
	if err := objectstore.DeletePrefix(ctx, a.Primary, a.Buckets.Incoming, metadata.StagingPrefix(p.Name, p.Version)); err != nil {
		// Staging left behind costs space, not correctness: the version is committed.
		activity.GetLogger(ctx).Warn("staging cleanup failed", "error", err)
	}
	a.metrics.commit()
	return &contract.CommitResult{Files: doc.Stats.Files, Bytes: doc.Stats.Bytes, Latest: pkgDoc.Latest,
		Reused: reused, SourceFiles: doc.Stats.SourceFiles, ReuseRate: doc.Stats.ReuseRate(), Copies: len(asm.Copies)}, nil
}

// mirrorMeta copies a metadata document as the primary now holds it to the
// mirror's metadata bucket, which the edge reads while the primary is down.
// Copying the stored result, not redoing the update on the mirror, keeps
// both byte for byte the same.
func (a *Publish) mirrorMeta(ctx context.Context, key string) error {
	if err := objectstore.Replicate(ctx, a.Primary, a.Buckets.Meta, a.Mirror, a.Buckets.MirrorMeta, key); err != nil {
		return fmt.Errorf("copy metadata to the mirror: %w", err)
	}
	return nil
}

// updateSearchIndex puts the package's entry into its shard of the search
// index (metadata.PutSearchEntry).
func (a *Publish) updateSearchIndex(ctx context.Context, name string) error {
	return metadata.PutSearchEntry(ctx, a.Primary, a.Buckets.Meta, name, a.now())
}

// Materialize copies every reused file of a committed version (primary and
// mirror) to the version's own keys, so the buckets hold a complete tree per
// version for S3 clients and mirrors. The edge needs none of it: committed
// files are servable from where their bytes are stored.
func (a *Publish) Materialize(ctx context.Context, in contract.PackageVersion) (int, error) {
	var doc metadata.Version
	if _, err := objectstore.GetJSON(ctx, a.Primary, a.Buckets.Meta, metadata.VersionKey(in.Name, in.Version), &doc); err != nil {
		return 0, err
	}
	copies, err := materializations(&doc)
	if err != nil {
		return 0, err
	}
	if err := a.copyAll(ctx, copies); err != nil {
		return 0, err
	}
	return len(copies), a.markComplete(ctx, in.Name, in.Version)
}

// materializations are the copies Materialize makes; a refused storedAt
// fails the version for good (retrying cannot change its document).
func materializations(doc *metadata.Version) ([]plan.CopyOp, error) {
	copies, err := plan.Materializations(doc)
	if err != nil {
		return nil, temporal.NewNonRetryableApplicationError(err.Error(), contract.ErrStoredAt, nil)
	}
	return copies, nil
}

// markComplete records, in the package document and its mirror copy, that
// every step of a version's commit is done.
func (a *Publish) markComplete(ctx context.Context, name, version string) error {
	if _, err := objectstore.UpdateJSON(ctx, a.Primary, a.Buckets.Meta, metadata.PackageKey(name),
		func(d *metadata.Package, exists bool) (bool, error) {
			return exists && d.MarkComplete(version), nil
		}); err != nil {
		return err
	}
	return a.mirrorMeta(ctx, metadata.PackageKey(name))
}

// copyAll runs the copies on both buckets. On the primary they are
// server-side; to the mirror, objectstore.Copy copies server-side when the
// mirror is on the primary's store and streams the bytes across otherwise.
func (a *Publish) copyAll(ctx context.Context, copies []plan.CopyOp) error {
	var done atomic.Int64
	defer heartbeat.Every(ctx, 5*time.Second, func() any { return done.Load() })()
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(a.ioParallel())
	for _, c := range copies {
		g.Go(func() error {
			defer done.Add(1)
			if _, err := objectstore.Copy(gctx, a.Primary, a.Buckets.Files, c.Src, a.Primary, a.Buckets.Files, c.Dst, objectstore.CopyOptions{}); err != nil {
				return err
			}
			_, err := objectstore.Copy(gctx, a.Primary, a.Buckets.Files, c.Dst, a.Mirror, a.Buckets.Mirror, c.Dst, objectstore.CopyOptions{})
			return err
		})
	}
	return g.Wait()
}

// committed rebuilds a Commit result from the committed documents.
func (a *Publish) committed(ctx context.Context, in contract.PackageVersion) (*contract.CommitResult, error) {
	if listed, err := a.isListed(ctx, in.Name, in.Version); err != nil {
		return nil, err
	} else if !listed {
		return nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf("%s@%s: its plan is gone but the version is not committed; publish it again", in.Name, in.Version), contract.ErrBadArchive, nil)
	}
	var doc metadata.Version
	if _, err := objectstore.GetJSON(ctx, a.Primary, a.Buckets.Meta, metadata.VersionKey(in.Name, in.Version), &doc); err != nil {
		return nil, err
	}
	// What a commit stopped part way may have left undone, redone: each
	// step is idempotent.
	for _, key := range []string{metadata.VersionKey(in.Name, in.Version), metadata.PackageKey(in.Name)} {
		if err := a.mirrorMeta(ctx, key); err != nil {
			return nil, err
		}
	}
	if err := a.updateSearchIndex(ctx, in.Name); err != nil {
		return nil, err
	}
	if err := a.mirrorMeta(ctx, metadata.SearchShardKey(metadata.SearchShardOf(in.Name))); err != nil {
		return nil, err
	}
	copies, err := materializations(&doc)
	if err != nil {
		return nil, err
	}
	if len(copies) == 0 {
		if err := a.markComplete(ctx, in.Name, in.Version); err != nil {
			return nil, err
		}
	}
	var pkg metadata.Package
	if _, err := objectstore.GetJSON(ctx, a.Primary, a.Buckets.Meta, metadata.PackageKey(in.Name), &pkg); err != nil {
		return nil, err
	}
	a.metrics.commit()
	return &contract.CommitResult{Files: doc.Stats.Files, Bytes: doc.Stats.Bytes, Latest: pkg.Latest, Reused: doc.Stats.ReusedFiles,
		SourceFiles: doc.Stats.SourceFiles, ReuseRate: doc.Stats.ReuseRate(), Copies: len(copies)}, nil
}

func (a *Publish) readResults(ctx context.Context, p *plan.Plan) (map[string]plan.FileResult, error) {
	perBatch := make([][]plan.FileResult, p.Batches)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(a.ioParallel())
	for b := range p.Batches {
		g.Go(func() error {
			_, err := objectstore.GetJSON(gctx, a.Primary, a.Buckets.Incoming, metadata.ResultKey(p.Name, p.Version, b), &perBatch[b])
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	out := map[string]plan.FileResult{}
	for _, rs := range perBatch {
		for _, r := range rs {
			out[r.File.Path] = r
		}
	}
	return out, nil
}

// FindBatchResults reports which of the batches wrote their results: the
// durable proof that a batch finished, for a version that missed its report.
func (a *Publish) FindBatchResults(ctx context.Context, in contract.BatchResultsInput) ([]contract.FoundBatch, error) {
	var found []contract.FoundBatch
	for _, b := range in.Batches {
		var results []plan.FileResult
		_, err := objectstore.GetJSON(ctx, a.Primary, a.Buckets.Incoming, metadata.ResultKey(in.Name, in.Version, b), &results)
		switch {
		case err == nil:
			found = append(found, contract.FoundBatch{Batch: b, Files: len(results)})
		case !errors.Is(err, objectstore.ErrNotFound):
			return nil, err
		}
		activity.RecordHeartbeat(ctx, b)
	}
	return found, nil
}
