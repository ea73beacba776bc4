package integration

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/edgeflow/edgeflow/internal/publish/catalog"
	"github.com/edgeflow/edgeflow/internal/publish/registry/registrytest"
)

// TestPublish100kFiles publishes one version of 100,000 files. It takes
// minutes (200,000 bucket writes), so it runs only with EDGEFLOW_SCALE_TEST=1:
//
//	EDGEFLOW_SCALE_TEST=1 go test -run 100k -timeout 30m -v ./integration
//
// The files are tiny and of a type stored as is, so the time goes to the
// fan-out and the writes, which is what the test is about: history, payload
// and pending-children limits.
func TestPublish100kFiles(t *testing.T) {
	if os.Getenv("EDGEFLOW_SCALE_TEST") == "" {
		t.Skip("set EDGEFLOW_SCALE_TEST=1 to publish a 100,000-file version")
	}
	startWorkers(t)
	const n = 100_000
	entries := make([]registrytest.Entry, n)
	for i := range entries {
		entries[i] = registrytest.Entry{Name: fmt.Sprintf("dist/%03d/file-%06d.png", i/1000, i), Body: fmt.Sprintf("png %d", i)}
	}
	pkg := demoPackage("huge")
	pkg.Autoupdate.FileMap = []catalog.FileMapEntry{{BasePath: "dist", Files: []string{"**/*.png"}}}
	npm.Add("huge", "1.0.0", registrytest.NPMTarball(entries...))
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()
	start := time.Now()
	out, err := publishOnce(ctx, pkg, "1.0.0")
	if err != nil {
		t.Fatal(err)
	}
	if out.Result == nil || out.Result.Files != n {
		t.Fatalf("published %+v, want %d files", out.Result, n)
	}
	if got := len(getVersion(t, "huge", "1.0.0").Files); got != n {
		t.Errorf("version document lists %d files", got)
	}
	t.Logf("published in %s: %d batches, processing %+v", time.Since(start).Round(time.Second), out.Plan.Batches, out.Processing)
}
