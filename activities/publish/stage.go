package publish

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"golang.org/x/sync/errgroup"

	"github.com/edgeflow/edgeflow/internal/objectstore"
	"github.com/edgeflow/edgeflow/internal/publish/catalog"
	"github.com/edgeflow/edgeflow/internal/publish/fileset"
	"github.com/edgeflow/edgeflow/internal/publish/metadata"
	"github.com/edgeflow/edgeflow/internal/publish/plan"
	"github.com/edgeflow/edgeflow/internal/publish/registry"
	"github.com/edgeflow/edgeflow/internal/publish/release"
	"github.com/edgeflow/edgeflow/internal/publish/tarx"
	"github.com/edgeflow/edgeflow/internal/publish/transform"
	"github.com/edgeflow/edgeflow/workflows/publish/contract"
)

// StageVersion prepares a version for processing (registered as
// "Download"): it fetches the archive and verifies its digest, keeps the
// original, extracts it safely, selects files by the fileMap, hashes them,
// plans which to process and which to reuse, and stages the files to process
// as batches in the bucket. The plan stays in the bucket; the summary is
// returned. A release that can never publish is rejected with its reason.
func (a *Publish) StageVersion(ctx context.Context, in contract.VersionRef) (_ *contract.PlanSummary, err error) {
	// Extracting, hashing and staging a 100,000-file release takes minutes:
	// each step heartbeats as it advances, and a step that stalls ends the
	// attempt (see progressBeat).
	prog, ctx, stop := startProgress(ctx, a.StallTimeout)
	defer stop()
	defer func() {
		// Say that the attempt stalled, whichever step noticed the cancel.
		if cause := context.Cause(ctx); err != nil && errors.Is(cause, errNoProgress) && !errors.Is(err, errNoProgress) {
			err = fmt.Errorf("%w: %w", cause, err)
		}
	}()
	prog.advance("starting", 0)
	pkg, err := a.loadPackage(in.PackageRef)
	if err != nil {
		return nil, err
	}
	// Published means listed in the package document (the commit point), not
	// merely a version document: a commit that failed between the two runs
	// again, and finishes.
	switch listed, incomplete, err := a.listing(ctx, pkg.Name, in.Version); {
	case err != nil:
		return nil, err
	case listed && incomplete:
		// Committed, but a later step never finished: finish it.
		return &contract.PlanSummary{AlreadyPublished: true, Repair: true}, nil
	case listed:
		return &contract.PlanSummary{AlreadyPublished: true}, nil
	}
	dist, err := a.resolveDist(ctx, pkg, in)
	if err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp(a.TempDir, "publish-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)

	archive := filepath.Join(tmp, "archive.tgz")
	if err := a.fetchVerified(ctx, prog, pkg, in.Version, dist, archive); err != nil {
		return nil, err
	}
	if err := a.putFile(ctx, prog, a.Buckets.Incoming, metadata.TarballKey(pkg.Name, in.Version), archive, "application/gzip"); err != nil {
		return nil, err
	}
	root := filepath.Join(tmp, "files")
	extracted, err := a.extract(ctx, prog, pkg, in.Version, archive, root)
	if err != nil {
		return nil, err
	}
	files, sourceOf, err := a.selectFiles(ctx, prog, pkg, in.Version, extracted, root)
	var skipped *errSkip
	if errors.As(err, &skipped) {
		activity.GetLogger(ctx).Info("version skipped", "package", pkg.Name, "version", in.Version, "reason", skipped.reason)
		return &contract.PlanSummary{SkipReason: skipped.reason}, nil
	}
	if err != nil {
		return nil, err
	}

	opts := a.processingOptions(pkg)
	fingerprint := transform.Fingerprint(opts)
	var reuse plan.ReuseIndex
	if _, err := objectstore.GetJSON(ctx, a.Primary, a.Buckets.Meta, metadata.ReuseIndexKey(pkg.Name), &reuse); err != nil && !errors.Is(err, objectstore.ErrNotFound) {
		return nil, err
	}
	limits := a.Batch
	if limits.MaxBytes <= 0 || limits.MaxFiles <= 0 {
		limits = plan.DefaultBatchLimits
	}
	if l := in.BatchLimits; l != nil && l.MaxBytes > 0 && l.MaxFiles > 0 {
		limits = plan.BatchLimits(*l)
	}
	shipped := make(map[string]bool, len(files))
	sizes := make(map[string]int64, len(files))
	for _, f := range files {
		shipped[f.Path], sizes[f.Path] = true, f.Size
	}
	wantsTwin := func(p string) bool { return opts.WantsTwin(p, sizes[p], shipped) }
	p := plan.BuildPlan(pkg.Name, in.Version, fingerprint, files, &reuse, wantsTwin, transform.Class, limits)
	p.Package = pkg
	p.NotProcessed = notProcessed(opts, files, shipped)
	for i, s := range extracted.Skipped {
		p.Skipped = append(p.Skipped, plan.Skip{Path: s.Path, Reason: s.Reason})
		if i < 20 {
			activity.GetLogger(ctx).Warn("file skipped", "package", pkg.Name, "version", in.Version, "path", s.Path, "reason", s.Reason)
		}
	}
	if err := a.stageBatches(ctx, prog, p, sourceOf); err != nil {
		return nil, err
	}
	if err := objectstore.PutJSON(ctx, a.Primary, a.Buckets.Incoming, metadata.PlanKey(pkg.Name, in.Version), p); err != nil {
		return nil, err
	}
	toProcess, reused, same := p.Counts()
	a.metrics.planned(toProcess, reused)
	res := &contract.PlanSummary{Batches: p.Batches, SourceFiles: len(files), ToProcess: toProcess, Reused: reused,
		SameContent: same, Skipped: len(p.Skipped), Options: contract.ProcessingOptions(opts), Fingerprint: fingerprint}
	for _, f := range files {
		res.Bytes += f.Size
	}
	activity.GetLogger(ctx).Info("planned", "package", pkg.Name, "version", in.Version, "files", len(files),
		"process", toProcess, "reuse", reused, "batches", p.Batches, "skipped", len(p.Skipped))
	return res, nil
}

// processingOptions are how the files of pkg are processed: its minify
// switches, and its size limit (its own maxFileSize, else the pool's).
func (a *Publish) processingOptions(pkg catalog.Package) transform.Options {
	opts := transform.Options{MinifyJS: pkg.MinifyJS(), MinifyCSS: pkg.MinifyCSS(), MaxFileSize: a.MaxFileSize}
	if limit := pkg.FileSizeLimit(); limit > 0 {
		opts.MaxFileSize = limit
	}
	return opts
}

// notProcessed lists, with why, the selected files not processed as their
// type would be: over the library's size limit (stored as is), or a script
// or stylesheet too large to minify that would otherwise get a twin.
func notProcessed(opts transform.Options, files []plan.SourceFile, shipped map[string]bool) []metadata.SkippedFile {
	var out []metadata.SkippedFile
	for _, f := range files {
		reason := opts.PlanFor(f.Path, f.Size).SkipReason
		if reason == "" && opts.WantsTwin(f.Path, 0, shipped) && !opts.WantsTwin(f.Path, f.Size, shipped) {
			reason = transform.NotMinifiedReason
		}
		if reason != "" {
			out = append(out, metadata.SkippedFile{Path: f.Path, Size: f.Size, Reason: reason})
		}
	}
	slices.SortFunc(out, func(x, y metadata.SkippedFile) int { return strings.Compare(x.Path, y.Path) })
	return out
}

// extract unpacks the archive under root; a hostile or corrupt archive
// rejects the version.
func (a *Publish) extract(ctx context.Context, prog *progressBeat, pkg catalog.Package, version, archive, root string) (*tarx.Result, error) {
	f, err := os.Open(archive)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }() // read-only
	extracted, err := tarx.ExtractContext(ctx, f, root, a.Extract, func(p tarx.Progress) { prog.advance("extracting", int64(p.Entries)) })
	if err != nil {
		if ctx.Err() != nil {
			return nil, err
		}
		var unsafe *tarx.UnsafeError
		var limit *tarx.LimitError
		if errors.As(err, &unsafe) || errors.As(err, &limit) || strings.Contains(err.Error(), "corrupt archive") {
			return nil, a.reject(ctx, pkg, version, contract.ErrBadArchive, err.Error())
		}
		return nil, err
	}
	activity.RecordHeartbeat(ctx, "extracted")
	return extracted, nil
}

// selectFiles applies the fileMap and hashes every selected file; sourceOf
// maps each output path to its extracted file.
func (a *Publish) selectFiles(ctx context.Context, prog *progressBeat, pkg catalog.Package, version string, extracted *tarx.Result, root string) ([]plan.SourceFile, map[string]string, error) {
	paths := make([]string, len(extracted.Files))
	for i, e := range extracted.Files {
		paths[i] = e.Path
	}
	// A selected file whose name no key can hold fails the version for
	// good; one the fileMap leaves out costs nothing.
	if reason := badSelectedName(pkg, version, extracted.Skipped); reason != "" {
		return nil, nil, a.reject(ctx, pkg, version, contract.ErrBadName, reason)
	}
	selected, err := fileset.ApplyContext(ctx, pkg.Autoupdate.FileMap, paths)
	if err != nil {
		var conflict *fileset.ConflictError
		if errors.As(err, &conflict) || errors.Is(err, fileset.ErrTooExpensive) {
			// Both depend on the fileMap: a catalog fix clears the rejection.
			return nil, nil, a.reject(ctx, pkg, version, contract.ErrFileMapConflict, err.Error())
		}
		if ctx.Err() != nil {
			return nil, nil, err
		}
		return nil, nil, temporal.NewNonRetryableApplicationError(err.Error(), contract.ErrInvalidPackage, nil)
	}
	if len(selected) == 0 {
		return nil, nil, a.skip(ctx, pkg, version, fmt.Sprintf("the fileMap selects none of the %d files of %s@%s", len(paths), pkg.Name, version))
	}
	for _, s := range selected {
		if key := metadata.FileKey(pkg.Name, version, s.Output); len(key)+len(".min")+len(metadata.BrotliSuffix) > maxKeyBytes {
			return nil, nil, a.reject(ctx, pkg, version, contract.ErrBadName,
				fmt.Sprintf("%s: its object key (with a .min twin and .br) would pass the %d-byte limit of object keys", s.Output, maxKeyBytes))
		}
	}
	sourceOf := make(map[string]string, len(selected))
	files := make([]plan.SourceFile, len(selected))
	for i, s := range selected {
		prog.advance("hashing", int64(i))
		sourceOf[s.Output] = filepath.Join(root, filepath.FromSlash(s.Source))
		sri, size, err := hashFile(sourceOf[s.Output])
		if err != nil {
			return nil, nil, err
		}
		files[i] = plan.SourceFile{Path: s.Output, Size: size, SRI: sri}
	}
	return files, sourceOf, nil
}

// maxKeyBytes is S3's limit on object keys.
const maxKeyBytes = 1024

// badSelectedName returns why a file the fileMap selects cannot be
// published for its name alone (tarx skipped it before the disk), or "".
func badSelectedName(pkg catalog.Package, version string, skipped []tarx.Skip) string {
	var bad []string
	reasons := map[string]string{}
	for _, s := range skipped {
		if s.BadName {
			bad = append(bad, s.Path)
			reasons[s.Path] = s.Reason
		}
	}
	if len(bad) == 0 {
		return ""
	}
	selected, err := fileset.Apply(pkg.Autoupdate.FileMap, validUTF8Paths(bad))
	if err != nil || len(selected) == 0 {
		for _, p := range bad {
			// A non-UTF-8 name cannot be matched reliably: refuse it if
			// any pattern could take it, i.e. always.
			if !utf8.ValidString(p) {
				return fmt.Sprintf("%q: %s", p, reasons[p])
			}
		}
		return ""
	}
	s := selected[0]
	r := reasons[s.Source]
	if len(s.Source) > 200 {
		s.Source = s.Source[:200] + "…"
	}
	return fmt.Sprintf("%s@%s: the fileMap selects %s, whose %s", pkg.Name, version, s.Source, r)
}

func validUTF8Paths(paths []string) []string {
	var out []string
	for _, p := range paths {
		if utf8.ValidString(p) && !strings.Contains(p, "//") {
			out = append(out, p)
		}
	}
	return out
}

func hashFile(path string) (string, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", 0, err
	}
	defer func() { _ = f.Close() }() // read-only
	return transform.SRIOf(f)
}

// errSkip carries the reason a version is skipped, not failed, out of the
// steps of StageVersion.
type errSkip struct{ reason string }

func (e *errSkip) Error() string { return e.reason }

// skip records, like reject, that the version can never publish as the
// catalog stands (its fileMap selects nothing from it), so later checks
// skip it until the fileMap changes; StageVersion then reports it skipped,
// as cdnjs does, rather than failed.
func (a *Publish) skip(ctx context.Context, pkg catalog.Package, version, reason string) error {
	marker := metadata.Rejection{Name: pkg.Name, Version: version, Type: contract.ErrNoFiles, Reason: reason, At: a.now(), Selection: pkg.Selection()}
	if err := objectstore.PutJSON(ctx, a.Primary, a.Buckets.Meta, metadata.RejectedKey(pkg.Name, version), marker); err != nil {
		return err
	}
	return &errSkip{reason: reason}
}

// reject records that the version can never publish as the catalog stands,
// so later checks skip it, and fails the activity for good.
func (a *Publish) reject(ctx context.Context, pkg catalog.Package, version, errType, reason string) error {
	marker := metadata.Rejection{Name: pkg.Name, Version: version, Type: errType, Reason: reason, At: a.now()}
	if errType == contract.ErrNoFiles || errType == contract.ErrFileMapConflict {
		marker.Selection = pkg.Selection()
	}
	if err := objectstore.PutJSON(ctx, a.Primary, a.Buckets.Meta, metadata.RejectedKey(pkg.Name, version), marker); err != nil {
		return err
	}
	return temporal.NewNonRetryableApplicationError(reason, errType, nil)
}

func (a *Publish) resolveDist(ctx context.Context, pkg catalog.Package, in contract.VersionRef) (registry.Dist, error) {
	if in.Dist != nil && in.Dist.Tarball != "" {
		return registry.Dist(*in.Dist), nil
	}
	listing, _, err := a.listVersions(ctx, pkg)
	if err != nil {
		return registry.Dist{}, err
	}
	d, ok := listing[in.Version]
	if !ok {
		return d, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("%s has no version %s at its %s source %q", pkg.Name, in.Version, pkg.Autoupdate.Source, pkg.Autoupdate.Target),
			contract.ErrVersionNotFound, nil)
	}
	return d, nil
}

// fetchVerified streams the archive to disk while hashing it, then checks the
// registry's digest: a corrupted or tampered download never gets further.
// An archive over the size bound, or whose complete body has another digest
// than the registry's, fails the version for good.
func (a *Publish) fetchVerified(ctx context.Context, prog *progressBeat, pkg catalog.Package, version string, dist registry.Dist, dst string) error {
	src := release.Sources{NPM: a.NPM, GitHub: a.GitHub, HTTP: a.HTTP, MaxBytes: a.MaxTarballBytes}
	err := src.FetchVerified(ctx, pkg, dist, dst, func(n int64) { prog.advance("downloading", n) })
	var tooLarge *registry.TooLargeError
	var mismatch *registry.IntegrityError
	switch {
	case errors.As(err, &tooLarge):
		return a.reject(ctx, pkg, version, contract.ErrTooLarge, err.Error())
	case errors.As(err, &mismatch):
		return a.reject(ctx, pkg, version, contract.ErrIntegrity, fmt.Sprintf("%s@%s: %v", pkg.Name, version, err))
	case err != nil:
		return fmt.Errorf("download %s: %w", pkg.Name, err)
	}
	return nil
}

func (a *Publish) putFile(ctx context.Context, prog *progressBeat, bucket, key, path, contentType string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }() // read-only
	st, err := f.Stat()
	if err != nil {
		return err
	}
	r := &progressReader{r: f, report: func(n int64) { prog.advance("keeping the archive", n) }}
	_, err = a.Primary.Put(ctx, bucket, key, r, st.Size(), objectstore.PutOptions{Metadata: objectstore.Metadata{ContentType: contentType}})
	return err
}

// stageBatches packs each batch's files into one tar object. A file over
// plan.OwnBatchBytes is alone in its batch and streamed from the disk into
// its object (stageStreamed), never held whole.
func (a *Publish) stageBatches(ctx context.Context, prog *progressBeat, p *plan.Plan, sourceOf map[string]string) error {
	byBatch := make([][]plan.PlanEntry, p.Batches)
	for _, e := range p.Entries {
		if e.Batch >= 0 {
			byBatch[e.Batch] = append(byBatch[e.Batch], e)
		}
	}
	occupied := plan.Occupied(p, transform.MinifiedPath)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(4)
	for b, entries := range byBatch {
		g.Go(func() error {
			if len(entries) == 1 && entries[0].Size > plan.OwnBatchBytes {
				e := entries[0]
				f := plan.BatchFile{Path: e.Path, TwinWanted: e.TwinWanted, Size: e.Size,
					Blocked: plan.Blocked(e.Path, e.TwinWanted, occupied, transform.MinifiedPath)}
				return a.stageStreamed(gctx, prog, metadata.BatchKey(p.Name, p.Version, b), f, sourceOf[e.Path])
			}
			files := make([]plan.BatchFile, len(entries))
			for i, e := range entries {
				data, err := os.ReadFile(sourceOf[e.Path])
				if err != nil {
					return err
				}
				files[i] = plan.BatchFile{Path: e.Path, TwinWanted: e.TwinWanted, Data: data,
					Blocked: plan.Blocked(e.Path, e.TwinWanted, occupied, transform.MinifiedPath)}
			}
			var buf bytes.Buffer
			if err := plan.WriteBatch(&buf, files); err != nil {
				return err
			}
			err := putBytes(gctx, a.Primary, a.Buckets.Incoming, metadata.BatchKey(p.Name, p.Version, b), buf.Bytes(), "application/x-tar")
			prog.advance("staging batches", int64(b))
			return err
		})
	}
	return g.Wait()
}

// stageStreamed writes the batch of one large file from the disk to key,
// as a multipart upload holding one part at a time.
func (a *Publish) stageStreamed(ctx context.Context, prog *progressBeat, key string, f plan.BatchFile, source string) error {
	file, err := os.Open(source)
	if err != nil {
		return err
	}
	defer func() { _ = file.Close() }() // read-only
	pr, pw := io.Pipe()
	go func() {
		src := &progressReader{r: file, report: func(n int64) { prog.advance("staging "+f.Path, n) }}
		pw.CloseWithError(plan.WriteStreamedBatch(pw, f, src))
	}()
	_, err = objectstore.UploadStream(ctx, a.Primary, a.Buckets.Incoming, key, pr,
		objectstore.PutOptions{Metadata: objectstore.Metadata{ContentType: "application/x-tar"}}, 0)
	pr.CloseWithError(err) // ends the writer if the upload stopped first
	return err
}

// isListed reports whether the package document lists the version.
func (a *Publish) isListed(ctx context.Context, name, version string) (bool, error) {
	listed, _, err := a.listing(ctx, name, version)
	return listed, err
}

// listing reports whether the package document lists the version, and
// whether its commit still has steps left (see metadata.Package.Incomplete).
func (a *Publish) listing(ctx context.Context, name, version string) (listed, incomplete bool, err error) {
	var doc metadata.Package
	if _, err := objectstore.GetJSON(ctx, a.Primary, a.Buckets.Meta, metadata.PackageKey(name), &doc); err != nil {
		if errors.Is(err, objectstore.ErrNotFound) {
			return false, false, nil
		}
		return false, false, err
	}
	return slices.Contains(doc.Versions, version), slices.Contains(doc.Incomplete, version), nil
}

// putBytes writes a small object with its content type.
func putBytes(ctx context.Context, s objectstore.Store, bucket, key string, data []byte, contentType string) error {
	return objectstore.PutBytes(ctx, s, bucket, key, data, objectstore.PutOptions{Metadata: objectstore.Metadata{ContentType: contentType}})
}
