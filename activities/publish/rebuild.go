package publish

import (
	"context"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"

	"github.com/edgeflow/edgeflow/internal/heartbeat"
	"github.com/edgeflow/edgeflow/internal/publish/catalog"
	"github.com/edgeflow/edgeflow/internal/publish/rebuild"
	"github.com/edgeflow/edgeflow/workflows/publish/contract"
)

// rebuildProgress is RebuildMetadata's heartbeat: the last package done and
// the totals so far, from which a retry resumes.
type rebuildProgress struct {
	After string          `json:"after"`
	Done  rebuild.Summary `json:"done"`
}

// RebuildMetadata writes the version, package and search documents of
// every version in the files bucket that has none: a catalog Migrate
// imported byte for byte from an older CDN. SRIs are hashed from the stored
// bytes; catalog entries come from the workers' catalog where it has them.
func (a *Publish) RebuildMetadata(ctx context.Context, in contract.RebuildInput) (*contract.RebuildResult, error) {
	var prev rebuildProgress
	if activity.HasHeartbeatDetails(ctx) {
		_ = activity.GetHeartbeatDetails(ctx, &prev)
	}
	var mu sync.Mutex
	progress := prev
	stop := heartbeat.Every(ctx, 10*time.Second, func() any {
		mu.Lock()
		defer mu.Unlock()
		return progress
	})
	defer stop()
	sum, err := rebuild.Run(ctx, rebuild.Stores{Primary: a.Primary, Mirror: a.Mirror, Buckets: a.Buckets}, rebuild.Options{
		Catalog: func(name string) (catalog.Package, bool) {
			p, err := catalog.Find(a.CatalogDir, name)
			return p, err == nil
		},
		After: prev.After, Parallel: a.ioParallel(), Now: a.now,
		Done: func(name string, s rebuild.Summary) {
			mu.Lock()
			defer mu.Unlock()
			progress = rebuildProgress{After: name, Done: s}
		},
	})
	if err != nil {
		return nil, err
	}
	p := prev.Done
	activity.GetLogger(ctx).Info("metadata rebuilt", "import", in.Import, "packages", p.Packages+sum.Packages, "versions", p.Versions+sum.Versions)
	return &contract.RebuildResult{Packages: p.Packages + sum.Packages, Versions: p.Versions + sum.Versions, Files: p.Files + sum.Files,
		Bytes: p.Bytes + sum.Bytes, AlreadyPublished: p.AlreadyPublished + sum.AlreadyPublished,
		Skipped: append(p.Skipped, sum.Skipped...)}, nil
}
