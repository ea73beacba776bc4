package edge

import (
	"bytes"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/edgeflow/edgeflow/internal/objectstore"
	"github.com/edgeflow/edgeflow/internal/publish/catalog"
	"github.com/edgeflow/edgeflow/internal/publish/metadata"
)

func TestOutOfPrefixStoredAtIsRefused(t *testing.T) {
	// A version document (written by whoever could write a metadata bucket)
	// whose file names another package's object as its storedAt: never read.
	ctx := t.Context()
	st, b := testEnv.store, testEnv.buckets
	secret := []byte("peek-secret's own bytes\n")
	if err := publishVersion(ctx, st, b, catalog.Package{Name: "peek-secret", Filename: "a.js"}, "1.0.0",
		[]fixtureFile{{Path: "a.js", Data: secret}}, time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := publishVersion(ctx, st, b, catalog.Package{Name: "peek", Filename: "a.js"}, "1.0.0",
		[]fixtureFile{{Path: "a.js", Data: bytes.Repeat([]byte("p"), len(secret))}}, time.Now()); err != nil {
		t.Fatal(err)
	}
	forged := *testVersionDoc(t, "peek-secret", "1.0.0")
	forged.Name, forged.Version = "peek", "1.1.0"
	forged.Files = slices.Clone(forged.Files)
	forged.Files[0].StoredAt = metadata.FileKey("peek-secret", "1.0.0", "a.js")
	if err := objectstore.PutJSON(ctx, st, b.Meta, metadata.VersionKey("peek", "1.1.0"), &forged); err != nil {
		t.Fatal(err)
	}
	if _, err := objectstore.UpdateJSON(ctx, st, b.Meta, metadata.PackageKey("peek"), func(p *metadata.Package, _ bool) (bool, error) {
		p.Versions = append(p.Versions, "1.1.0")
		return true, nil
	}); err != nil {
		t.Fatal(err)
	}

	_, ts, logs := newTestEdge(t, nil)
	for _, ae := range []string{"", "br", "gzip"} {
		resp := get(t, ts.URL+"/ajax/libs/peek/1.1.0/a.js", map[string]string{"Accept-Encoding": ae})
		if resp.StatusCode != http.StatusBadGateway || bytes.Contains(resp.body, []byte("peek-secret")) ||
			resp.Header.Get("Cache-Control") != "no-store" {
			t.Fatalf("%q: status %d, Cache-Control %q, body %q; want 502, no-store and none of peek-secret's bytes",
				ae, resp.StatusCode, resp.Header.Get("Cache-Control"), resp.body)
		}
	}
	if !strings.Contains(logs.String(), "storedAt") {
		t.Errorf("the refusal is not logged:\n%s", logs)
	}
	// peek's own version is served as ever.
	if resp := get(t, ts.URL+"/ajax/libs/peek/1.0.0/a.js", nil); resp.StatusCode != http.StatusOK {
		t.Errorf("peek@1.0.0: status %d", resp.StatusCode)
	}
}
