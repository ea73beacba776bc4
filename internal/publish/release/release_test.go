package release

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/edgeflow/edgeflow/internal/publish/catalog"
	"github.com/edgeflow/edgeflow/internal/publish/registry"
)

// The GitHub token goes with a download only to the GitHub API's own host,
// and only for a git-sourced library: never to another host a listing
// named, and never with an npm library's archive.
func TestFetchVerifiedSendsTheTokenOnlyToTheGitHubAPI(t *testing.T) {
	const token = "ghp_0123456789abcdefTOKEN"
	authOf := map[string]string{}
	handler := func(name string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			authOf[name] = r.Header.Get("Authorization")
			_, _ = w.Write([]byte("archive bytes"))
		}
	}
	api := httptest.NewServer(handler("api"))
	defer api.Close()
	other := httptest.NewServer(handler("other"))
	defer other.Close()
	src := Sources{GitHub: &registry.GitHub{BaseURL: api.URL, Token: token}, HTTP: api.Client()}
	git := catalog.Package{Name: "lib", Autoupdate: catalog.Autoupdate{Source: catalog.SourceGit, Target: "o/lib"}}
	npm := catalog.Package{Name: "lib", Autoupdate: catalog.Autoupdate{Source: catalog.SourceNPM, Target: "lib"}}
	for _, c := range []struct {
		name     string
		pkg      catalog.Package
		url      string
		server   string
		wantAuth string
	}{
		{"git archive on the API host", git, api.URL + "/repos/o/lib/tarball/v1", "api", "Bearer " + token},
		{"git archive on another host", git, other.URL + "/lib-1.tgz", "other", ""},
		{"npm archive on the API host", npm, api.URL + "/lib-1.tgz", "api", ""},
	} {
		clear(authOf)
		dst := filepath.Join(t.TempDir(), "a.tgz")
		if err := src.FetchVerified(context.Background(), c.pkg, registry.Dist{Tarball: c.url}, dst, nil); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got, ok := authOf[c.server]; !ok || got != c.wantAuth {
			t.Errorf("%s: Authorization %q (requested %v), want %q", c.name, got, ok, c.wantAuth)
		}
	}
}

// MaxBytes bounds the download (staging sets it from its flag).
func TestFetchVerifiedHonoursMaxBytes(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write(make([]byte, 100))
	}))
	defer srv.Close()
	src := Sources{HTTP: srv.Client(), MaxBytes: 10}
	pkg := catalog.Package{Name: "lib", Autoupdate: catalog.Autoupdate{Source: catalog.SourceNPM, Target: "lib"}}
	err := src.FetchVerified(context.Background(), pkg, registry.Dist{Tarball: srv.URL + "/lib.tgz"}, filepath.Join(t.TempDir(), "a.tgz"), nil)
	var tooLarge *registry.TooLargeError
	if !errors.As(err, &tooLarge) {
		t.Errorf("err = %v, want a TooLargeError", err)
	}
}
