// Package registrytest is a local npm registry (and the two GitHub API calls
// a git source needs) for tests: it serves abbreviated package documents with
// ETags, so unchanged packages get 304, tarballs the tests build, and the
// changes feed (feed.go) as npm's replication API does.
package registrytest

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha512"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
)

// Registry is a running registry; URL is its base URL (for both the npm
// registry and the GitHub API).
type Registry struct {
	*httptest.Server
	mu       sync.Mutex
	packages map[string]map[string][]byte // name → version → tarball
	// NotModified and Documents count the document requests answered with
	// 304 and with a document.
	NotModified atomic.Int64
	Documents   atomic.Int64
	documents   map[string]int   // document requests by package name
	requests    map[string]int64 // every request by URL path

	feed feed
}

// New starts a registry; Close stops it.
func New() *Registry {
	f := &Registry{packages: map[string]map[string][]byte{}, documents: map[string]int{}, requests: map[string]int64{}}
	f.feed.init()
	f.Server = httptest.NewServer(http.HandlerFunc(f.serve))
	return f
}

// Add publishes a version of a package (npm name, or "owner/repo" with tags
// as versions for a git source).
func (f *Registry) Add(name, version string, tarball []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.packages[name] == nil {
		f.packages[name] = map[string][]byte{}
	}
	f.packages[name][version] = tarball
	f.feed.changed(name)
}

// DocumentRequests counts the requests for package name's document (a
// check of the package makes one).
func (f *Registry) DocumentRequests(name string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.documents[name]
}

func (f *Registry) serve(w http.ResponseWriter, r *http.Request) {
	if strings.HasSuffix(r.URL.Path, "/_changes") {
		f.feed.serve(w, r) // waits without holding the registry's lock
		return
	}
	if r.URL.Path == "/" || r.URL.Path == "/registry/" {
		f.feed.info(w) // the database's update_seq
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests[r.URL.Path]++
	path := strings.TrimPrefix(r.URL.Path, "/")
	if strings.HasPrefix(path, "repos/") {
		f.serveGitHub(w, r, strings.Split(strings.TrimPrefix(path, "repos/"), "/"))
		return
	}
	if strings.HasPrefix(path, "tarballs/") {
		parts := strings.SplitN(strings.TrimPrefix(path, "tarballs/"), "/", 2)
		if len(parts) == 2 {
			if tb, ok := f.packages[parts[0]][strings.TrimSuffix(parts[1], ".tgz")]; ok {
				w.Write(tb)
				return
			}
		}
		http.NotFound(w, r)
		return
	}
	f.documents[path]++
	versions, ok := f.packages[path]
	if !ok {
		http.Error(w, `{"error":"Not found"}`, http.StatusNotFound)
		return
	}
	doc := map[string]any{"name": path}
	vs := map[string]any{}
	for v, tb := range versions {
		sum := sha512.Sum512(tb)
		vs[v] = map[string]any{"name": path, "version": v, "dist": map[string]string{
			"tarball":   fmt.Sprintf("%s/tarballs/%s/%s.tgz", f.URL, path, v),
			"integrity": "sha512-" + base64.StdEncoding.EncodeToString(sum[:]),
		}}
	}
	doc["versions"] = vs
	body, _ := json.Marshal(doc)
	sum := sha512.Sum512(body)
	etag := `"` + base64.RawURLEncoding.EncodeToString(sum[:12]) + `"`
	if r.Header.Get("If-None-Match") == etag {
		f.NotModified.Add(1)
		w.WriteHeader(http.StatusNotModified)
		return
	}
	f.Documents.Add(1)
	w.Header().Set("ETag", etag)
	w.Header().Set("Content-Type", "application/vnd.npm.install-v1+json")
	w.Write(body)
}

// Requests is how many requests path has had: "/name" for a package's
// document, "/tarballs/name/version.tgz" for a tarball (TarballPath).
func (f *Registry) Requests(path string) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.requests[path]
}

// TarballPath is the path of a version's tarball.
func TarballPath(name, version string) string { return "/tarballs/" + name + "/" + version + ".tgz" }

// Entry is one member of a test tarball; Link makes it a symlink. Names
// starting with "/" or "../" are written as they are (hostile entries).
type Entry struct {
	Name, Body, Link string
}

// NPMTarball builds a .tgz with every entry under package/, like `npm pack`.
func NPMTarball(entries ...Entry) []byte { return tarball("package/", entries) }

// GitHubTarball builds a .tgz the way GitHub's archive API does: every entry
// under one "owner-repo-sha/" folder.
func GitHubTarball(top string, entries ...Entry) []byte { return tarball(top+"/", entries) }

func tarball(top string, entries []Entry) []byte {
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, e := range entries {
		name := e.Name
		if !strings.HasPrefix(name, "/") && !strings.HasPrefix(name, "../") {
			name = top + name
		}
		h := &tar.Header{Name: name, Mode: 0o644, Size: int64(len(e.Body)), Typeflag: tar.TypeReg}
		if e.Link != "" {
			h.Typeflag, h.Linkname, h.Size = tar.TypeSymlink, e.Link, 0
		}
		must(tw.WriteHeader(h))
		if e.Link == "" {
			_, err := tw.Write([]byte(e.Body))
			must(err)
		}
	}
	must(tw.Close())
	must(gz.Close())
	return buf.Bytes()
}

// must stops a test whose tarball cannot be built (a header tar refuses):
// it would otherwise get a truncated archive and fail somewhere else.
func must(err error) {
	if err != nil {
		panic("registrytest: building a tarball: " + err.Error())
	}
}

// serveGitHub answers the two GitHub API calls the pipeline makes for a git
// source: the tag list and a tag's tarball. A package "owner/repo" is stored
// under the name "owner/repo" with tags as versions.
func (f *Registry) serveGitHub(w http.ResponseWriter, r *http.Request, parts []string) {
	if len(parts) < 3 {
		http.NotFound(w, r)
		return
	}
	versions, ok := f.packages[parts[0]+"/"+parts[1]]
	if !ok {
		http.Error(w, `{"message":"Not Found"}`, http.StatusNotFound)
		return
	}
	switch {
	case parts[2] == "tags":
		names := make([]string, 0, len(versions))
		for v := range versions {
			names = append(names, v)
		}
		sort.Strings(names)
		var tags []map[string]string
		for _, v := range names {
			tags = append(tags, map[string]string{"name": v})
		}
		body, _ := json.Marshal(tags)
		// GitHub answers a conditional request for unchanged tags with 304.
		sum := sha512.Sum512(body)
		etag := `"` + base64.RawURLEncoding.EncodeToString(sum[:12]) + `"`
		if r.Header.Get("If-None-Match") == etag {
			f.NotModified.Add(1)
			w.WriteHeader(http.StatusNotModified)
			return
		}
		f.Documents.Add(1)
		w.Header().Set("ETag", etag)
		w.Write(body)
	case parts[2] == "tarball" && len(parts) == 4:
		if tb, ok := versions[parts[3]]; ok {
			w.Write(tb)
			return
		}
		http.NotFound(w, r)
	default:
		http.NotFound(w, r)
	}
}
