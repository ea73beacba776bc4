// Package registry finds the versions of a library at its source (the npm
// registry or GitHub tags) and fetches and verifies release tarballs.
//
// Errors name the registry, the URL (without credentials) and the status; a
// token given to a client never appears in an error or a printed client.
package registry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"unicode/utf8"
)

// ErrNotFound is wrapped by errors for a package, repository or tarball that
// the registry says does not exist (HTTP 404), so callers can tell a catalog
// mistake from a transient failure with errors.Is.
var ErrNotFound = errors.New("not found")

// DefaultUserAgent identifies the pipeline to registries when none is set.
const DefaultUserAgent = "edgeflow-publisher"

// Dist is where one version's release archive is and how to check it.
// Integrity (an SRI string) and Shasum (hex SHA-1) are empty when the source
// publishes no digest, as for GitHub tag archives.
type Dist struct {
	Tarball   string
	Integrity string
	Shasum    string
}

// Listing is the set of versions a source offers. When NotModified is true
// the source answered the conditional request with 304: Versions is nil and
// the caller's previous listing still holds. ETag is to be sent next time.
type Listing struct {
	NotModified bool
	ETag        string
	Versions    map[string]Dist
}

// maxListingBytes bounds a version document; the largest npm packages have
// abbreviated documents of a few megabytes.
const maxListingBytes = 64 << 20

// errorBodyBytes is how much of an error response body goes into an error.
const errorBodyBytes = 200

// httpClient returns c, or http.DefaultClient when c is nil; requests are
// bounded by their context.
func httpClient(c *http.Client) *http.Client {
	if c != nil {
		return c
	}
	return http.DefaultClient
}

// redactURL returns raw without user info, for error messages.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "<unparsable URL>"
	}
	u.User = nil
	return u.String()
}

// withoutURL strips the *url.Error wrapper, whose text repeats the URL with
// whatever user info it has; the caller names the URL itself.
func withoutURL(err error) error {
	var urlErr *url.Error
	if errors.As(err, &urlErr) {
		return urlErr.Err
	}
	return err
}

// do sends req and returns the response, turning transport failures into
// errors that name what was requested but no credentials.
func do(client *http.Client, req *http.Request, what string) (*http.Response, error) {
	resp, err := httpClient(client).Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s: GET %s: %w", what, redactURL(req.URL.String()), withoutURL(err))
	}
	return resp, nil
}

// statusError describes a non-2xx response with the start of its body, with
// secret (if any) removed in case the server echoes it.
func statusError(resp *http.Response, what, secret string) error {
	snippet, _ := io.ReadAll(io.LimitReader(resp.Body, errorBodyBytes))
	body := strings.ToValidUTF8(string(snippet), string(utf8.RuneError))
	if secret != "" {
		body = strings.ReplaceAll(body, secret, "[redacted]")
	}
	body = strings.TrimSpace(body)
	msg := fmt.Sprintf("%s: GET %s: status %s", what, redactURL(resp.Request.URL.String()), resp.Status)
	if body != "" {
		msg += ": " + body
	}
	if resp.StatusCode == http.StatusNotFound {
		return fmt.Errorf("%s: %w", msg, ErrNotFound)
	}
	return errors.New(msg)
}

// readLimited reads a whole response body, failing rather than truncating
// when it exceeds limit.
func readLimited(r io.Reader, limit int64, what string) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, fmt.Errorf("%s: reading response: %w", what, err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s: response larger than %d bytes", what, limit)
	}
	return data, nil
}

// Fetch GETs a release tarball and returns its body for streaming; the caller
// closes it. token, when set, is sent as a bearer token (for GitHub archives
// of private or rate-limited repositories). A non-2xx status is an error
// (wrapping ErrNotFound for 404, or a *RateLimitError).
func Fetch(ctx context.Context, client *http.Client, tarballURL string, token string) (io.ReadCloser, error) {
	body, _, err := fetch(ctx, client, tarballURL, token)
	return body, err
}

// fetch is Fetch that also returns the declared length (-1 when unknown).
func fetch(ctx context.Context, client *http.Client, tarballURL string, token string) (io.ReadCloser, int64, error) {
	what := "fetching tarball"
	if tarballURL == "" {
		return nil, 0, fmt.Errorf("%s: empty URL", what)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, tarballURL, nil)
	if err != nil {
		return nil, 0, fmt.Errorf("%s: bad URL %s: %w", what, redactURL(tarballURL), withoutURL(err))
	}
	if req.URL.Scheme != "http" && req.URL.Scheme != "https" {
		return nil, 0, fmt.Errorf("%s: URL %s is not http(s)", what, redactURL(tarballURL))
	}
	req.Header.Set("User-Agent", DefaultUserAgent)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := do(client, req, what)
	if err != nil {
		return nil, 0, err
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		defer resp.Body.Close()
		if rl := rateLimitError(resp, what); rl != nil {
			return nil, 0, rl
		}
		return nil, 0, statusError(resp, what, token)
	}
	return resp.Body, resp.ContentLength, nil
}

// CachedListing is a package's last listing, kept so that an unchanged
// package costs a conditional request answered with 304.
type CachedListing struct {
	ETag     string          `json:"etag"`
	Versions map[string]Dist `json:"versions"`
}

// SameHost reports whether two URLs name the same host (and port).
func SameHost(a, b string) bool {
	ua, errA := url.Parse(a)
	ub, errB := url.Parse(b)
	return errA == nil && errB == nil && ua.Host != "" && strings.EqualFold(ua.Host, ub.Host)
}
