package integration

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	"golang.org/x/sync/errgroup"

	"github.com/edgeflow/edgeflow/internal/objectstore"
	"github.com/edgeflow/edgeflow/internal/publish/benchdata"
	"github.com/edgeflow/edgeflow/internal/publish/metadata"
	"github.com/edgeflow/edgeflow/internal/publish/transform"
	"github.com/edgeflow/edgeflow/workflows/publish/contract"
)

// baselineHash is the plain Go pool the audit is measured against: the
// same objects (each file and its .br/.gz on the primary and the mirror),
// read with the same parallelism and SHA-512-hashed, nothing else.
func baselineHash(ctx context.Context, doc metadata.Version) (int64, error) {
	var hashed atomic.Int64
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(acts.IOParallel)
	for _, f := range doc.Files {
		g.Go(func() error {
			key := f.Key(doc.Name, doc.Version)
			keys := []string{key}
			if f.BrotliSize > 0 {
				keys = append(keys, key+metadata.BrotliSuffix)
			}
			if f.GzipSize > 0 {
				keys = append(keys, key+metadata.GzipSuffix)
			}
			for _, bucket := range []string{buckets.Files, buckets.Mirror} {
				for _, k := range keys {
					body, _, err := env.Store.Get(gctx, bucket, k)
					if err != nil {
						return err
					}
					_, _, err = transform.SRIOf(body)
					body.Close()
					if err != nil {
						return err
					}
				}
			}
			hashed.Add(1)
			return nil
		})
	}
	err := g.Wait()
	return hashed.Load(), err
}

// BenchmarkAuditPackage audits a published 1,000-file package (10 MB of
// generated scripts and stylesheets, with their minified twins, .br and .gz)
// end to end — AuditCatalog on the dev server, its AuditPackage on the
// compress pool, every file on both stores — and compares its files/s with
// baselineHash over the same objects in the same run (target ≥ 0.8×).
func BenchmarkAuditPackage(b *testing.B) {
	startWorkersB(b)
	ctx := context.Background()
	files := benchdata.Package(11, 1000, 10<<20)
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		name := fmt.Sprintf("auditbench%d", benchSeq.Add(1))
		npm.Add(name, "1.0.0", tarballOf(files))
		publishB(b, benchPackage(name), "1.0.0")
		var doc metadata.Version
		if _, err := objectstore.GetJSON(ctx, env.Store, buckets.Meta, metadata.VersionKey(name, "1.0.0"), &doc); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()

		// Alternating, best of two each: both see the same warm store.
		var base, audit time.Duration = 1 << 62, 1 << 62
		var checked int
		for range 2 {
			start := time.Now()
			if _, err := baselineHash(ctx, doc); err != nil {
				b.Fatal(err)
			}
			base = min(base, time.Since(start))

			start = time.Now()
			run, err := env.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: contract.AuditCatalogWorkflowID(name), TaskQueue: contract.TaskQueue},
				contract.WorkflowTypeAuditCatalog, contract.AuditInput{Only: []string{name}})
			if err != nil {
				b.Fatal(err)
			}
			var st contract.AuditStats
			if err := run.Get(ctx, &st); err != nil {
				b.Fatal(err)
			}
			audit = min(audit, time.Since(start))
			if st.ProblemCount() != 0 || st.Checked != len(doc.Files) {
				b.Fatalf("audit of an intact package: %d checked of %d, problems %v", st.Checked, len(doc.Files), st.Problems)
			}
			checked = st.Checked
		}
		baseRate := float64(len(doc.Files)) / base.Seconds()
		auditRate := float64(checked) / audit.Seconds()
		b.ReportMetric(float64(len(doc.Files)), "files")
		b.ReportMetric(baseRate, "baseline-files/s")
		b.ReportMetric(auditRate, "audit-files/s")
		b.ReportMetric(auditRate/baseRate, "audit/baseline")
	}
}
