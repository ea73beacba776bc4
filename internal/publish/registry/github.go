package registry

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/edgeflow/edgeflow/internal/publish/catalog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/Masterminds/semver/v3"
)

// DefaultGitHubURL is the public GitHub REST API.
const DefaultGitHubURL = "https://api.github.com"

// maxTagPages bounds pagination (100 tags a page) so a misbehaving server
// cannot keep the pipeline paging forever.
const maxTagPages = 100

// GitHub lists a repository's tags as versions. Token, when set, is sent as
// a bearer token (higher rate limits, private repositories); it never
// appears in errors or in the printed client. The zero value uses the public
// API and http.DefaultClient.
type GitHub struct {
	BaseURL   string
	Token     string
	Client    *http.Client
	UserAgent string
}

// String describes the client without its token.
func (g GitHub) String() string {
	token := "none"
	if g.Token != "" {
		token = "set"
	}
	return fmt.Sprintf("GitHub{BaseURL: %s, Token: %s}", redactURL(g.baseURL()), token)
}

// GoString keeps %#v from printing the token.
func (g GitHub) GoString() string { return "registry." + g.String() }

func (g GitHub) baseURL() string {
	if base := strings.TrimRight(g.BaseURL, "/"); base != "" {
		return base
	}
	return DefaultGitHubURL
}

// GitHubRepo splits a git autoupdate target into owner and repository. It
// takes every form the cdnjs catalog writes ("owner/repo", https, git://,
// git+https://, git@github.com:owner/repo.git, …); the repository must be
// on GitHub, whose tags are listed.
func GitHubRepo(target string) (owner, repo string, err error) {
	r, ok := catalog.ParseGitRepo(target)
	switch {
	case !ok:
		return "", "", fmt.Errorf("git target %q is not owner/repo or a git repository URL", target)
	case !r.IsGitHub():
		return "", "", fmt.Errorf("git target %q is not a GitHub repository", target)
	case r.Owner == "." || r.Owner == ".." || r.Repo == "." || r.Repo == "..":
		return "", "", fmt.Errorf("git target %q is not owner/repo or a git repository URL", target)
	}
	return r.Owner, r.Repo, nil
}

// githubTag is the part of a tag entry used here.
type githubTag struct {
	Name string `json:"name"`
}

// Tags lists the tags of target (see GitHubRepo) as versions, following
// pagination. A tag "v1.2.3" is listed as version "1.2.3" when the rest is
// strict semver; other tags keep their name. Each version's Tarball is the
// API archive URL of the original tag. With etag set the first page is
// requested conditionally and an unchanged first page gives a Listing with
// NotModified. A missing repository wraps ErrNotFound; an exhausted rate
// limit is a *RateLimitError saying when it resets.
func (g *GitHub) Tags(ctx context.Context, target string, etag string) (*Listing, error) {
	owner, repo, err := GitHubRepo(target)
	if err != nil {
		return nil, err
	}
	what := fmt.Sprintf("github repository %s/%s", owner, repo)
	base := g.baseURL()
	baseURL, err := url.Parse(base)
	if err != nil {
		return nil, fmt.Errorf("%s: bad API URL %s: %w", what, redactURL(base), withoutURL(err))
	}
	repoPath := "/repos/" + url.PathEscape(owner) + "/" + url.PathEscape(repo)
	pageURL := base + repoPath + "/tags?per_page=100"

	var tags []string
	listing := &Listing{}
	for page := 1; pageURL != ""; page++ {
		if page > maxTagPages {
			return nil, fmt.Errorf("%s: more than %d pages of tags", what, maxTagPages)
		}
		conditional := ""
		if page == 1 {
			conditional = etag
		}
		resp, err := g.get(ctx, pageURL, conditional, what)
		if err != nil {
			return nil, err
		}
		if page == 1 {
			listing.ETag = resp.Header.Get("ETag")
			if resp.StatusCode == http.StatusNotModified {
				resp.Body.Close()
				if listing.ETag == "" {
					listing.ETag = etag
				}
				listing.NotModified = true
				return listing, nil
			}
		}
		pageTags, next, err := g.readTagPage(resp, baseURL, what)
		if err != nil {
			return nil, err
		}
		tags = append(tags, pageTags...)
		pageURL = next
	}

	listing.Versions = make(map[string]Dist, len(tags))
	for _, tag := range tags {
		version := tagVersion(tag)
		// "v1.0.0" and "1.0.0" may both exist; the tag spelled exactly as the
		// version wins so the choice does not depend on page order.
		if _, taken := listing.Versions[version]; taken && tag != version {
			continue
		}
		listing.Versions[version] = Dist{Tarball: base + repoPath + "/tarball/" + url.PathEscape(tag)}
	}
	return listing, nil
}

// tagVersion strips a leading "v" from a tag when the rest is strict semver.
func tagVersion(tag string) string {
	if rest, ok := strings.CutPrefix(tag, "v"); ok {
		if _, err := semver.StrictNewVersion(rest); err == nil {
			return rest
		}
	}
	return tag
}

// get requests one API page; the caller closes the body.
func (g *GitHub) get(ctx context.Context, pageURL, etag, what string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, pageURL, nil)
	if err != nil {
		return nil, fmt.Errorf("%s: bad URL %s: %w", what, redactURL(pageURL), withoutURL(err))
	}
	req.Header.Set("Accept", "application/vnd.github+json")
	req.Header.Set("X-GitHub-Api-Version", "2022-11-28")
	userAgent := g.UserAgent
	if userAgent == "" {
		userAgent = DefaultUserAgent
	}
	req.Header.Set("User-Agent", userAgent)
	if g.Token != "" {
		req.Header.Set("Authorization", "Bearer "+g.Token)
	}
	if etag != "" {
		req.Header.Set("If-None-Match", etag)
	}
	return do(g.Client, req, what)
}

// readTagPage decodes one page of tags and returns the next page's URL ("" on
// the last page). It closes the body.
func (g *GitHub) readTagPage(resp *http.Response, base *url.URL, what string) ([]string, string, error) {
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		if rl := rateLimitError(resp, what); rl != nil {
			return nil, "", rl
		}
		return nil, "", statusError(resp, what, g.Token)
	}
	body, err := readLimited(resp.Body, maxListingBytes, what)
	if err != nil {
		return nil, "", err
	}
	var page []githubTag
	if err := json.Unmarshal(body, &page); err != nil {
		return nil, "", fmt.Errorf("%s: malformed tags page from %s: %w", what, redactURL(resp.Request.URL.String()), err)
	}
	names := make([]string, 0, len(page))
	for _, tag := range page {
		if tag.Name != "" {
			names = append(names, tag.Name)
		}
	}

	next := nextLink(resp.Header.Values("Link"))
	if next == "" {
		return names, "", nil
	}
	nextURL, err := resp.Request.URL.Parse(next)
	if err != nil {
		return nil, "", fmt.Errorf("%s: bad next-page link %q: %w", what, truncate(next), withoutURL(err))
	}
	// The token goes with every page: never send it to another host.
	if nextURL.Scheme != base.Scheme || nextURL.Host != base.Host {
		return nil, "", fmt.Errorf("%s: next-page link points to another host (%s), not following it", what, nextURL.Host)
	}
	return names, nextURL.String(), nil
}

// nextLink returns the target of rel="next" in RFC 8288 Link header values.
func nextLink(values []string) string {
	for _, value := range values {
		for _, link := range strings.Split(value, ",") {
			target, params, ok := strings.Cut(strings.TrimSpace(link), ";")
			if !ok || !strings.HasPrefix(target, "<") || !strings.HasSuffix(target, ">") {
				continue
			}
			for _, param := range strings.Split(params, ";") {
				key, val, _ := strings.Cut(strings.TrimSpace(param), "=")
				if !strings.EqualFold(key, "rel") {
					continue
				}
				for _, rel := range strings.Fields(strings.Trim(val, `"`)) {
					if strings.EqualFold(rel, "next") {
						return strings.TrimSuffix(strings.TrimPrefix(target, "<"), ">")
					}
				}
			}
		}
	}
	return ""
}

// RateLimitError says a registry refused a request for exceeding its rate
// limit, and when to try again.
type RateLimitError struct {
	What   string
	URL    string
	Status string
	// Reset is when requests are allowed again; zero when the server did
	// not say.
	Reset time.Time
}

func (e *RateLimitError) Error() string {
	when := "reset time unknown"
	if !e.Reset.IsZero() {
		when = "resets at " + e.Reset.UTC().Format(time.RFC3339)
	}
	return fmt.Sprintf("%s: GET %s: rate limit exceeded (status %s); %s", e.What, e.URL, e.Status, when)
}

// rateLimitError recognises GitHub's primary (403/429 with no remaining
// requests) and secondary (Retry-After) rate-limit responses; nil otherwise.
func rateLimitError(resp *http.Response, what string) *RateLimitError {
	if resp.StatusCode != http.StatusForbidden && resp.StatusCode != http.StatusTooManyRequests {
		return nil
	}
	retryAfter := resp.Header.Get("Retry-After")
	exhausted := resp.Header.Get("X-RateLimit-Remaining") == "0"
	if resp.StatusCode == http.StatusForbidden && !exhausted && retryAfter == "" {
		return nil // an ordinary permission error
	}
	rl := &RateLimitError{What: what, URL: redactURL(resp.Request.URL.String()), Status: resp.Status}
	if seconds, err := strconv.ParseInt(retryAfter, 10, 64); err == nil && seconds >= 0 {
		rl.Reset = time.Now().Add(time.Duration(seconds) * time.Second)
	} else if when, err := http.ParseTime(retryAfter); err == nil {
		rl.Reset = when
	} else if unix, err := strconv.ParseInt(resp.Header.Get("X-RateLimit-Reset"), 10, 64); err == nil && unix > 0 {
		rl.Reset = time.Unix(unix, 0)
	}
	return rl
}
