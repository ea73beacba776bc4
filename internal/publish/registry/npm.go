package registry

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// DefaultNPMURL is the public npm registry.
const DefaultNPMURL = "https://registry.npmjs.org"

// abbreviatedMetadata asks npm for the install document: versions and their
// dist only, far smaller than the full packument.
const abbreviatedMetadata = "application/vnd.npm.install-v1+json"

// NPM lists package versions from an npm registry. The zero value uses the
// public registry, http.DefaultClient and DefaultUserAgent.
type NPM struct {
	BaseURL   string
	Client    *http.Client
	UserAgent string
}

// npmDocument is the part of the (abbreviated) package document used here.
type npmDocument struct {
	Versions map[string]struct {
		Dist struct {
			Tarball   string `json:"tarball"`
			Integrity string `json:"integrity"`
			Shasum    string `json:"shasum"`
		} `json:"dist"`
	} `json:"versions"`
}

// PackageURL is where the document of package name lives; a scoped name's
// slash is escaped ("@scope%2Fname") as the registry expects.
func (n *NPM) PackageURL(name string) string {
	base := strings.TrimRight(n.BaseURL, "/")
	if base == "" {
		base = DefaultNPMURL
	}
	return base + "/" + url.PathEscape(name)
}

// Versions lists every published version of package name with its tarball
// and digests. With etag set the request is conditional, and an unchanged
// document gives a Listing with NotModified. A missing package is an error
// wrapping ErrNotFound.
func (n *NPM) Versions(ctx context.Context, name string, etag string) (*Listing, error) {
	what := fmt.Sprintf("npm package %q", name)
	if name == "" {
		return nil, fmt.Errorf("npm package: empty name")
	}
	packageURL := n.PackageURL(name)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, packageURL, nil)
	if err != nil {
		return nil, fmt.Errorf("%s: bad registry URL %s: %w", what, redactURL(packageURL), withoutURL(err))
	}
	req.Header.Set("Accept", abbreviatedMetadata)
	userAgent := n.UserAgent
	if userAgent == "" {
		userAgent = DefaultUserAgent
	}
	req.Header.Set("User-Agent", userAgent)
	if etag != "" {
		req.Header.Set("If-None-Match", etag)
	}

	resp, err := do(n.Client, req, what)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()

	newETag := resp.Header.Get("ETag")
	if resp.StatusCode == http.StatusNotModified {
		if newETag == "" {
			newETag = etag
		}
		return &Listing{NotModified: true, ETag: newETag}, nil
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, statusError(resp, what, "")
	}

	body, err := readLimited(resp.Body, maxListingBytes, what)
	if err != nil {
		return nil, err
	}
	var doc npmDocument
	if err := json.Unmarshal(body, &doc); err != nil {
		return nil, fmt.Errorf("%s: malformed registry document from %s: %w", what, redactURL(packageURL), err)
	}
	listing := &Listing{ETag: newETag, Versions: make(map[string]Dist, len(doc.Versions))}
	for version, meta := range doc.Versions {
		listing.Versions[version] = Dist{
			Tarball:   meta.Dist.Tarball,
			Integrity: meta.Dist.Integrity,
			Shasum:    meta.Dist.Shasum,
		}
	}
	return listing, nil
}
