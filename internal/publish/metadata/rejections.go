package metadata

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/edgeflow/edgeflow/internal/objectstore"
)

// Rejections reads package name's rejection markers in bucket and returns
// those that still hold for its fileMap fingerprint selection (catalog
// Package.Selection), by version. The update check skips their versions;
// the console shows them with their reason. A marker that cannot be read is
// an error to report (fix or delete it), not a rejection to forget.
func Rejections(ctx context.Context, store objectstore.Store, bucket, name, selection string) ([]Rejection, error) {
	markers, err := objectstore.ListAll(ctx, store, bucket, RejectedPrefix(name))
	if err != nil {
		return nil, fmt.Errorf("list rejection markers: %w", err)
	}
	var out []Rejection
	for _, m := range markers {
		var r Rejection
		switch _, err := objectstore.GetJSON(ctx, store, bucket, m.Key, &r); {
		case errors.Is(err, objectstore.ErrNotFound):
			continue // deleted by an operator since the listing
		case err != nil:
			return nil, fmt.Errorf("rejection marker %s/%s: %w (fix or delete it)", bucket, m.Key, err)
		}
		if r.Holds(selection) {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b Rejection) int { return strings.Compare(a.Version, b.Version) })
	return out, nil
}

// RejectedVersions is Rejections as a set: each version whose marker holds,
// with the marker's reason. The update check skips them and the edge
// refuses them with that reason.
func RejectedVersions(ctx context.Context, store objectstore.Store, bucket, name, selection string) (map[string]string, error) {
	markers, err := Rejections(ctx, store, bucket, name, selection)
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(markers))
	for _, r := range markers {
		out[r.Version] = r.Reason
	}
	return out, nil
}
