package publish

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.temporal.io/sdk/temporal"

	"github.com/edgeflow/edgeflow/internal/heartbeat"
	"github.com/edgeflow/edgeflow/internal/metrics"
	"github.com/edgeflow/edgeflow/internal/objectstore"
	"github.com/edgeflow/edgeflow/internal/publish/audit"
	"github.com/edgeflow/edgeflow/internal/publish/metadata"
	"github.com/edgeflow/edgeflow/internal/publish/registry"
	"github.com/edgeflow/edgeflow/internal/publish/release"
	"github.com/edgeflow/edgeflow/workflows/publish/contract"
)

// ListPublished lists every package with a package document on either
// metadata store: what the audit checks (a package the catalog dropped is
// still served, so it is audited too; one only the mirror lists is
// reported, never imported, since only the primary's documents say what is
// published).
func (a *Publish) ListPublished(ctx context.Context) ([]string, error) {
	seen := map[string]bool{}
	for _, s := range []struct {
		store  objectstore.Store
		bucket string
	}{{a.Primary, a.Buckets.Meta}, {a.Mirror, a.Buckets.MirrorMeta}} {
		for obj, err := range objectstore.Objects(ctx, s.store, s.bucket, "packages/") {
			if err != nil {
				return nil, err
			}
			if name, ok := strings.CutSuffix(strings.TrimPrefix(obj.Key, "packages/"), ".json"); ok && name != "" {
				seen[name] = true
			}
		}
	}
	names := make([]string, 0, len(seen))
	for n := range seen {
		names = append(names, n)
	}
	sort.Strings(names)
	return names, nil
}

// AuditPackage (on the compress pool: it hashes and decodes) audits one
// package on both stores and repairs what it can (internal/publish/audit).
func (c *Compress) AuditPackage(ctx context.Context, in contract.AuditPackageInput) (*contract.AuditReport, error) {
	var done atomic.Int64
	defer heartbeat.Every(ctx, 5*time.Second, func() any { return done.Load() })()
	a := &audit.Auditor{Primary: c.Primary, Mirror: c.Mirror, Buckets: c.Buckets, Parallel: c.ioParallel(), Original: c.original}
	if c.CPU != nil {
		a.CPU = c.CPU.Do
	}
	rep, err := a.Package(ctx, in.Name, audit.Options{SamplePercent: in.SamplePercent, Seed: in.Seed, Repair: in.Repair,
		WithdrawBroken: in.WithdrawBroken, Progress: func() { done.Add(1) }})
	if err != nil {
		return nil, err
	}
	newAuditMetrics().record(rep)
	return reportOf(rep), nil
}

// original opens the release archive kept in the incoming bucket when the
// version was staged (verified against its registry's integrity then).
func (c *Compress) original(ctx context.Context, name, version string) (io.ReadCloser, error) {
	body, _, err := c.Primary.Get(ctx, c.Buckets.Incoming, metadata.TarballKey(name, version))
	if errors.Is(err, objectstore.ErrNotFound) {
		return nil, nil
	}
	return body, err
}

// reportOf is the report as history holds it: counts, and the first problems.
func reportOf(rep *audit.Report) *contract.AuditReport {
	out := &contract.AuditReport{Package: rep.Package, Versions: rep.Versions, Checked: rep.Checked,
		Repaired: rep.Repaired, Unrepaired: rep.Unrepaired, Withdrawn: rep.Withdrawn, NeedOriginals: rep.NeedOriginals}
	for _, p := range rep.Problems {
		if out.ByKind == nil {
			out.ByKind = map[string]int{}
		}
		out.ByKind[p.Kind]++
		if len(out.Problems) < contract.MaxAuditProblems {
			out.Problems = append(out.Problems, p)
		}
	}
	return out
}

// auditMetrics are the audit's metrics (edgeflow_audit_*), on the compress
// pool where the audits run.
type auditMetrics struct {
	checked    prometheus.Counter
	problems   *prometheus.CounterVec
	repaired   prometheus.Counter
	unrepaired prometheus.Counter
}

var (
	auditOnce sync.Once
	auditM    *auditMetrics
)

func newAuditMetrics() *auditMetrics {
	auditOnce.Do(func() {
		kinds := make([][]string, len(audit.Kinds))
		for i, k := range audit.Kinds {
			kinds[i] = []string{k}
		}
		auditM = &auditMetrics{
			checked: metrics.NewCounter(prometheus.CounterOpts{Name: "edgeflow_audit_files_checked_total",
				Help: "Published files the audit checked, each on the primary and the mirror."}),
			problems: metrics.NewCounterVec(prometheus.CounterOpts{Name: "edgeflow_audit_problems_total",
				Help: "Problems the audit found, by kind (missing, size, sri, encoding, versionDocument, packageDocument, searchIndex, storedAt)."},
				[]string{"kind"}, kinds...),
			repaired: metrics.NewCounter(prometheus.CounterOpts{Name: "edgeflow_audit_repaired_total",
				Help: "Problems the audit repaired with bytes of the recorded SRI and size."}),
			unrepaired: metrics.NewCounter(prometheus.CounterOpts{Name: "edgeflow_audit_unrepaired_total",
				Help: "Problems the audit left unrepaired (repair off, or no good copy left)."}),
		}
	})
	return auditM
}

func (m *auditMetrics) record(rep *audit.Report) {
	m.checked.Add(float64(rep.Checked))
	for _, p := range rep.Problems {
		m.problems.WithLabelValues(p.Kind).Inc()
	}
	m.repaired.Add(float64(rep.Repaired))
	m.unrepaired.Add(float64(rep.Unrepaired))
}

// FetchOriginal downloads a published version's release from its registry
// (as its package document's catalog entry names it), verified against the
// registry's integrity, and keeps it in the incoming bucket, where an
// audit re-processes it to repair files no store holds right any more.
// Unlike staging it rejects nothing: a mismatch fails only this fetch.
func (a *Publish) FetchOriginal(ctx context.Context, in contract.OriginalRef) error {
	defer heartbeat.Every(ctx, 10*time.Second, func() any { return "fetching " + in.Name + "@" + in.Version })()
	var doc metadata.Package
	if _, err := objectstore.GetJSON(ctx, a.Primary, a.Buckets.Meta, metadata.PackageKey(in.Name), &doc); err != nil {
		return err
	}
	pkg := doc.Package
	dist, err := a.resolveDist(ctx, pkg, contract.VersionRef{PackageRef: contract.PackageRef{Name: in.Name}, Version: in.Version})
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(a.TempDir, "original-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	archive := filepath.Join(tmp, "archive.tgz")
	src := release.Sources{NPM: a.NPM, GitHub: a.GitHub, HTTP: a.HTTP, MaxBytes: a.MaxTarballBytes}
	if err := src.FetchVerified(ctx, pkg, dist, archive, nil); err != nil {
		var mismatch *registry.IntegrityError
		var tooLarge *registry.TooLargeError
		if errors.As(err, &mismatch) || errors.As(err, &tooLarge) {
			return temporal.NewNonRetryableApplicationError(fmt.Sprintf("%s@%s: %v", in.Name, in.Version, err), contract.ErrIntegrity, nil)
		}
		return err
	}
	f, err := os.Open(archive)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }() // read-only
	st, err := f.Stat()
	if err != nil {
		return err
	}
	_, err = a.Primary.Put(ctx, a.Buckets.Incoming, metadata.TarballKey(in.Name, in.Version), f, st.Size(),
		objectstore.PutOptions{Metadata: objectstore.Metadata{ContentType: "application/gzip"}})
	return err
}
