package registry

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

const npmDoc = `{
  "name": "@scope/pkg",
  "dist-tags": {"latest": "1.1.0"},
  "versions": {
    "1.0.0": {"name": "@scope/pkg", "version": "1.0.0", "dist": {
      "tarball": "https://registry.example/@scope/pkg/-/pkg-1.0.0.tgz",
      "integrity": "sha512-AAAA", "shasum": "0123456789abcdef0123456789abcdef01234567"}},
    "1.1.0": {"name": "@scope/pkg", "version": "1.1.0", "dist": {
      "tarball": "https://registry.example/@scope/pkg/-/pkg-1.1.0.tgz",
      "shasum": "89abcdef0123456789abcdef0123456789abcdef"}}
  }
}`

func TestNPMVersionsScopedName(t *testing.T) {
	var gotURI, gotAccept, gotUA, gotIfNoneMatch string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotURI, gotAccept, gotUA = r.RequestURI, r.Header.Get("Accept"), r.Header.Get("User-Agent")
		gotIfNoneMatch = r.Header.Get("If-None-Match")
		w.Header().Set("ETag", `W/"v2"`)
		io.WriteString(w, npmDoc)
	}))
	defer srv.Close()

	n := &NPM{BaseURL: srv.URL + "/", Client: srv.Client()}
	listing, err := n.Versions(context.Background(), "@scope/pkg", "")
	if err != nil {
		t.Fatal(err)
	}
	if gotURI != "/@scope%2Fpkg" {
		t.Errorf("request URI = %q, want /@scope%%2Fpkg", gotURI)
	}
	if gotAccept != "application/vnd.npm.install-v1+json" {
		t.Errorf("Accept = %q", gotAccept)
	}
	if gotUA != DefaultUserAgent {
		t.Errorf("User-Agent = %q, want %q", gotUA, DefaultUserAgent)
	}
	if gotIfNoneMatch != "" {
		t.Errorf("If-None-Match sent without an etag: %q", gotIfNoneMatch)
	}
	if listing.NotModified || listing.ETag != `W/"v2"` {
		t.Errorf("listing NotModified=%v ETag=%q", listing.NotModified, listing.ETag)
	}
	want := map[string]Dist{
		"1.0.0": {Tarball: "https://registry.example/@scope/pkg/-/pkg-1.0.0.tgz", Integrity: "sha512-AAAA", Shasum: "0123456789abcdef0123456789abcdef01234567"},
		"1.1.0": {Tarball: "https://registry.example/@scope/pkg/-/pkg-1.1.0.tgz", Shasum: "89abcdef0123456789abcdef0123456789abcdef"},
	}
	if len(listing.Versions) != len(want) {
		t.Fatalf("versions = %v, want %v", listing.Versions, want)
	}
	for v, dist := range want {
		if listing.Versions[v] != dist {
			t.Errorf("version %s = %+v, want %+v", v, listing.Versions[v], dist)
		}
	}
}

func TestNPMVersionsNotModified(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("If-None-Match") == `"abc"` {
			w.Header().Set("ETag", `"abc"`)
			w.WriteHeader(http.StatusNotModified)
			return
		}
		w.Header().Set("ETag", `"abc"`)
		io.WriteString(w, npmDoc)
	}))
	defer srv.Close()

	n := &NPM{BaseURL: srv.URL, UserAgent: "tester/1"}
	first, err := n.Versions(context.Background(), "pkg", "")
	if err != nil {
		t.Fatal(err)
	}
	second, err := n.Versions(context.Background(), "pkg", first.ETag)
	if err != nil {
		t.Fatal(err)
	}
	if !second.NotModified || second.ETag != `"abc"` || second.Versions != nil {
		t.Errorf("conditional listing = %+v, want NotModified with ETag \"abc\" and no versions", second)
	}
}

func TestNPMVersionsErrors(t *testing.T) {
	longBody := strings.Repeat("x", 150) + strings.Repeat("y", 150)
	tests := []struct {
		name         string
		status       int
		body         string
		wantNotFound bool
		wantIn       []string
		wantNotIn    []string
	}{
		{"404", http.StatusNotFound, `{"error":"Not found"}`, true, []string{`npm package "left-pad"`, "404"}, nil},
		{"500 with the start of the body", http.StatusInternalServerError, longBody, false,
			[]string{"500 Internal Server Error", strings.Repeat("x", 150) + strings.Repeat("y", 50)}, []string{strings.Repeat("y", 51)}},
		{"malformed JSON", http.StatusOK, `{"versions": {"1.0.0": `, false, []string{`npm package "left-pad"`, "malformed registry document"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(tt.status)
				io.WriteString(w, tt.body)
			}))
			defer srv.Close()
			// Credentials in the registry URL must not leak into errors.
			base := strings.Replace(srv.URL, "http://", "http://deploy:s3cret@", 1)
			_, err := (&NPM{BaseURL: base}).Versions(context.Background(), "left-pad", "")
			if err == nil {
				t.Fatal("no error")
			}
			if errors.Is(err, ErrNotFound) != tt.wantNotFound {
				t.Errorf("errors.Is(err, ErrNotFound) = %v, want %v", !tt.wantNotFound, tt.wantNotFound)
			}
			for _, s := range tt.wantIn {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q lacks %q", err, s)
				}
			}
			for _, s := range append(tt.wantNotIn, "s3cret", "deploy") {
				if strings.Contains(err.Error(), s) {
					t.Errorf("error %q contains %q", err, s)
				}
			}
		})
	}
}

func TestNPMVersionsTransportErrorHidesCredentials(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	base := strings.Replace(srv.URL, "http://", "http://deploy:s3cret@", 1)
	srv.Close() // connection refused from now on
	_, err := (&NPM{BaseURL: base}).Versions(context.Background(), "pkg", "")
	if err == nil {
		t.Fatal("no error from a closed server")
	}
	if strings.Contains(err.Error(), "s3cret") || strings.Contains(err.Error(), "deploy") {
		t.Errorf("error %q leaks credentials", err)
	}
	if !strings.Contains(err.Error(), `npm package "pkg"`) {
		t.Errorf("error %q does not say what failed", err)
	}
}

func TestNPMVersionsEmptyName(t *testing.T) {
	if _, err := (&NPM{}).Versions(context.Background(), "", ""); err == nil {
		t.Error("empty name accepted")
	}
}

func TestPackageURL(t *testing.T) {
	tests := []struct{ base, name, want string }{
		{"", "jquery", "https://registry.npmjs.org/jquery"},
		{"http://mirror.local/npm/", "@babel/core", "http://mirror.local/npm/@babel%2Fcore"},
	}
	for _, tt := range tests {
		if got := (&NPM{BaseURL: tt.base}).PackageURL(tt.name); got != tt.want {
			t.Errorf("PackageURL(%q) with base %q = %q, want %q", tt.name, tt.base, got, tt.want)
		}
	}
}

func TestFetch(t *testing.T) {
	const token = "ghp_supersecrettoken"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/ok.tgz":
			if r.Header.Get("Authorization") != "Bearer "+token {
				w.WriteHeader(http.StatusUnauthorized)
				return
			}
			io.WriteString(w, "tarball bytes")
		case "/echo":
			// A server that echoes the request must not leak the token.
			w.WriteHeader(http.StatusBadGateway)
			io.WriteString(w, "bad auth: "+r.Header.Get("Authorization"))
		case "/limited":
			w.Header().Set("X-RateLimit-Remaining", "0")
			w.Header().Set("X-RateLimit-Reset", "1900000000")
			w.WriteHeader(http.StatusForbidden)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	ctx := context.Background()

	body, err := Fetch(ctx, srv.Client(), srv.URL+"/ok.tgz", token)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(body)
	body.Close()
	if string(data) != "tarball bytes" {
		t.Errorf("body = %q", data)
	}

	_, err = Fetch(ctx, nil, srv.URL+"/missing.tgz", token)
	if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "/missing.tgz") {
		t.Errorf("404 error = %v, want ErrNotFound naming the URL", err)
	}

	_, err = Fetch(ctx, nil, srv.URL+"/echo", token)
	if err == nil || strings.Contains(err.Error(), token) || !strings.Contains(err.Error(), "502") {
		t.Errorf("echo error = %v, want a 502 error without the token", err)
	}

	_, err = Fetch(ctx, nil, srv.URL+"/limited", token)
	var rl *RateLimitError
	if !errors.As(err, &rl) || rl.Reset.Unix() != 1900000000 {
		t.Errorf("rate-limited error = %v, want *RateLimitError resetting at 1900000000", err)
	}

	for _, bad := range []string{"", "ftp://example.com/x.tgz", "://nope"} {
		if _, err := Fetch(ctx, nil, bad, ""); err == nil {
			t.Errorf("Fetch(%q) gave no error", bad)
		}
	}
}
