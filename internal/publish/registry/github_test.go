package registry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

const testToken = "ghp_0123456789abcdefTOKEN"

// tagServer serves three pages of tags for acme/widget, linked by relative
// and absolute Link headers as GitHub does, and checks every request.
func tagServer(t *testing.T) *httptest.Server {
	t.Helper()
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if got := r.Header.Get("Authorization"); got != "Bearer "+testToken {
			t.Errorf("%s: Authorization = %q", r.URL, got)
		}
		if r.Header.Get("Accept") != "application/vnd.github+json" {
			t.Errorf("%s: Accept = %q", r.URL, r.Header.Get("Accept"))
		}
		switch {
		case r.URL.Path == "/repos/acme/widget/tags" && r.URL.Query().Get("per_page") == "100":
			if r.Header.Get("If-None-Match") == `"page1"` {
				w.Header().Set("ETag", `"page1"`)
				w.WriteHeader(http.StatusNotModified)
				return
			}
			w.Header().Set("ETag", `"page1"`)
			w.Header().Set("Link", fmt.Sprintf(`<%s/repositories/42/tags?per_page=100&page=2>; rel="next", <%s/repositories/42/tags?per_page=100&page=3>; rel="last"`, srv.URL, srv.URL))
			io.WriteString(w, `[{"name":"v2.0.0"},{"name":"v2.0.0-beta.1"},{"name":"1.0.0"}]`)
		case r.URL.Path == "/repositories/42/tags" && r.URL.Query().Get("page") == "2":
			if r.Header.Get("If-None-Match") != "" {
				t.Errorf("page 2 was requested conditionally")
			}
			w.Header().Add("Link", `</repositories/42/tags?per_page=100&page=1>; rel="prev"`)
			w.Header().Add("Link", `</repositories/42/tags?per_page=100&page=3>; rel="next"`)
			io.WriteString(w, `[{"name":"v1.0.0"},{"name":"v2"},{"name":"release-candidate"}]`)
		case r.URL.Path == "/repositories/42/tags" && r.URL.Query().Get("page") == "3":
			io.WriteString(w, `[{"name":"0.1.0"}]`)
		default:
			t.Errorf("unexpected request %s", r.URL)
			http.NotFound(w, r)
		}
	}))
	return srv
}

func TestGitHubTagsPagination(t *testing.T) {
	srv := tagServer(t)
	defer srv.Close()
	g := &GitHub{BaseURL: srv.URL, Token: testToken, Client: srv.Client()}

	listing, err := g.Tags(context.Background(), "https://github.com/acme/widget.git", "")
	if err != nil {
		t.Fatal(err)
	}
	if listing.NotModified || listing.ETag != `"page1"` {
		t.Errorf("NotModified=%v ETag=%q", listing.NotModified, listing.ETag)
	}
	tarball := srv.URL + "/repos/acme/widget/tarball/"
	want := map[string]string{
		"2.0.0":             tarball + "v2.0.0",
		"2.0.0-beta.1":      tarball + "v2.0.0-beta.1",
		"1.0.0":             tarball + "1.0.0", // the exact tag beats "v1.0.0"
		"v2":                tarball + "v2",    // "2" is not strict semver: the tag is kept
		"release-candidate": tarball + "release-candidate",
		"0.1.0":             tarball + "0.1.0",
	}
	if len(listing.Versions) != len(want) {
		t.Errorf("versions = %v, want %d entries", listing.Versions, len(want))
	}
	for version, url := range want {
		if got := listing.Versions[version]; got.Tarball != url || got.Integrity != "" || got.Shasum != "" {
			t.Errorf("version %s = %+v, want tarball %s", version, got, url)
		}
	}
}

func TestGitHubTagsNotModified(t *testing.T) {
	srv := tagServer(t)
	defer srv.Close()
	g := &GitHub{BaseURL: srv.URL, Token: testToken}
	listing, err := g.Tags(context.Background(), "acme/widget", `"page1"`)
	if err != nil {
		t.Fatal(err)
	}
	if !listing.NotModified || listing.ETag != `"page1"` || listing.Versions != nil {
		t.Errorf("listing = %+v, want NotModified with ETag \"page1\"", listing)
	}
}

func TestGitHubTagsErrors(t *testing.T) {
	reset := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		name          string
		handler       http.HandlerFunc
		wantNotFound  bool
		wantRateLimit bool
		wantIn        []string
	}{
		{
			name:         "404",
			handler:      func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) },
			wantNotFound: true,
			wantIn:       []string{"github repository acme/widget", "404"},
		},
		{
			name: "primary rate limit",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("X-RateLimit-Remaining", "0")
				w.Header().Set("X-RateLimit-Reset", fmt.Sprint(reset.Unix()))
				w.WriteHeader(http.StatusForbidden)
				io.WriteString(w, `{"message":"API rate limit exceeded"}`)
			},
			wantRateLimit: true,
			wantIn:        []string{"rate limit exceeded", "403", "resets at 2030-01-02T03:04:05Z"},
		},
		{
			name: "secondary rate limit with Retry-After",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Retry-After", "60")
				w.WriteHeader(http.StatusTooManyRequests)
			},
			wantRateLimit: true,
			wantIn:        []string{"rate limit exceeded", "429", "resets at"},
		},
		{
			name: "403 without rate-limit headers is a plain error",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(http.StatusForbidden)
				io.WriteString(w, `{"message":"Resource not accessible"}`)
			},
			wantIn: []string{"403 Forbidden", "Resource not accessible"},
		},
		{
			name: "500 echoing the token",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(http.StatusInternalServerError)
				io.WriteString(w, "upstream said: "+r.Header.Get("Authorization"))
			},
			wantIn: []string{"500 Internal Server Error", "upstream said: Bearer [redacted]"},
		},
		{
			name:    "malformed JSON",
			handler: func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, `{"name":"v1"}`) },
			wantIn:  []string{"malformed tags page"},
		},
		{
			name: "next link to another host",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Link", `<https://evil.example/steal?page=2>; rel="next"`)
				io.WriteString(w, `[]`)
			},
			wantIn: []string{"another host (evil.example)"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(tt.handler)
			defer srv.Close()
			g := &GitHub{BaseURL: srv.URL, Token: testToken}
			_, err := g.Tags(context.Background(), "acme/widget", "")
			if err == nil {
				t.Fatal("no error")
			}
			if errors.Is(err, ErrNotFound) != tt.wantNotFound {
				t.Errorf("errors.Is(ErrNotFound) = %v, want %v (%v)", !tt.wantNotFound, tt.wantNotFound, err)
			}
			var rl *RateLimitError
			if errors.As(err, &rl) != tt.wantRateLimit {
				t.Errorf("rate-limit error = %v, want %v (%v)", !tt.wantRateLimit, tt.wantRateLimit, err)
			}
			for _, s := range tt.wantIn {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q lacks %q", err, s)
				}
			}
			if strings.Contains(err.Error(), testToken) {
				t.Errorf("error %q contains the token", err)
			}
		})
	}
}

func TestGitHubNeverPrintsToken(t *testing.T) {
	g := &GitHub{Token: testToken}
	for _, format := range []string{"%v", "%+v", "%#v", "%s"} {
		for _, value := range []any{g, *g} {
			if s := fmt.Sprintf(format, value); strings.Contains(s, testToken) {
				t.Errorf("Sprintf(%q) = %q contains the token", format, s)
			}
		}
	}
	if got := g.String(); got != "GitHub{BaseURL: https://api.github.com, Token: set}" {
		t.Errorf("String() = %q", got)
	}
}

func TestGitHubRepo(t *testing.T) {
	tests := []struct {
		target, owner, repo string
		wantErr             bool
	}{
		{"acme/widget", "acme", "widget", false},
		{"https://github.com/acme/widget", "acme", "widget", false},
		{"https://github.com/acme/widget.git", "acme", "widget", false},
		{"http://www.github.com/acme/widget.js/", "acme", "widget.js", false},
		{"https://gitlab.com/acme/widget", "", "", true},
		{"ftp://github.com/acme/widget", "", "", true},
		{"acme", "", "", true},
		{"acme/widget/extra", "", "", true},
		{"https://github.com/acme", "", "", true},
		{"acme/..", "", "", true},
		{"ac me/widget", "", "", true},
		{"", "", "", true},
		// the forms the real cdnjs catalog writes
		{"git://github.com/acme/widget.git", "acme", "widget", false},
		{"git+https://github.com/acme/widget.git", "acme", "widget", false},
		{"git+ssh://git@github.com/acme/widget.git", "acme", "widget", false},
		{"git@github.com:acme/widget.git", "acme", "widget", false},
		{"github:acme/widget", "acme", "widget", false},
		{"git@gitlab.com:acme/widget.git", "", "", true},
	}
	for _, tt := range tests {
		owner, repo, err := GitHubRepo(tt.target)
		if (err != nil) != tt.wantErr || owner != tt.owner || repo != tt.repo {
			t.Errorf("GitHubRepo(%q) = %q, %q, %v", tt.target, owner, repo, err)
		}
	}
}

func TestNextLink(t *testing.T) {
	tests := []struct {
		values []string
		want   string
	}{
		{nil, ""},
		{[]string{`<https://x/a?page=2>; rel="next", <https://x/a?page=9>; rel="last"`}, "https://x/a?page=2"},
		{[]string{`<https://x/a?page=1>; rel="prev"`, `<https://x/a?page=3>; rel=next`}, "https://x/a?page=3"},
		{[]string{`<https://x/a?page=1>; rel="prev first"`}, ""},
		{[]string{`garbage; rel="next"`}, ""},
	}
	for _, tt := range tests {
		if got := nextLink(tt.values); got != tt.want {
			t.Errorf("nextLink(%q) = %q, want %q", tt.values, got, tt.want)
		}
	}
}
