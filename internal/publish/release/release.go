// Package release fetches one release of a catalog library from its
// registry, verified, and shows what its fileMap selects: the work both the
// preview command and staging do before anything is processed.
package release

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"

	"github.com/edgeflow/edgeflow/internal/publish/catalog"
	"github.com/edgeflow/edgeflow/internal/publish/fileset"
	"github.com/edgeflow/edgeflow/internal/publish/registry"
	"github.com/edgeflow/edgeflow/internal/publish/tarx"
	"github.com/edgeflow/edgeflow/internal/publish/versions"
)

// Sources are the registries a library's versions come from.
type Sources struct {
	NPM    *registry.NPM
	GitHub *registry.GitHub
	HTTP   *http.Client // for archive downloads; http.DefaultClient when nil
	// MaxBytes bounds an archive as downloaded; 0 means
	// registry.DefaultMaxTarballBytes.
	MaxBytes int64
}

// List lists the library's versions at its source (unconditionally).
func (s Sources) List(ctx context.Context, pkg catalog.Package) (map[string]registry.Dist, error) {
	var listing *registry.Listing
	var err error
	switch pkg.Autoupdate.Source {
	case catalog.SourceGit:
		if s.GitHub == nil {
			return nil, errors.New("no GitHub API configured")
		}
		listing, err = s.GitHub.Tags(ctx, pkg.Autoupdate.Target, "")
	case catalog.SourceNPM:
		if s.NPM == nil {
			return nil, errors.New("no npm registry configured")
		}
		listing, err = s.NPM.Versions(ctx, pkg.Autoupdate.Target, "")
	default:
		return nil, fmt.Errorf("%s has no autoupdate source: it is never published", pkg.Name)
	}
	if err != nil {
		return nil, err
	}
	return listing.Versions, nil
}

// FetchVerified downloads the archive at dist to dst within the download
// bound and checks the registry's digest (see registry.Download). The
// GitHub token goes only to the GitHub API host (downloadToken).
func (s Sources) FetchVerified(ctx context.Context, pkg catalog.Package, dist registry.Dist, dst string, progress func(int64)) error {
	return registry.Download(ctx, s.HTTP, dist, s.downloadToken(pkg, dist), dst, s.MaxBytes, progress)
}

// downloadToken is the credential a download may carry: the GitHub token,
// for a git-sourced library's archive on the GitHub API's own host only,
// never to a host a listing or a request named. Staging and the preview
// both download through here, so the rule lives once.
func (s Sources) downloadToken(pkg catalog.Package, dist registry.Dist) string {
	if pkg.Autoupdate.Source == catalog.SourceGit && s.GitHub != nil && registry.SameHost(dist.Tarball, s.GitHub.BaseURL) {
		return s.GitHub.Token
	}
	return ""
}

// Preview is what a fileMap selects from one release.
type Preview struct {
	Name, Version string
	Files         int                 // files in the release
	Selected      []fileset.Selection // sorted by Output
	Skipped       []tarx.Skip         // entries extraction left out
}

// PreviewVersion fetches version (the latest stable one not ignored when
// empty) of pkg, extracts it under a temporary folder in tmpDir and applies
// the fileMap. Nothing is published or kept.
func (s Sources) PreviewVersion(ctx context.Context, pkg catalog.Package, version, tmpDir string, limits tarx.Limits) (*Preview, error) {
	listing, err := s.List(ctx, pkg)
	if err != nil {
		return nil, err
	}
	if version == "" {
		var candidates []string
		for v := range listing {
			if !versions.Ignored(v, pkg.Autoupdate.IgnoreVersions) {
				candidates = append(candidates, v)
			}
		}
		if version = versions.Latest(candidates); version == "" {
			return nil, fmt.Errorf("%s: its %s source %q lists no version", pkg.Name, pkg.Autoupdate.Source, pkg.Autoupdate.Target)
		}
	}
	dist, ok := listing[version]
	if !ok {
		return nil, fmt.Errorf("%s has no version %s at its %s source %q", pkg.Name, version, pkg.Autoupdate.Source, pkg.Autoupdate.Target)
	}
	tmp, err := os.MkdirTemp(tmpDir, "preview-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	archive := filepath.Join(tmp, "archive.tgz")
	if err := s.FetchVerified(ctx, pkg, dist, archive, nil); err != nil {
		return nil, err
	}
	f, err := os.Open(archive)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }() // read-only
	extracted, err := tarx.Extract(f, filepath.Join(tmp, "files"), limits)
	if err != nil {
		return nil, err
	}
	paths := make([]string, len(extracted.Files))
	for i, e := range extracted.Files {
		paths[i] = e.Path
	}
	selected, err := fileset.Apply(pkg.Autoupdate.FileMap, paths)
	if err != nil {
		return nil, err
	}
	sort.Slice(selected, func(i, j int) bool { return selected[i].Output < selected[j].Output })
	return &Preview{Name: pkg.Name, Version: version, Files: len(paths), Selected: selected, Skipped: extracted.Skipped}, nil
}
