package migrate_test

import (
	"bytes"
	"context"
	"crypto/sha512"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/worker"

	pubacts "github.com/edgeflow/edgeflow/activities/publish"
	"github.com/edgeflow/edgeflow/internal/migrate/migratetest"
	"github.com/edgeflow/edgeflow/internal/objectstore"
	"github.com/edgeflow/edgeflow/internal/publish/edge"
	"github.com/edgeflow/edgeflow/internal/publish/metadata"
	"github.com/edgeflow/edgeflow/internal/publish/rebuild"
	publish "github.com/edgeflow/edgeflow/workflows/publish/contract"
)

func sri(data []byte) string {
	sum := sha512.Sum512(data)
	return "sha512-" + base64.StdEncoding.EncodeToString(sum[:])
}

// TestCatalogImportServesTheOldCDNByteForByte imports an older CDN's bucket
// (libraries under ajax/libs/, with precompressed twins) into Publish with
// one command, then reads the imported versions through the edge: the
// bytes and SRIs are the old CDN's.
func TestCatalogImportServesTheOldCDNByteForByte(t *testing.T) {
	startWorker(t, 3)
	ctx := context.Background()
	stamp := time.Now().UnixNano() % 1e9
	buckets := metadata.Buckets{Files: fmt.Sprintf("imp-files-%d", stamp), Mirror: fmt.Sprintf("imp-mirror-%d", stamp),
		Meta: fmt.Sprintf("imp-meta-%d", stamp), MirrorMeta: fmt.Sprintf("imp-mmeta-%d", stamp), Incoming: fmt.Sprintf("imp-in-%d", stamp)}
	if err := objectstore.EnsureBuckets(ctx, env.Store, buckets.Files, buckets.Mirror, buckets.Meta, buckets.MirrorMeta, buckets.Incoming); err != nil {
		t.Fatal(err)
	}
	// The publish pool, which rebuilds the metadata, with a catalog that
	// knows one of the libraries.
	catalogDir := t.TempDir()
	entry := `{"name": "lib-a", "description": "A library from the old CDN", "license": "MIT", "filename": "lib-a.min.js",
		"autoupdate": {"source": "npm", "target": "lib-a", "fileMap": [{"basePath": "dist", "files": ["*.js"]}]}}`
	if err := os.MkdirAll(filepath.Join(catalogDir, "l"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(catalogDir, "l", "lib-a.json"), []byte(entry), 0o644); err != nil {
		t.Fatal(err)
	}
	pw := worker.New(env.Client, publish.TaskQueue, worker.Options{})
	pubacts.RegisterPublish(pw, &pubacts.Publish{Stores: pubacts.Stores{Primary: env.Store, Mirror: env.Store, Buckets: buckets}, CatalogDir: catalogDir})
	if err := pw.Start(); err != nil {
		t.Fatal(err)
	}
	defer pw.Stop()

	js100 := []byte("/*! lib-a 1.0.0 */window.a=1;")
	js110 := []byte("/*! lib-a 1.1.0 */window.a=2;")
	old := []migratetest.Object{
		{Key: "ajax/libs/lib-a/1.0.0/lib-a.min.js", Data: js100, Meta: objectstore.Metadata{ContentType: "application/javascript"}},
		{Key: "ajax/libs/lib-a/1.0.0/lib-a.min.js.br", Data: []byte("brotli bytes of 1.0.0")},
		{Key: "ajax/libs/lib-a/1.0.0/lib-a.min.js.gz", Data: []byte("gzip bytes of 1.0.0!")},
		{Key: "ajax/libs/lib-a/1.1.0/lib-a.min.js", Data: js110},
		{Key: "ajax/libs/lib-a/1.1.0/sub dir/extra.css", Data: []byte("a{color:red}")},
		{Key: "ajax/libs/other-lib/2.0.0-beta.1/o.js", Data: []byte("o()")},
		{Key: "ajax/libs/lib-a/latest/lib-a.min.js", Data: js110},
		{Key: "ajax/libs/not a lib!/1.0.0/x.js", Data: []byte("x")},
		{Key: "index.html", Data: []byte("<html>outside the libraries</html>")},
	}
	oldBucket := migratetest.Bucket(t, env.Store2, "old-cdn")
	migratetest.Seed(t, env.Store2, oldBucket, old)

	importEnv := []string{"MIGRATE_DEST_ACCESS_KEY=", "MIGRATE_DEST_SECRET_KEY=", "MIRROR_S3_ENDPOINT=",
		"MIGRATE_SOURCE_ACCESS_KEY=" + env.MinIO2.AccessKey, "MIGRATE_SOURCE_SECRET_KEY=" + env.MinIO2.SecretKey,
		"BUCKET_FILES=" + buckets.Files, "BUCKET_MIRROR=" + buckets.Mirror, "BUCKET_META=" + buckets.Meta,
		"BUCKET_MIRROR_META=" + buckets.MirrorMeta, "BUCKET_INCOMING=" + buckets.Incoming}
	args := []string{"import-catalog", "--job", fmt.Sprintf("imp-%d", stamp), "--json",
		"--source", "s3://" + oldBucket + "/ajax/libs/", "--source-endpoint", env.MinIO2.Endpoint, "--source-insecure"}
	stdout, stderr, code := migrateCLI(t, importEnv, args...)
	if code != 0 {
		t.Fatalf("import exited %d\n%s\n%s", code, stdout, stderr)
	}
	var out struct {
		Files struct {
			Copied int64 `json:"copied"`
		} `json:"files"`
		Mirror *struct {
			Copied int64 `json:"copied"`
		} `json:"mirror"`
		Rebuild rebuild.Summary `json:"rebuild"`
	}
	oneJSON(t, stdout, &out)
	// Everything under ajax/libs/ (8 objects): folders that are not
	// NAME/VERSION are copied too, but not published.
	if out.Files.Copied != 8 || out.Mirror == nil || out.Mirror.Copied != 8 || out.Rebuild.Versions != 3 || out.Rebuild.Packages != 2 {
		t.Fatalf("import: %s", stdout)
	}
	if !strings.Contains(strings.Join(out.Rebuild.Skipped, "|"), "lib-a/latest/") || !strings.Contains(strings.Join(out.Rebuild.Skipped, "|"), "not a lib!/") {
		t.Fatalf("skipped: %v", out.Rebuild.Skipped)
	}
	// Byte for byte in both buckets, under NAME/VERSION/FILE.
	for _, o := range old[:8] {
		key := strings.TrimPrefix(o.Key, "ajax/libs/")
		for _, b := range []string{buckets.Files, buckets.Mirror} {
			data, _, err := objectstore.ReadAll(ctx, env.Store, b, key)
			if err != nil || !bytes.Equal(data, o.Data) {
				t.Fatalf("%s/%s: %q %v", b, key, data, err)
			}
		}
	}

	// The edge serves the imported versions, with the old CDN's bytes and SRIs.
	edgeSrv := httptest.NewServer(edge.New(edge.Config{Primary: env.Store, Mirror: env.Store, Buckets: buckets}))
	defer edgeSrv.Close()
	get := func(path string, header ...string) (*http.Response, []byte) {
		t.Helper()
		req, _ := http.NewRequest("GET", edgeSrv.URL+path, nil)
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp, body
	}
	if resp, body := get("/ajax/libs/lib-a/1.1.0/lib-a.min.js"); resp.StatusCode != 200 || !bytes.Equal(body, js110) {
		t.Fatalf("edge: %d %q", resp.StatusCode, body)
	}
	if resp, body := get("/ajax/libs/lib-a/1.0.0/lib-a.min.js", "Accept-Encoding", "br"); resp.StatusCode != 200 || string(body) != "brotli bytes of 1.0.0" {
		t.Fatalf("edge, brotli: %d %q %v", resp.StatusCode, body, resp.Header)
	}
	_, body := get("/libraries/lib-a")
	var lib struct {
		Version     string `json:"version"`
		SRI         string `json:"sri"`
		Description string `json:"description"`
	}
	if err := json.Unmarshal(body, &lib); err != nil || lib.Version != "1.1.0" || lib.SRI != sri(js110) || lib.Description != "A library from the old CDN" {
		t.Fatalf("library: %+v %v\n%s", lib, err, body)
	}
	var v metadata.Version
	if _, err := objectstore.GetJSON(ctx, env.Store, buckets.MirrorMeta, metadata.VersionKey("lib-a", "1.0.0"), &v); err != nil {
		t.Fatalf("mirror metadata: %v", err)
	}
	if f, ok := v.Lookup("lib-a.min.js"); !ok || f.SRI != sri(js100) || f.BrotliSize != 21 || f.GzipSize != 20 || len(v.Files) != 1 {
		t.Fatalf("version document %+v", v)
	}

	// Again: nothing is copied or published twice.
	stdout, stderr, code = migrateCLI(t, importEnv, args...)
	oneJSON(t, stdout, &out)
	if code != 0 || out.Files.Copied != 0 || out.Rebuild.Versions != 0 || out.Rebuild.AlreadyPublished != 3 {
		t.Fatalf("second import (exit %d): %s\n%s", code, stdout, stderr)
	}
}
