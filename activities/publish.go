// Package activities holds every side effect of the workflows, each a thin
// adapter from a Temporal activity to the plain Go code in internal/.
package activities

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"golang.org/x/sync/errgroup"

	"github.com/edgeflow/edgeflow/internal/catalog"
	"github.com/edgeflow/edgeflow/internal/fileset"
	"github.com/edgeflow/edgeflow/internal/metadata"
	"github.com/edgeflow/edgeflow/internal/objectstore"
	"github.com/edgeflow/edgeflow/internal/process"
	"github.com/edgeflow/edgeflow/internal/publish"
	"github.com/edgeflow/edgeflow/internal/registry"
	"github.com/edgeflow/edgeflow/internal/tarx"
	"github.com/edgeflow/edgeflow/internal/versions"
)

// Error types of failures that no retry can fix; workflows report them as
// the reason a version failed.
const (
	ErrInvalidPackage  = "InvalidPackage"
	ErrVersionNotFound = "VersionNotFound"
	ErrBadArchive      = "BadArchive"
	ErrNoFiles         = "NoFilesSelected"
	ErrFileMapConflict = "FileMapConflict"
)

// Publish carries what the publish activities need. One value serves every
// activity of both the pipeline and the compress pool.
type Publish struct {
	Primary, Mirror objectstore.Store
	Buckets         metadata.Buckets
	CatalogDir      string
	NPM             *registry.NPM
	GitHub          *registry.GitHub
	HTTP            *http.Client
	Extract         tarx.Limits
	Batch           publish.BatchLimits
	FirstImport     int              // versions imported for a package new to the catalog
	CPU             *process.Limiter // bounds concurrent compressions in this process
	IOParallel      int              // concurrent object-store requests per activity
	Now             func() time.Time // for document timestamps; time.Now when nil
	TempDir         string           // scratch space for archives; os.TempDir when empty
	checkMu         sync.Mutex       // serialises registry cache writes per process
}

func (a *Publish) now() time.Time {
	if a.Now != nil {
		return a.Now()
	}
	return time.Now().UTC()
}

func (a *Publish) ioParallel() int {
	if a.IOParallel > 0 {
		return a.IOParallel
	}
	return 32
}

// PackageRef names a package and, when a starter sent it, carries its
// catalog entry (otherwise the workers' catalog is read).
type PackageRef struct {
	Name    string           `json:"name"`
	Package *catalog.Package `json:"package,omitempty"`
}

func (a *Publish) loadPackage(ref PackageRef) (catalog.Package, error) {
	var pkg catalog.Package
	if ref.Package != nil {
		pkg = *ref.Package
	} else {
		if a.CatalogDir == "" {
			return pkg, temporal.NewNonRetryableApplicationError("no catalog configured on the worker and none sent", ErrInvalidPackage, nil)
		}
		// The name becomes a path on the worker: check it before using it.
		if problems := catalog.ValidatePackage(catalog.Package{Name: ref.Name}); hasNameProblem(problems) {
			return pkg, temporal.NewNonRetryableApplicationError(fmt.Sprintf("package name %q is not valid", ref.Name), ErrInvalidPackage, nil)
		}
		path := filepath.Join(a.CatalogDir, strings.ToLower(ref.Name[:1]), ref.Name+".json")
		var err error
		if pkg, err = catalog.LoadFile(path); err != nil {
			return pkg, temporal.NewNonRetryableApplicationError(err.Error(), ErrInvalidPackage, nil)
		}
	}
	if problems := catalog.ValidatePackage(pkg); len(problems) > 0 {
		msgs := make([]string, len(problems))
		for i, p := range problems {
			msgs[i] = p.String()
		}
		return pkg, temporal.NewNonRetryableApplicationError("invalid package: "+strings.Join(msgs, "; "), ErrInvalidPackage, nil)
	}
	return pkg, nil
}

func hasNameProblem(problems []catalog.Problem) bool {
	for _, p := range problems {
		if p.Field == "name" {
			return true
		}
	}
	return false
}

// ListCatalog returns the names of the catalog's packages, sorted.
func (a *Publish) ListCatalog(ctx context.Context) ([]string, error) {
	pkgs, err := catalog.Load(a.CatalogDir)
	if err != nil && len(pkgs) == 0 {
		return nil, err
	}
	names := make([]string, 0, len(pkgs))
	for _, p := range pkgs {
		names = append(names, p.Name)
	}
	sort.Strings(names)
	return names, nil
}

// NewVersion is one version to publish.
type NewVersion struct {
	Version string         `json:"version"`
	Dist    *registry.Dist `json:"dist,omitempty"`
}

// PackageCheck is the result of checking one package for new versions.
type PackageCheck struct {
	Name        string       `json:"name"`
	NewVersions []NewVersion `json:"newVersions,omitempty"`
	NotModified bool         `json:"notModified,omitempty"`
	Problem     string       `json:"problem,omitempty"`
}

// registryCache keeps the last listing per package so an unchanged package
// costs a conditional request answered with 304.
type registryCache struct {
	ETag     string                   `json:"etag"`
	Versions map[string]registry.Dist `json:"versions"`
}

func registryCacheKey(name string) string { return "registry/" + name + ".json" }

// RejectedKey marks a version that can never publish (hostile archive, no
// files selected): update checks skip it until an operator deletes the marker.
func RejectedKey(name, version string) string { return "rejected/" + name + "/" + version + ".json" }

// CheckPackages finds the versions of each package that are not yet
// published, not ignored and not rejected.
func (a *Publish) CheckPackages(ctx context.Context, refs []PackageRef) ([]PackageCheck, error) {
	out := make([]PackageCheck, len(refs))
	var done atomic.Int64
	// A slow listing (many tag pages, a rate limit) must not look like a dead worker.
	defer heartbeatEvery(ctx, 10*time.Second, func() any { return done.Load() })()
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(8)
	for i, ref := range refs {
		g.Go(func() error {
			out[i] = a.checkPackage(gctx, ref)
			done.Add(1)
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return out, nil
}

func (a *Publish) checkPackage(ctx context.Context, ref PackageRef) PackageCheck {
	res := PackageCheck{Name: ref.Name}
	pkg, err := a.loadPackage(ref)
	if err != nil {
		res.Problem = err.Error()
		return res
	}
	listing, notModified, err := a.listVersions(ctx, pkg)
	if err != nil {
		res.Problem = err.Error()
		return res
	}
	res.NotModified = notModified
	published := map[string]bool{}
	var doc metadata.Package
	if _, err := objectstore.GetJSON(ctx, a.Primary, a.Buckets.Meta, metadata.PackageKey(pkg.Name), &doc); err == nil {
		for _, v := range doc.Versions {
			published[v] = true
		}
	} else if !errors.Is(err, objectstore.ErrNotFound) {
		res.Problem = err.Error()
		return res
	}
	rejected := map[string]bool{}
	if markers, err := objectstore.ListAll(ctx, a.Primary, a.Buckets.Meta, "rejected/"+pkg.Name+"/"); err == nil {
		current := selection(pkg)
		for _, m := range markers {
			var r rejection
			if _, err := objectstore.GetJSON(ctx, a.Primary, a.Buckets.Meta, m.Key, &r); err == nil && (r.Selection == "" || r.Selection == current) {
				rejected[r.Version] = true
			}
		}
	}
	available := make([]string, 0, len(listing))
	for v := range listing {
		if !rejected[v] {
			available = append(available, v)
		}
	}
	firstImport := a.FirstImport
	if firstImport <= 0 {
		firstImport = 10
	}
	for _, v := range versions.NewVersions(available, published, pkg.Autoupdate.IgnoreVersions, firstImport) {
		d := listing[v]
		res.NewVersions = append(res.NewVersions, NewVersion{Version: v, Dist: &d})
	}
	return res
}

// listVersions asks the package's source for its versions with the cached
// ETag, falling back to the cached listing on 304.
func (a *Publish) listVersions(ctx context.Context, pkg catalog.Package) (map[string]registry.Dist, bool, error) {
	var cache registryCache
	if _, err := objectstore.GetJSON(ctx, a.Primary, a.Buckets.Meta, registryCacheKey(pkg.Name), &cache); err != nil && !errors.Is(err, objectstore.ErrNotFound) {
		return nil, false, err
	}
	list := func(etag string) (*registry.Listing, error) {
		if pkg.Autoupdate.Source == catalog.SourceGit {
			return a.GitHub.Tags(ctx, pkg.Autoupdate.Target, etag)
		}
		return a.NPM.Versions(ctx, pkg.Autoupdate.Target, etag)
	}
	listing, err := list(cache.ETag)
	if err != nil {
		return nil, false, err
	}
	if listing.NotModified && cache.Versions != nil {
		return cache.Versions, true, nil
	}
	if listing.NotModified {
		// A 304 without a cached listing (the cache was lost): ask unconditionally.
		if listing, err = list(""); err != nil {
			return nil, false, err
		}
		if listing.NotModified {
			return nil, false, fmt.Errorf("%s: the source answered 304 to an unconditional request", pkg.Name)
		}
	}
	cache = registryCache{ETag: listing.ETag, Versions: listing.Versions}
	if err := objectstore.PutJSON(ctx, a.Primary, a.Buckets.Meta, registryCacheKey(pkg.Name), cache); err != nil {
		return nil, false, err
	}
	return listing.Versions, false, nil
}

// VersionRef names one version to publish.
type VersionRef struct {
	PackageRef
	Version string         `json:"version"`
	Dist    *registry.Dist `json:"dist,omitempty"`
	// BatchLimits overrides the worker's batch sizing for this version.
	BatchLimits *publish.BatchLimits `json:"batchLimits,omitempty"`
}

// DownloadResult summarises a version's plan; the plan itself is in the bucket.
type DownloadResult struct {
	AlreadyPublished bool            `json:"alreadyPublished,omitempty"`
	Batches          int             `json:"batches"`
	SourceFiles      int             `json:"sourceFiles"`
	ToProcess        int             `json:"toProcess"`
	Reused           int             `json:"reused"`
	SameContent      int             `json:"sameContent"`
	Skipped          int             `json:"skipped"`
	Bytes            int64           `json:"bytes"`
	Options          process.Options `json:"options"`
	// Fingerprint is the processing fingerprint the plan's reuse decisions
	// assumed; batches check that their worker matches it.
	Fingerprint string `json:"fingerprint,omitempty"`
}

// Download fetches and verifies a version's archive, keeps the original,
// extracts it safely, selects files by the fileMap, plans reuse and
// processing, and stages the files to process as batches in the bucket.
func (a *Publish) Download(ctx context.Context, in VersionRef) (*DownloadResult, error) {
	// Extracting, hashing and staging a 100,000-file release takes minutes.
	defer heartbeatEvery(ctx, 10*time.Second, func() any { return "downloading" })()
	pkg, err := a.loadPackage(in.PackageRef)
	if err != nil {
		return nil, err
	}
	// Published means listed in the package document (the commit point), not
	// merely a version document: a commit that failed between the two runs
	// again, and finishes.
	if listed, err := a.isListed(ctx, pkg.Name, in.Version); err != nil {
		return nil, err
	} else if listed {
		return &DownloadResult{AlreadyPublished: true}, nil
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
	if err := a.fetchVerified(ctx, pkg, dist, archive); err != nil {
		return nil, err
	}
	if err := a.putFile(ctx, a.Buckets.Incoming, metadata.TarballKey(pkg.Name, in.Version), archive, "application/gzip"); err != nil {
		return nil, err
	}
	f, err := os.Open(archive)
	if err != nil {
		return nil, err
	}
	root := filepath.Join(tmp, "files")
	extracted, err := tarx.Extract(f, root, a.Extract)
	f.Close()
	if err != nil {
		var unsafe *tarx.UnsafeError
		var limit *tarx.LimitError
		if errors.As(err, &unsafe) || errors.As(err, &limit) || strings.Contains(err.Error(), "corrupt archive") {
			return nil, a.reject(ctx, pkg, in.Version, ErrBadArchive, err.Error())
		}
		return nil, err
	}
	activity.RecordHeartbeat(ctx, "extracted")
	paths := make([]string, len(extracted.Files))
	for i, e := range extracted.Files {
		paths[i] = e.Path
	}
	selected, err := fileset.Apply(pkg.Autoupdate.FileMap, paths)
	if err != nil {
		var conflict *fileset.ConflictError
		if errors.As(err, &conflict) {
			return nil, a.reject(ctx, pkg, in.Version, ErrFileMapConflict, err.Error())
		}
		return nil, temporal.NewNonRetryableApplicationError(err.Error(), ErrInvalidPackage, nil)
	}
	if len(selected) == 0 {
		return nil, a.reject(ctx, pkg, in.Version, ErrNoFiles,
			fmt.Sprintf("the fileMap selected none of the %d files in %s@%s", len(paths), pkg.Name, in.Version))
	}
	sourceOf := make(map[string]string, len(selected))
	files := make([]publish.SourceFile, len(selected))
	shipped := make(map[string]bool, len(selected))
	for i, s := range selected {
		sourceOf[s.Output] = filepath.Join(root, filepath.FromSlash(s.Source))
		sri, size, err := hashFile(sourceOf[s.Output])
		if err != nil {
			return nil, err
		}
		files[i] = publish.SourceFile{Path: s.Output, Size: size, SRI: sri}
		shipped[s.Output] = true
	}
	opts := process.Options{MinifyJS: pkg.MinifyJS(), MinifyCSS: pkg.MinifyCSS()}
	fingerprint := process.Fingerprint(opts)
	var reuse publish.ReuseIndex
	if _, err := objectstore.GetJSON(ctx, a.Primary, a.Buckets.Meta, publish.ReuseIndexKey(pkg.Name), &reuse); err != nil && !errors.Is(err, objectstore.ErrNotFound) {
		return nil, err
	}
	limits := a.batchLimits()
	if in.BatchLimits != nil && in.BatchLimits.MaxBytes > 0 && in.BatchLimits.MaxFiles > 0 {
		limits = *in.BatchLimits
	}
	plan := publish.BuildPlan(pkg.Name, in.Version, fingerprint, files, &reuse, twinDecider(opts, shipped), process.Class, limits)
	plan.Package = pkg
	for i, s := range extracted.Skipped {
		plan.Skipped = append(plan.Skipped, publish.Skip{Path: s.Path, Reason: s.Reason})
		if i < 20 {
			activity.GetLogger(ctx).Warn("file skipped", "package", pkg.Name, "version", in.Version, "path", s.Path, "reason", s.Reason)
		}
	}
	if err := a.stageBatches(ctx, plan, sourceOf); err != nil {
		return nil, err
	}
	if err := objectstore.PutJSON(ctx, a.Primary, a.Buckets.Incoming, publish.PlanKey(pkg.Name, in.Version), plan); err != nil {
		return nil, err
	}
	toProcess, reused, same := plan.Counts()
	res := &DownloadResult{Batches: plan.Batches, SourceFiles: len(files), ToProcess: toProcess, Reused: reused,
		SameContent: same, Skipped: len(plan.Skipped), Options: opts, Fingerprint: fingerprint}
	for _, f := range files {
		res.Bytes += f.Size
	}
	activity.GetLogger(ctx).Info("planned", "package", pkg.Name, "version", in.Version, "files", len(files),
		"process", toProcess, "reuse", reused, "batches", plan.Batches, "skipped", len(plan.Skipped))
	return res, nil
}

func (a *Publish) batchLimits() publish.BatchLimits {
	if a.Batch.MaxBytes > 0 && a.Batch.MaxFiles > 0 {
		return a.Batch
	}
	return publish.DefaultBatchLimits
}

// twinDecider wants a generated minified twin for a script or stylesheet when
// its type is minified and the release does not ship that twin itself.
func twinDecider(opts process.Options, shipped map[string]bool) publish.TwinDecider {
	return func(p string) bool {
		twin, ok := process.MinifiedPath(p)
		if !ok || shipped[twin] {
			return false
		}
		if strings.HasSuffix(p, ".css") {
			return opts.MinifyCSS
		}
		return opts.MinifyJS
	}
}

// rejection is the marker of a version that can never publish as the
// catalog stands.
type rejection struct {
	Name    string    `json:"name"`
	Version string    `json:"version"`
	Type    string    `json:"type"`
	Reason  string    `json:"reason"`
	At      time.Time `json:"at"`
	// Selection fingerprints the fileMap when the reason depends on it (no
	// files selected, two files to one path): a catalog fix clears the
	// rejection by itself. Empty for reasons in the release itself.
	Selection string `json:"selection,omitempty"`
}

// selection fingerprints what decides which files of a release are selected.
func selection(pkg catalog.Package) string {
	data, _ := json.Marshal(pkg.Autoupdate.FileMap)
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:8])
}

func (a *Publish) reject(ctx context.Context, pkg catalog.Package, version, errType, reason string) error {
	marker := rejection{Name: pkg.Name, Version: version, Type: errType, Reason: reason, At: a.now()}
	if errType == ErrNoFiles || errType == ErrFileMapConflict {
		marker.Selection = selection(pkg)
	}
	if err := objectstore.PutJSON(ctx, a.Primary, a.Buckets.Meta, RejectedKey(pkg.Name, version), marker); err != nil {
		return err
	}
	return temporal.NewNonRetryableApplicationError(reason, errType, nil)
}

func (a *Publish) resolveDist(ctx context.Context, pkg catalog.Package, in VersionRef) (registry.Dist, error) {
	if in.Dist != nil && in.Dist.Tarball != "" {
		return *in.Dist, nil
	}
	listing, _, err := a.listVersions(ctx, pkg)
	if err != nil {
		return registry.Dist{}, err
	}
	d, ok := listing[in.Version]
	if !ok {
		return d, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("%s has no version %s at its %s source %q", pkg.Name, in.Version, pkg.Autoupdate.Source, pkg.Autoupdate.Target),
			ErrVersionNotFound, nil)
	}
	return d, nil
}

// fetchVerified streams the archive to disk while hashing it, then checks the
// registry's digest: a corrupted or tampered download never gets further.
func (a *Publish) fetchVerified(ctx context.Context, pkg catalog.Package, dist registry.Dist, dst string) error {
	token := ""
	if pkg.Autoupdate.Source == catalog.SourceGit && a.GitHub != nil && sameHost(dist.Tarball, a.GitHub.BaseURL) {
		// The token goes only to the GitHub API, never to a URL a request named.
		token = a.GitHub.Token
	}
	body, err := registry.Fetch(ctx, a.HTTP, dist.Tarball, token)
	if err != nil {
		return err
	}
	defer body.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	defer out.Close()
	var w io.Writer = out
	var verifier *registry.Verifier
	if dist.Integrity != "" || dist.Shasum != "" {
		if verifier, err = registry.NewVerifier(dist.Integrity, dist.Shasum); err != nil {
			return temporal.NewNonRetryableApplicationError(err.Error(), ErrBadArchive, nil)
		}
		w = io.MultiWriter(out, verifier)
	}
	if _, err := io.Copy(w, &heartbeatReader{ctx: ctx, r: body}); err != nil {
		return fmt.Errorf("download %s: %w", pkg.Name, err)
	}
	if verifier != nil {
		// A mismatch may be a truncated transfer: let the retry policy try again.
		return verifier.Verify()
	}
	return out.Close()
}

func sameHost(a, b string) bool {
	ua, errA := url.Parse(a)
	ub, errB := url.Parse(b)
	return errA == nil && errB == nil && ua.Host != "" && strings.EqualFold(ua.Host, ub.Host)
}

type heartbeatReader struct {
	ctx  context.Context
	r    io.Reader
	n    int64
	last time.Time
}

func (h *heartbeatReader) Read(p []byte) (int, error) {
	n, err := h.r.Read(p)
	h.n += int64(n)
	if time.Since(h.last) > 5*time.Second {
		h.last = time.Now()
		activity.RecordHeartbeat(h.ctx, h.n)
	}
	return n, err
}

func (a *Publish) putFile(ctx context.Context, bucket, key, path, contentType string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	_, err = a.Primary.Put(ctx, bucket, key, f, st.Size(), objectstore.PutOptions{Metadata: objectstore.Metadata{ContentType: contentType}})
	return err
}

func hashFile(path string) (string, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	h := sha512.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return "", 0, err
	}
	return "sha512-" + base64.StdEncoding.EncodeToString(h.Sum(nil)), n, nil
}

func (a *Publish) stageBatches(ctx context.Context, plan *publish.Plan, sourceOf map[string]string) error {
	byBatch := make([][]publish.PlanEntry, plan.Batches)
	for _, e := range plan.Entries {
		if e.Batch >= 0 {
			byBatch[e.Batch] = append(byBatch[e.Batch], e)
		}
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(4)
	for b, entries := range byBatch {
		g.Go(func() error {
			files := make([]publish.BatchFile, len(entries))
			for i, e := range entries {
				data, err := os.ReadFile(sourceOf[e.Path])
				if err != nil {
					return err
				}
				files[i] = publish.BatchFile{Path: e.Path, TwinWanted: e.TwinWanted, Data: data}
			}
			var buf bytes.Buffer
			if err := publish.WriteBatch(&buf, files); err != nil {
				return err
			}
			return putBytes(gctx, a.Primary, a.Buckets.Incoming, publish.BatchKey(plan.Name, plan.Version, b), buf.Bytes(), "application/x-tar")
		})
	}
	return g.Wait()
}

// BatchInput names one staged batch.
type BatchInput struct {
	Name    string          `json:"name"`
	Version string          `json:"version"`
	Batch   int             `json:"batch"`
	Options process.Options `json:"options"`
	// Fingerprint, when set, is what the plan assumed this worker produces.
	Fingerprint string `json:"fingerprint,omitempty"`
	// Execution identifies the version's execution that started the batch
	// (its first run ID), echoed in the batch's report.
	Execution string `json:"execution,omitempty"`
}

// BatchSummary is what a processed batch reports to its version.
type BatchSummary struct {
	Files        int      `json:"files"`
	Twins        int      `json:"twins"`
	MinifyFailed int      `json:"minifyFailed"`
	BytesIn      int64    `json:"bytesIn"`
	BytesOut     int64    `json:"bytesOut"`
	CPUMillis    int64    `json:"cpuMillis"`
	Warnings     []string `json:"warnings,omitempty"` // first few, for the run's summary
}

// ProcessBatch minifies, compresses and hashes every file of a batch, writes
// each output to the primary and mirror buckets at its final key, and records
// the results. Rerunning it rewrites the same bytes: outputs are deterministic.
func (a *Publish) ProcessBatch(ctx context.Context, in BatchInput) (*BatchSummary, error) {
	if fp := process.Fingerprint(in.Options); in.Fingerprint != "" && fp != in.Fingerprint {
		// A rolling deploy: outputs recorded under the plan's fingerprint must
		// come from those tools. Retryable, so a matching worker takes it.
		return nil, fmt.Errorf("this compress worker processes as %q, the plan assumed %q", fp, in.Fingerprint)
	}
	data, _, err := objectstore.ReadAll(ctx, a.Primary, a.Buckets.Incoming, publish.BatchKey(in.Name, in.Version, in.Batch))
	if err != nil {
		return nil, err
	}
	files, err := publish.ReadBatch(bytes.NewReader(data))
	if err != nil {
		return nil, temporal.NewNonRetryableApplicationError(err.Error(), ErrBadArchive, nil)
	}
	var done atomic.Int64
	stop := heartbeatEvery(ctx, 5*time.Second, func() any { return done.Load() })
	defer stop()

	results := make([]publish.FileResult, len(files))
	var summary BatchSummary
	var mu sync.Mutex
	var cpu atomic.Int64
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(a.ioParallel())
	for i, f := range files {
		g.Go(func() error {
			var outs []process.Output
			var warnings []string
			var perr error
			if err := a.CPU.Do(gctx, func() {
				start := time.Now()
				outs, warnings, perr = process.ProcessFile(f.Path, f.Data, in.Options, func(string) bool { return !f.TwinWanted })
				cpu.Add(time.Since(start).Milliseconds())
			}); err != nil {
				return err
			}
			if perr != nil {
				return fmt.Errorf("%s: %w", f.Path, perr)
			}
			r := publish.FileResult{TwinWanted: f.TwinWanted}
			if len(warnings) > 0 {
				r.Warning = strings.Join(warnings, "; ")
				activity.GetLogger(ctx).Warn("minify failed; publishing the original", "package", in.Name, "version", in.Version, "reason", r.Warning)
			}
			var out int64
			for _, o := range outs {
				meta := metadata.File{Path: o.Path, Size: int64(len(o.Data)), SRI: o.SRI, ContentType: o.ContentType,
					BrotliSize: int64(len(o.Brotli)), GzipSize: int64(len(o.Gzip)), MinifiedFrom: o.MinifiedFrom}
				if err := a.writeOutput(gctx, in.Name, in.Version, o); err != nil {
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
			mu.Lock()
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
			mu.Unlock()
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	summary.CPUMillis = cpu.Load()
	if err := objectstore.PutJSON(ctx, a.Primary, a.Buckets.Incoming, publish.ResultKey(in.Name, in.Version, in.Batch), results); err != nil {
		return nil, err
	}
	return &summary, nil
}

// writeOutput stores one output and its precompressed representations in the
// primary and the mirror bucket, all at once.
func (a *Publish) writeOutput(ctx context.Context, name, version string, o process.Output) error {
	key := metadata.FileKey(name, version, o.Path)
	type obj struct {
		key, contentType string
		data             []byte
	}
	objs := []obj{{key, o.ContentType, o.Data}}
	if o.Brotli != nil {
		objs = append(objs, obj{key + metadata.BrotliSuffix, o.ContentType, o.Brotli})
	}
	if o.Gzip != nil {
		objs = append(objs, obj{key + metadata.GzipSuffix, o.ContentType, o.Gzip})
	}
	g, gctx := errgroup.WithContext(ctx)
	for _, ob := range objs {
		g.Go(func() error { return putBytes(gctx, a.Primary, a.Buckets.Files, ob.key, ob.data, ob.contentType) })
		g.Go(func() error { return putBytes(gctx, a.Mirror, a.Buckets.Mirror, ob.key, ob.data, ob.contentType) })
	}
	return g.Wait()
}

func heartbeatEvery(ctx context.Context, every time.Duration, details func() any) (stop func()) {
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				activity.RecordHeartbeat(ctx, details())
			}
		}
	}()
	return func() { close(done) }
}

// BatchResultsInput asks which batches of a version left results.
type BatchResultsInput struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	Batches []int  `json:"batches"`
}

// FoundBatch is a batch whose results are in the bucket.
type FoundBatch struct {
	Batch int `json:"batch"`
	Files int `json:"files"`
}

// FindBatchResults reports which of the batches wrote their results: the
// durable proof that a batch finished, for a version that missed its report.
func (a *Publish) FindBatchResults(ctx context.Context, in BatchResultsInput) ([]FoundBatch, error) {
	var found []FoundBatch
	for _, b := range in.Batches {
		var results []publish.FileResult
		_, err := objectstore.GetJSON(ctx, a.Primary, a.Buckets.Incoming, publish.ResultKey(in.Name, in.Version, b), &results)
		switch {
		case err == nil:
			found = append(found, FoundBatch{Batch: b, Files: len(results)})
		case !errors.Is(err, objectstore.ErrNotFound):
			return nil, err
		}
		activity.RecordHeartbeat(ctx, b)
	}
	return found, nil
}

// FinishInput names a processed version to publish.
type FinishInput struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// PublishResult is what a published version reports.
type PublishResult struct {
	Files       int     `json:"files"`
	Bytes       int64   `json:"bytes"`
	Latest      string  `json:"latest"`
	Reused      int     `json:"reused"`
	SourceFiles int     `json:"sourceFiles"`
	ReuseRate   float64 `json:"reuseRate"`
	Copies      int     `json:"copies"` // objects Materialize copies afterwards
}

// Commit commits a processed version: the version document (reused files
// point at the bytes an earlier version stored), then the package document
// listing it — the edge serves a version only once both exist — then the
// reuse and search indexes. Each document the edge reads is copied to the
// mirror's metadata bucket right after it is written, in the same order, so
// the mirror has the same commit point. Every step is idempotent, so a
// retried attempt finishes what a failed one began. Materialize then copies
// reused files to this version's own keys.
func (a *Publish) Commit(ctx context.Context, in FinishInput) (*PublishResult, error) {
	defer heartbeatEvery(ctx, 10*time.Second, func() any { return "committing" })()
	var plan publish.Plan
	if _, err := objectstore.GetJSON(ctx, a.Primary, a.Buckets.Incoming, publish.PlanKey(in.Name, in.Version), &plan); err != nil {
		if errors.Is(err, objectstore.ErrNotFound) {
			// An attempt that finished (and cleaned staging) but whose
			// completion was lost: report what it committed.
			return a.committed(ctx, in)
		}
		return nil, err
	}
	processed, err := a.readResults(ctx, &plan)
	if err != nil {
		return nil, err
	}
	asm, err := publish.Assemble(&plan, processed, process.MinifiedPath)
	if err != nil {
		return nil, temporal.NewNonRetryableApplicationError(err.Error(), ErrBadArchive, nil)
	}
	doc, err := publish.VersionDocument(plan.Name, plan.Version, plan.Fingerprint, asm)
	if err != nil {
		return nil, temporal.NewNonRetryableApplicationError(err.Error(), ErrFileMapConflict, nil)
	}
	_, reused, _ := plan.Counts()
	doc.Stats.ReusedFiles = reused
	doc.Stats.Processed = len(processed)
	doc.Stats.SkippedFiles = len(plan.Skipped)
	doc.PublishedAt = a.now()
	var existing metadata.Version
	if _, err := objectstore.GetJSON(ctx, a.Primary, a.Buckets.Meta, metadata.VersionKey(plan.Name, plan.Version), &existing); err == nil {
		doc.PublishedAt = existing.PublishedAt // a retry keeps the first commit time
	}
	if err := objectstore.PutJSON(ctx, a.Primary, a.Buckets.Meta, metadata.VersionKey(plan.Name, plan.Version), doc); err != nil {
		return nil, err
	}
	if err := a.mirrorMeta(ctx, metadata.VersionKey(plan.Name, plan.Version)); err != nil {
		return nil, err
	}
	pkgDoc, err := objectstore.UpdateJSON(ctx, a.Primary, a.Buckets.Meta, metadata.PackageKey(plan.Name),
		func(p *metadata.Package, _ bool) (bool, error) {
			p.Package = plan.Package
			if !slices.Contains(p.Versions, plan.Version) {
				p.Versions = append(p.Versions, plan.Version)
			}
			versions.Sort(p.Versions)
			p.Latest = versions.Latest(p.Versions)
			p.UpdatedAt = a.now()
			return true, nil
		})
	if err != nil {
		return nil, err
	}
	if err := a.mirrorMeta(ctx, metadata.PackageKey(plan.Name)); err != nil {
		return nil, err
	}
	fresh := make([]publish.FileResult, 0, len(processed))
	for _, r := range processed {
		fresh = append(fresh, r)
	}
	sort.Slice(fresh, func(i, j int) bool { return fresh[i].File.Path < fresh[j].File.Path })
	if _, err := objectstore.UpdateJSON(ctx, a.Primary, a.Buckets.Meta, publish.ReuseIndexKey(plan.Name),
		func(ix *publish.ReuseIndex, _ bool) (bool, error) {
			return ix.Add(plan.Version, plan.Fingerprint, fresh, process.Class), nil
		}); err != nil {
		return nil, err
	}
	if _, err := a.updateSearchIndex(ctx, plan.Name); err != nil {
		return nil, err
	}
	if err := a.mirrorMeta(ctx, metadata.SearchIndexKey); err != nil {
		return nil, err
	}
	if err := objectstore.DeletePrefix(ctx, a.Primary, a.Buckets.Incoming, metadata.StagingPrefix(plan.Name, plan.Version)); err != nil {
		activity.GetLogger(ctx).Warn("staging cleanup failed", "error", err)
	}
	return &PublishResult{Files: doc.Stats.Files, Bytes: doc.Stats.Bytes, Latest: pkgDoc.Latest,
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

// Materialize copies every reused file of a committed version (primary and
// mirror) to the version's own keys, so the buckets hold a complete tree per
// version for S3 clients and mirrors. The edge needs none of it: committed
// files are servable from where their bytes are stored.
func (a *Publish) Materialize(ctx context.Context, in FinishInput) (int, error) {
	var doc metadata.Version
	if _, err := objectstore.GetJSON(ctx, a.Primary, a.Buckets.Meta, metadata.VersionKey(in.Name, in.Version), &doc); err != nil {
		return 0, err
	}
	copies := publish.Materializations(&doc)
	return len(copies), a.copyAll(ctx, copies)
}

// isListed reports whether the package document lists the version.
func (a *Publish) isListed(ctx context.Context, name, version string) (bool, error) {
	var doc metadata.Package
	if _, err := objectstore.GetJSON(ctx, a.Primary, a.Buckets.Meta, metadata.PackageKey(name), &doc); err != nil {
		if errors.Is(err, objectstore.ErrNotFound) {
			return false, nil
		}
		return false, err
	}
	return slices.Contains(doc.Versions, version), nil
}

// committed rebuilds a Commit result from the committed documents.
func (a *Publish) committed(ctx context.Context, in FinishInput) (*PublishResult, error) {
	if listed, err := a.isListed(ctx, in.Name, in.Version); err != nil {
		return nil, err
	} else if !listed {
		return nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf("%s@%s: its plan is gone but the version is not committed; publish it again", in.Name, in.Version), ErrBadArchive, nil)
	}
	var doc metadata.Version
	if _, err := objectstore.GetJSON(ctx, a.Primary, a.Buckets.Meta, metadata.VersionKey(in.Name, in.Version), &doc); err != nil {
		return nil, err
	}
	var pkg metadata.Package
	if _, err := objectstore.GetJSON(ctx, a.Primary, a.Buckets.Meta, metadata.PackageKey(in.Name), &pkg); err != nil {
		return nil, err
	}
	return &PublishResult{Files: doc.Stats.Files, Bytes: doc.Stats.Bytes, Latest: pkg.Latest, Reused: doc.Stats.ReusedFiles,
		SourceFiles: doc.Stats.SourceFiles, ReuseRate: doc.Stats.ReuseRate(), Copies: len(publish.Materializations(&doc))}, nil
}

func (a *Publish) readResults(ctx context.Context, plan *publish.Plan) (map[string]publish.FileResult, error) {
	perBatch := make([][]publish.FileResult, plan.Batches)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(a.ioParallel())
	for b := 0; b < plan.Batches; b++ {
		g.Go(func() error {
			_, err := objectstore.GetJSON(gctx, a.Primary, a.Buckets.Incoming, publish.ResultKey(plan.Name, plan.Version, b), &perBatch[b])
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	out := map[string]publish.FileResult{}
	for _, rs := range perBatch {
		for _, r := range rs {
			out[r.File.Path] = r
		}
	}
	return out, nil
}

// copyAll runs the copies on both buckets. On the primary they are
// server-side; to the mirror, objectstore.Copy copies server-side when the
// mirror is on the primary's store and streams the bytes across otherwise.
func (a *Publish) copyAll(ctx context.Context, copies []publish.CopyOp) error {
	var done atomic.Int64
	stop := heartbeatEvery(ctx, 5*time.Second, func() any { return done.Load() })
	defer stop()
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

// putBytes writes a small object with its content type.
func putBytes(ctx context.Context, s objectstore.Store, bucket, key string, data []byte, contentType string) error {
	return objectstore.PutBytes(ctx, s, bucket, key, data, objectstore.PutOptions{Metadata: objectstore.Metadata{ContentType: contentType}})
}

func (a *Publish) updateSearchIndex(ctx context.Context, name string) (*metadata.Index, error) {
	return objectstore.UpdateJSON(ctx, a.Primary, a.Buckets.Meta, metadata.SearchIndexKey,
		func(ix *metadata.Index, _ bool) (bool, error) {
			// Built from the package document as it is now, inside the retry
			// loop: a concurrent commit of a newer version is never undone by
			// an older one's entry.
			var p metadata.Package
			if _, err := objectstore.GetJSON(ctx, a.Primary, a.Buckets.Meta, metadata.PackageKey(name), &p); err != nil {
				return false, err
			}
			entry := metadata.IndexEntry{Name: p.Name, Latest: p.Latest, Filename: p.Filename, Description: p.Description,
				Keywords: p.Keywords, Homepage: p.Homepage, License: p.License}
			var latest metadata.Version
			if _, err := objectstore.GetJSON(ctx, a.Primary, a.Buckets.Meta, metadata.VersionKey(p.Name, p.Latest), &latest); err == nil {
				if f, ok := latest.Lookup(p.Filename); ok {
					entry.SRI = f.SRI
				}
			}
			i := sort.Search(len(ix.Libraries), func(i int) bool { return ix.Libraries[i].Name >= entry.Name })
			if i < len(ix.Libraries) && ix.Libraries[i].Name == entry.Name {
				ix.Libraries[i] = entry
			} else {
				ix.Libraries = append(ix.Libraries, metadata.IndexEntry{})
				copy(ix.Libraries[i+1:], ix.Libraries[i:])
				ix.Libraries[i] = entry
			}
			ix.UpdatedAt = a.now()
			return true, nil
		})
}
