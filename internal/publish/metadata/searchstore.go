package metadata

import (
	"context"
	"errors"
	"time"

	"github.com/edgeflow/edgeflow/internal/objectstore"
)

// PutSearchEntry writes a package's entry into its shard of the search
// index in bucket, built from the package document as it is now, inside
// the shard's conditional-update loop: a concurrent commit of a newer
// version is never undone by an older one's, and packages of other shards
// do not contend at all. A commit and the audit's repair both use it.
func PutSearchEntry(ctx context.Context, store objectstore.Store, bucket, name string, now time.Time) error {
	_, err := objectstore.UpdateJSON(ctx, store, bucket, SearchShardKey(SearchShardOf(name)),
		func(ix *Index, _ bool) (bool, error) {
			var p Package
			if _, err := objectstore.GetJSON(ctx, store, bucket, PackageKey(name), &p); err != nil {
				return false, err
			}
			var latest *Version
			var v Version
			switch _, err := objectstore.GetJSON(ctx, store, bucket, VersionKey(p.Name, p.Latest), &v); {
			case err == nil:
				latest = &v
			case !errors.Is(err, objectstore.ErrNotFound):
				return false, err
			}
			return ix.Put(&p, latest, now), nil
		})
	return err
}
