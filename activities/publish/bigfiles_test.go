package publish_test

import (
	"bytes"
	"context"
	"crypto/sha512"
	"encoding/base64"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/andybalholm/brotli"

	"github.com/edgeflow/edgeflow/internal/objectstore"
	"github.com/edgeflow/edgeflow/internal/publish/benchdata"
	"github.com/edgeflow/edgeflow/internal/publish/catalog"
	"github.com/edgeflow/edgeflow/internal/publish/metadata"
	"github.com/edgeflow/edgeflow/internal/publish/plan"
	"github.com/edgeflow/edgeflow/internal/publish/registry/registrytest"
	"github.com/edgeflow/edgeflow/internal/publish/transform"
	"github.com/edgeflow/edgeflow/workflows/publish/contract"
)

// The limits are spoken of in three packages: they must agree.
func TestSizeLimitsAgree(t *testing.T) {
	if catalog.DefaultMaxFileSize != transform.DefaultMaxFileSize || catalog.MaxFileSizeLimit != transform.MaxFileSizeLimit {
		t.Error("catalog's and transform's file size limits differ")
	}
	if plan.OwnBatchBytes != transform.MaxMinifySize {
		t.Error("the files processed in memory are not those that may be minified")
	}
}

// A release with a file over the in-memory bound (streamed through its own
// batch), a script over the library's own maxFileSize, a font and an image:
// every file is published byte for byte with the SRI of its bytes; the
// streamed one gets twins at its size's levels, recorded; the one over the
// limit, the font and the image are stored as is, without twins; and the
// version document lists the one over the limit, with why.
func TestLargeAndUncompressedFilesPublish(t *testing.T) {
	p := newPools(t, "big")
	var raw map[string]any
	if err := json.Unmarshal([]byte(entry("big", "**")), &raw); err != nil {
		t.Fatal(err)
	}
	raw["maxFileSize"] = 18 << 20
	pkgJSON, _ := json.Marshal(raw)
	p.addToCatalog(t, "big", string(pkgJSON))

	var sourceMap bytes.Buffer
	if err := benchdata.SourceMap(&sourceMap, 7, plan.OwnBatchBytes+(1<<20)); err != nil {
		t.Fatal(err)
	}
	overLimit := benchdata.JS(8, 18<<20+100) // streamed too, stored as is
	font := bytes.Repeat([]byte("wOF2\x00\x01 not really a font "), 2000)
	image := []byte("\x89PNG\r\n\x1a\n not really an image")
	small := []byte("export const big = true;\n")
	want := map[string][]byte{"app.js.map": sourceMap.Bytes(), "vendor.js": overLimit, "icons.woff2": font, "logo.png": image, "index.js": small}
	entries := []registrytest.Entry{{Name: "package.json", Body: `{"version":"1.0.0"}`}}
	for name, data := range want {
		entries = append(entries, registrytest.Entry{Name: "dist/" + name, Body: string(data)})
	}
	p.npm.Add("big", "1.0.0", registrytest.NPMTarball(entries...))

	ref := contract.VersionRef{PackageRef: contract.PackageRef{Name: "big"}, Version: "1.0.0"}
	summary := stageAndCompress(t, p, ref)
	if summary.Options.MaxFileSize != 18<<20 {
		t.Errorf("options %+v: the library's maxFileSize is not used", summary.Options)
	}
	var res contract.CommitResult
	if err := run(t, p, &res, p.pub.Commit, contract.PackageVersion{Name: "big", Version: "1.0.0"}); err != nil {
		t.Fatal(err)
	}
	var doc metadata.Version
	if _, err := objectstore.GetJSON(context.Background(), env.Store, p.buckets.Meta, metadata.VersionKey("big", "1.0.0"), &doc); err != nil {
		t.Fatal(err)
	}
	wantSkipped := []metadata.SkippedFile{{Path: "vendor.js", Size: int64(len(overLimit)),
		Reason: "over the library's size limit (18 MiB): stored as is, without a minified twin, brotli or gzip"}}
	if got, want := mustJSON(t, doc.Skipped), mustJSON(t, wantSkipped); got != want {
		t.Errorf("skipped %s, want %s", got, want)
	}
	twins := map[string]bool{"app.js.map": true, "index.js": true, "index.min.js": true}
	for name, data := range want {
		f, ok := doc.Lookup(name)
		if !ok {
			t.Errorf("%s is not published", name)
			continue
		}
		sum := sha512.Sum512(data)
		if f.Size != int64(len(data)) || f.SRI != "sha512-"+base64.StdEncoding.EncodeToString(sum[:]) {
			t.Errorf("%s: size %d, SRI %s", name, f.Size, f.SRI)
		}
		for _, bucket := range []string{p.buckets.Files, p.buckets.Mirror} {
			stored, _, err := objectstore.ReadAll(context.Background(), env.Store, bucket, metadata.FileKey("big", "1.0.0", name))
			if err != nil || !bytes.Equal(stored, data) {
				t.Errorf("%s/%s: %d bytes stored, %v", bucket, name, len(stored), err)
			}
			hasBr, hasGz := exists(t, bucket, metadata.FileKey("big", "1.0.0", name)+".br"), exists(t, bucket, metadata.FileKey("big", "1.0.0", name)+".gz")
			if hasBr != twins[name] || hasGz != twins[name] || (f.BrotliSize > 0) != twins[name] || (f.GzipSize > 0) != twins[name] {
				t.Errorf("%s/%s: .br %v .gz %v (recorded %d, %d), want twins %v", bucket, name, hasBr, hasGz, f.BrotliSize, f.GzipSize, twins[name])
			}
		}
		if _, ok := doc.Lookup(strings.TrimSuffix(name, ".js") + ".min.js"); ok && name == "vendor.js" {
			t.Error("the script over the limit got a minified twin")
		}
	}
	// The streamed file's twin decodes to its bytes, made at the levels of
	// its size, which the document records.
	f, _ := doc.Lookup("app.js.map")
	if levels := transform.LevelsFor(f.Size); f.BrotliLevel != levels.Brotli || f.GzipLevel != levels.Gzip {
		t.Errorf("app.js.map recorded at %d/%d, its size's levels are %+v", f.BrotliLevel, f.GzipLevel, levels)
	}
	br, _, err := objectstore.ReadAll(context.Background(), env.Store, p.buckets.Files, metadata.FileKey("big", "1.0.0", "app.js.map")+".br")
	if err != nil {
		t.Fatal(err)
	}
	decoded, err := io.ReadAll(brotli.NewReader(bytes.NewReader(br)))
	if err != nil || !bytes.Equal(decoded, sourceMap.Bytes()) || int64(len(br)) != f.BrotliSize {
		t.Errorf("app.js.map.br: %d bytes (recorded %d), decodes to %d bytes, %v", len(br), f.BrotliSize, len(decoded), err)
	}
	// An audit makes the same twin again from the recorded level.
	again, err := transform.BrotliAt(sourceMap.Bytes(), f.BrotliLevel)
	if err != nil || !bytes.Equal(again, br) {
		t.Errorf("the twin made again at the recorded level differs (%d bytes, stored %d): %v", len(again), len(br), err)
	}
}
