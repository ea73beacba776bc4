package publish_test

import (
	"context"
	"errors"
	"testing"

	"go.temporal.io/sdk/temporal"

	"github.com/edgeflow/edgeflow/internal/objectstore"
	"github.com/edgeflow/edgeflow/internal/publish/metadata"
	"github.com/edgeflow/edgeflow/internal/publish/transform"
	"github.com/edgeflow/edgeflow/workflows/publish/contract"
)

// A version document whose storedAt names another package's file (the
// document written by whoever could write the metadata bucket) must not
// make Materialize copy that file into this package: refused for good,
// nothing copied.
func TestMaterializeRefusesAnOutOfPrefixStoredAt(t *testing.T) {
	p := newPools(t, "storedat")
	ctx := context.Background()
	theirs := []byte("lib-extra's own file\n")
	for _, bucket := range []string{p.buckets.Files, p.buckets.Mirror} {
		if err := objectstore.PutBytes(ctx, env.Store, bucket, "lib-extra/1.0.0/a.js", theirs, objectstore.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	doc := metadata.Version{Name: "lib", Version: "2.0.0", Files: []metadata.File{
		{Path: "a.js", Size: int64(len(theirs)), SRI: transform.SRI(theirs), StoredAt: "lib-extra/1.0.0/a.js"}}}
	if err := objectstore.PutJSON(ctx, env.Store, p.buckets.Meta, metadata.VersionKey("lib", "2.0.0"), doc); err != nil {
		t.Fatal(err)
	}
	var pkg metadata.Package
	pkg.Name, pkg.Versions, pkg.Latest, pkg.Incomplete = "lib", []string{"2.0.0"}, "2.0.0", []string{"2.0.0"}
	if err := objectstore.PutJSON(ctx, env.Store, p.buckets.Meta, metadata.PackageKey("lib"), pkg); err != nil {
		t.Fatal(err)
	}
	err := run(t, p, nil, p.pub.Materialize, contract.PackageVersion{Name: "lib", Version: "2.0.0"})
	var appErr *temporal.ApplicationError
	if !errors.As(err, &appErr) || !appErr.NonRetryable() || appErr.Type() != contract.ErrStoredAt {
		t.Fatalf("Materialize = %v; want a non-retryable %s", err, contract.ErrStoredAt)
	}
	for _, bucket := range []string{p.buckets.Files, p.buckets.Mirror} {
		if exists(t, bucket, metadata.FileKey("lib", "2.0.0", "a.js")) {
			t.Errorf("%s: another package's file was copied into lib@2.0.0", bucket)
		}
	}
}
