package console

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.temporal.io/sdk/worker"

	publishacts "github.com/edgeflow/edgeflow/activities/publish"
	"github.com/edgeflow/edgeflow/internal/console"
	"github.com/edgeflow/edgeflow/internal/objectstore"
	"github.com/edgeflow/edgeflow/internal/publish/catalog"
	"github.com/edgeflow/edgeflow/internal/publish/hook"
	"github.com/edgeflow/edgeflow/internal/publish/metadata"
	"github.com/edgeflow/edgeflow/internal/publish/pubclient"
	"github.com/edgeflow/edgeflow/internal/publish/registry"
	"github.com/edgeflow/edgeflow/internal/publish/registry/registrytest"
	"github.com/edgeflow/edgeflow/internal/publish/tarx"
	"github.com/edgeflow/edgeflow/internal/publish/transform"
	"github.com/edgeflow/edgeflow/internal/testenv"
	publishwf "github.com/edgeflow/edgeflow/workflows/publish"
	"github.com/edgeflow/edgeflow/workflows/publish/contract"
)

// TestGitHubHookStartsTheCheck: the console's POST /hooks/github refuses
// a delivery without a signature and one signed with another secret (401),
// and a signed release of a repository a git-sourced library follows starts
// that library's check, which finds and publishes the tag, on a real
// Temporal dev server.
func TestGitHubHookStartsTheCheck(t *testing.T) {
	testenv.Require(t, env)
	const lib, repo, secret = "it-hooked", "it-owner/hooked", "a hook secret of high entropy"
	dir := t.TempDir()
	entry := catalog.Package{Name: lib, Description: "a git-sourced library", License: "MIT",
		Autoupdate: catalog.Autoupdate{Source: catalog.SourceGit, Target: "https://github.com/" + repo + ".git",
			FileMap: []catalog.FileMapEntry{{BasePath: "dist", Files: []string{"*.js"}}}}}
	data, _ := json.Marshal(entry)
	path := catalog.FilePath(dir, lib)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	gh := registrytest.New()
	t.Cleanup(gh.Close)
	gh.Add(repo, "v1.0.0", registrytest.GitHubTarball("it-owner-hooked-abc1234", registrytest.Entry{Name: "dist/hooked.js", Body: "export const hooked = 1;\n"}))

	b := metadata.Buckets{Files: "it-hook-files", Mirror: "it-hook-mirror", Meta: "it-hook-meta", MirrorMeta: "it-hook-mirror-meta", Incoming: "it-hook-incoming"}
	if err := objectstore.EnsureBuckets(context.Background(), env.Store, b.Files, b.Mirror, b.Meta, b.MirrorMeta, b.Incoming); err != nil {
		t.Fatal(err)
	}
	stores := publishacts.Stores{Primary: env.Store, Mirror: env.Store, Buckets: b, IOParallel: 8}
	pool := worker.New(env.Client, contract.TaskQueue, worker.Options{})
	publishwf.Register(pool)
	publishacts.RegisterPublish(pool, &publishacts.Publish{Stores: stores, CatalogDir: dir,
		NPM: &registry.NPM{BaseURL: gh.URL, Client: http.DefaultClient}, GitHub: &registry.GitHub{BaseURL: gh.URL},
		HTTP: http.DefaultClient, Extract: tarx.DefaultLimits, FirstImport: 10})
	compress := worker.New(env.Client, contract.CompressTaskQueue, worker.Options{MaxConcurrentActivityExecutionSize: 2})
	publishacts.RegisterCompress(compress, &publishacts.Compress{Stores: stores, CPU: transform.NewLimiter(1)})
	for _, w := range []worker.Worker{pool, compress} {
		if err := w.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(w.Stop)
	}
	t.Cleanup(func() { noRunOpen(t, lib) })

	tokens, err := console.ParseTokens([]string{"admin:" + rwSecret}, "test")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(console.New(console.Options{Temporal: env.Client, Tokens: tokens, HookSecret: []byte(secret),
		Libraries: pubclient.Libraries{Store: env.Store, Meta: b.Meta, CatalogDir: dir}}).Handler())
	t.Cleanup(srv.Close)

	body := []byte(`{"action":"published","release":{"tag_name":"v1.0.0"},"repository":{"full_name":"` + repo + `"}}`)
	deliver := func(signature string) (int, hook.Answer) {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/hooks/github", bytes.NewReader(body))
		req.Header.Set("X-GitHub-Event", "release")
		req.Header.Set("X-GitHub-Delivery", "it-delivery-1")
		if signature != "" {
			req.Header.Set(hook.SignatureHeader, signature)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var a hook.Answer
		_ = json.NewDecoder(resp.Body).Decode(&a)
		return resp.StatusCode, a
	}
	sign := func(key string) string {
		mac := hmac.New(sha256.New, []byte(key))
		mac.Write(body)
		return "sha256=" + hex.EncodeToString(mac.Sum(nil))
	}
	if status, a := deliver(""); status != http.StatusUnauthorized {
		t.Errorf("no signature: %d %+v, want 401", status, a)
	}
	if status, a := deliver(sign("another secret")); status != http.StatusUnauthorized {
		t.Errorf("another secret's signature: %d %+v, want 401", status, a)
	}
	status, a := deliver(sign(secret))
	if status != http.StatusAccepted || len(a.Started) != 1 || a.Started[0].Name != lib || a.Started[0].WorkflowID != contract.HookCheckWorkflowID(lib, "it-delivery-1") {
		t.Fatalf("signed release: %d %+v", status, a)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var st contract.UpdatesStats
	if err := env.Client.GetWorkflow(ctx, a.Started[0].WorkflowID, "").Get(ctx, &st); err != nil || st.Checked != 1 || st.NewVersions != 1 {
		t.Fatalf("the hook's check: %+v %v", st, err)
	}
	testenv.Eventually(t, 2*time.Minute, 200*time.Millisecond, lib+"'s tag is published", func() (bool, string) {
		var doc metadata.Package
		_, err := objectstore.GetJSON(ctx, env.Store, b.Meta, metadata.PackageKey(lib), &doc)
		return err == nil && len(doc.Versions) == 1, "not yet"
	})
	// A redelivery starts no second check.
	if status, again := deliver(sign(secret)); status != http.StatusAccepted || again.Started[0].WorkflowID != a.Started[0].WorkflowID {
		t.Errorf("redelivery: %d %+v", status, again)
	}
}
