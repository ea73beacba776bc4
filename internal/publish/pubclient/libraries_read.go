package pubclient

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"golang.org/x/sync/errgroup"

	"github.com/edgeflow/edgeflow/internal/objectstore"
	"github.com/edgeflow/edgeflow/internal/publish/catalog"
	"github.com/edgeflow/edgeflow/internal/publish/metadata"
	"github.com/edgeflow/edgeflow/internal/publish/registry"
	"github.com/edgeflow/edgeflow/workflows/publish/contract"
)

// Libraries reads what the console shows of Publish: the workers' catalog,
// the package documents, registry listings and rejection markers in the
// metadata bucket, and the runs Temporal's visibility retains.
type Libraries struct {
	Temporal   client.Client
	Store      objectstore.Store // the primary store, which holds Meta
	Meta       string            // the metadata bucket (BUCKET_META)
	CatalogDir string            // the workers' catalog (CATALOG_DIR)
}

// Bounds on what one request reads from visibility.
const (
	maxRuns         = 1000 // a library's retained PublishVersion runs
	maxFailureReads = 20   // failed runs whose error is read (newest first)
)

func (l Libraries) catalog() ([]catalog.Package, error) {
	if l.CatalogDir == "" {
		return nil, errors.New("catalog: no catalog directory configured (CATALOG_DIR)")
	}
	if _, err := os.Stat(l.CatalogDir); err != nil {
		return nil, fmt.Errorf("catalog: %w", err)
	}
	// Entries that do not load are left out: `catalog validate` and the
	// update check report them.
	pkgs, _ := catalog.Load(l.CatalogDir)
	return pkgs, nil
}

func (l Libraries) store() error {
	if l.Store == nil || l.Meta == "" {
		return errors.New("metadata store: not configured (S3_ENDPOINT, BUCKET_META)")
	}
	return nil
}

// List returns the catalog's entries from index start, at most n, with the
// total, each with its latest published version, last check and state.
func (l Libraries) List(ctx context.Context, start, n int) ([]Library, int, error) {
	pkgs, err := l.catalog()
	if err != nil {
		return nil, 0, err
	}
	total := len(pkgs)
	pkgs = pkgs[min(start, total):min(start+n, total)]
	if len(pkgs) == 0 {
		return []Library{}, total, nil
	}
	if err := l.store(); err != nil {
		return nil, 0, err
	}
	names := make([]string, len(pkgs))
	for i, p := range pkgs {
		names[i] = p.Name
	}
	running, err := l.running(ctx, names)
	if err != nil {
		return nil, 0, err
	}
	out := make([]Library, len(pkgs))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(8)
	for i, p := range pkgs {
		g.Go(func() error {
			doc, checked, err := l.documents(gctx, p.Name)
			if err != nil {
				return err
			}
			out[i] = libraryOf(p, doc, checked, running[p.Name])
			return nil
		})
	}
	return out, total, g.Wait()
}

// Get returns library name with its versions; ErrUnknownLibrary when the
// catalog has no loadable entry of that name.
func (l Libraries) Get(ctx context.Context, name string) (LibraryDetail, error) {
	pkgs, err := l.catalog()
	if err != nil {
		return LibraryDetail{}, err
	}
	var pkg *catalog.Package
	for i := range pkgs {
		if pkgs[i].Name == name {
			pkg = &pkgs[i]
		}
	}
	if pkg == nil {
		return LibraryDetail{}, ErrUnknownLibrary
	}
	if err := l.store(); err != nil {
		return LibraryDetail{}, err
	}
	doc, checked, err := l.documents(ctx, name)
	if err != nil {
		return LibraryDetail{}, err
	}
	rejections, err := metadata.Rejections(ctx, l.Store, l.Meta, name, pkg.Selection())
	if err != nil {
		return LibraryDetail{}, err
	}
	var listing registry.CachedListing
	if _, err := objectstore.GetJSON(ctx, l.Store, l.Meta, metadata.RegistryCacheKey(name), &listing); err != nil && !errors.Is(err, objectstore.ErrNotFound) {
		return LibraryDetail{}, err
	}
	listed := make([]string, 0, len(listing.Versions))
	for v := range listing.Versions {
		listed = append(listed, v)
	}
	runs, err := l.runs(ctx, name)
	if err != nil {
		return LibraryDetail{}, err
	}
	// Open as the list says it: any run of it (a check, its lane, a version).
	running, err := l.running(ctx, []string{name})
	if err != nil {
		return LibraryDetail{}, err
	}
	d := LibraryDetail{Library: libraryOf(*pkg, doc, checked, running[name]),
		Versions: versionsOf(*pkg, doc, rejections, runs, listed)}
	l.readFailures(ctx, d.Versions)
	l.readSkipped(ctx, name, d.Versions)
	return d, nil
}

// documents reads the package document (nil: nothing published) and when
// the source's listing was last stored.
func (l Libraries) documents(ctx context.Context, name string) (*metadata.Package, time.Time, error) {
	var doc metadata.Package
	found := true
	if _, err := objectstore.GetJSON(ctx, l.Store, l.Meta, metadata.PackageKey(name), &doc); errors.Is(err, objectstore.ErrNotFound) {
		found = false
	} else if err != nil {
		return nil, time.Time{}, err
	}
	var checked time.Time
	if info, err := l.Store.Stat(ctx, l.Meta, metadata.RegistryCacheKey(name)); err == nil {
		checked = info.LastModified.UTC()
	} else if !errors.Is(err, objectstore.ErrNotFound) {
		return nil, time.Time{}, err
	}
	if !found {
		return nil, checked, nil
	}
	return &doc, checked, nil
}

// quote is a visibility query's string literal (catalog names and versions
// hold no quote, but the query must not depend on that).
func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", `\'`) + "'" }

// running reports which of names have an open run (a check, a lane or a
// version), by their Package search attribute.
func (l Libraries) running(ctx context.Context, names []string) (map[string]bool, error) {
	out := map[string]bool{}
	if len(names) == 0 || l.Temporal == nil {
		return out, nil
	}
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = quote(n)
	}
	query := contract.PackageKey.GetName() + " IN (" + strings.Join(quoted, ", ") + ") AND ExecutionStatus = 'Running'"
	return out, l.visit(ctx, query, len(names)*4, func(e runInfo) { out[e.pkg] = true })
}

// runs are library name's retained PublishVersion runs, newest first.
func (l Libraries) runs(ctx context.Context, name string) ([]Run, error) {
	var out []Run
	if l.Temporal == nil {
		return nil, nil
	}
	query := "WorkflowType = " + quote(contract.WorkflowTypePublishVersion) + " AND " + contract.PackageKey.GetName() + " = " + quote(name)
	err := l.visit(ctx, query, maxRuns, func(e runInfo) {
		out = append(out, Run{Version: e.version, WorkflowID: e.id, RunID: e.runID, Running: e.status == enums.WORKFLOW_EXECUTION_STATUS_RUNNING,
			Failed: failedStatus(e.status), Closed: e.closed})
	})
	return out, err
}

func failedStatus(s enums.WorkflowExecutionStatus) bool {
	switch s {
	case enums.WORKFLOW_EXECUTION_STATUS_FAILED, enums.WORKFLOW_EXECUTION_STATUS_TIMED_OUT,
		enums.WORKFLOW_EXECUTION_STATUS_TERMINATED, enums.WORKFLOW_EXECUTION_STATUS_CANCELED:
		return true
	}
	return false
}

type runInfo struct {
	pkg, version, id, runID string
	status                  enums.WorkflowExecutionStatus
	closed                  time.Time
}

// visit calls f on each run query matches, newest first, at most limit.
func (l Libraries) visit(ctx context.Context, query string, limit int, f func(runInfo)) error {
	dc := converter.GetDefaultDataConverter()
	var token []byte
	seen := 0
	for {
		resp, err := l.Temporal.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: query, PageSize: 100, NextPageToken: token})
		if err != nil {
			return fmt.Errorf("visibility: %w", err)
		}
		for _, e := range resp.GetExecutions() {
			fields := e.GetSearchAttributes().GetIndexedFields()
			var ri runInfo
			_ = dc.FromPayload(fields[contract.PackageKey.GetName()], &ri.pkg)
			_ = dc.FromPayload(fields[contract.VersionKey.GetName()], &ri.version)
			ri.id, ri.runID, ri.status = e.GetExecution().GetWorkflowId(), e.GetExecution().GetRunId(), e.GetStatus()
			if e.GetCloseTime() != nil {
				ri.closed = e.GetCloseTime().AsTime().UTC()
			}
			f(ri)
			if seen++; seen >= limit {
				return nil
			}
		}
		if token = resp.GetNextPageToken(); len(token) == 0 {
			return nil
		}
	}
}

// maxSkippedReads bounds the version documents a library's page reads for
// their skipped files: the newest published versions'.
const maxSkippedReads = 10

// readSkipped fills in the skipped files of the newest published versions
// from their version documents; a document that cannot be read leaves its
// version's list empty (the page still shows).
func (l Libraries) readSkipped(ctx context.Context, name string, vs []Version) {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(4)
	read := 0
	for i := range vs {
		if (vs[i].State != StatePublished && vs[i].State != StateIncomplete) || read >= maxSkippedReads {
			continue
		}
		read++
		g.Go(func() error {
			var doc metadata.Version
			if _, err := objectstore.GetJSON(gctx, l.Store, l.Meta, metadata.VersionKey(name, vs[i].Version), &doc); err == nil {
				vs[i].Skipped = doc.Skipped
			}
			return nil
		})
	}
	_ = g.Wait() // every read is best effort
}

// readFailures fills in the error of the newest failed versions' runs, as
// the client decodes it (through the payload codec, if one is set).
func (l Libraries) readFailures(ctx context.Context, vs []Version) {
	read := 0
	for i := range vs {
		if vs[i].State != StateFailed || vs[i].RunID == "" || read >= maxFailureReads {
			continue
		}
		read++
		err := l.Temporal.GetWorkflow(ctx, vs[i].WorkflowID, vs[i].RunID).Get(ctx, nil)
		if cause := errors.Unwrap(err); cause != nil {
			err = cause
		}
		if err != nil {
			vs[i].Reason = err.Error()
		}
	}
}
