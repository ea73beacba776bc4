package registry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
)

// DefaultMaxTarballBytes bounds a release archive as downloaded: npm refuses
// to publish far smaller packages, and GitHub archives of front-end
// libraries are tens of megabytes.
const DefaultMaxTarballBytes = 512 << 20

// TooLargeError is a tarball over the download bound: no retry will help.
type TooLargeError struct {
	URL string
	Max int64
	// Declared is the Content-Length the server announced, -1 when the
	// bound was passed while streaming.
	Declared int64
}

func (e *TooLargeError) Error() string {
	if e.Declared >= 0 {
		return fmt.Sprintf("tarball %s is %d bytes; the limit is %d", redactURL(e.URL), e.Declared, e.Max)
	}
	return fmt.Sprintf("tarball %s is larger than the limit of %d bytes", redactURL(e.URL), e.Max)
}

// IntegrityError is a complete download whose digest is not the one the
// registry published: the registry serves other bytes than it signed, and
// downloading again gives the same bytes.
type IntegrityError struct{ Err error }

func (e *IntegrityError) Error() string { return e.Err.Error() }
func (e *IntegrityError) Unwrap() error { return e.Err }

// Download streams the tarball of dist into the file dst, at most maxBytes
// of it (DefaultMaxTarballBytes when 0): a larger one is refused from its
// Content-Length before anything is written, or stopped as soon as it
// passes the bound. The registry's digest is checked; a mismatch on a
// complete body is an *IntegrityError. progress, when not nil, is told the
// bytes received so far.
func Download(ctx context.Context, client *http.Client, dist Dist, token, dst string, maxBytes int64, progress func(int64)) error {
	if maxBytes <= 0 {
		maxBytes = DefaultMaxTarballBytes
	}
	var verifier *Verifier
	if dist.Integrity != "" || dist.Shasum != "" {
		var err error
		if verifier, err = NewVerifier(dist.Integrity, dist.Shasum); err != nil {
			return &IntegrityError{Err: err}
		}
	}
	body, size, err := fetch(ctx, client, dist.Tarball, token)
	if err != nil {
		return err
	}
	defer body.Close()
	if size > maxBytes {
		return &TooLargeError{URL: dist.Tarball, Max: maxBytes, Declared: size}
	}
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	defer func() { _ = out.Close() }() // on the error paths; the last line checks it
	var w io.Writer = out
	if verifier != nil {
		w = io.MultiWriter(out, verifier)
	}
	r := &countingReader{r: io.LimitReader(body, maxBytes+1), report: progress}
	if _, err := io.Copy(w, r); err != nil {
		return fmt.Errorf("download %s: %w", redactURL(dist.Tarball), withoutURL(err))
	}
	if r.n > maxBytes {
		return &TooLargeError{URL: dist.Tarball, Max: maxBytes, Declared: -1}
	}
	if verifier != nil {
		if err := verifier.Verify(); err != nil {
			return &IntegrityError{Err: err}
		}
	}
	return out.Close()
}

type countingReader struct {
	r      io.Reader
	n      int64
	report func(int64)
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	if c.report != nil && n > 0 {
		c.report(c.n)
	}
	return n, err
}

// RedirectPolicy is an http.Client CheckRedirect that follows at most ten
// redirects, only over https (or http to a loopback host, for local
// registries), and only to the hosts given (host or host:port, as in a
// registry's base URL) — the registries themselves and the hosts they
// declare for tarballs, such as codeload.github.com for GitHub archives.
// A token set on the first request is never sent to another host.
func RedirectPolicy(allowedHosts ...string) func(*http.Request, []*http.Request) error {
	allowed := map[string]bool{}
	for _, h := range allowedHosts {
		if u, err := url.Parse(h); err == nil && u.Host != "" {
			h = u.Host
		}
		if h != "" {
			allowed[strings.ToLower(h)] = true
		}
	}
	return func(req *http.Request, via []*http.Request) error {
		if len(via) >= 10 {
			return errors.New("stopped after 10 redirects")
		}
		host := strings.ToLower(req.URL.Host)
		if !allowed[host] && !allowed[strings.ToLower(req.URL.Hostname())] {
			return fmt.Errorf("redirect to %s refused: it is not a registry host or a declared tarball host", req.URL.Host)
		}
		if req.URL.Scheme != "https" && !(req.URL.Scheme == "http" && isLoopback(req.URL.Hostname())) {
			return fmt.Errorf("redirect to %s refused: not https", redactURL(req.URL.String()))
		}
		if len(via) > 0 && !strings.EqualFold(via[0].URL.Host, req.URL.Host) {
			req.Header.Del("Authorization")
		}
		return nil
	}
}

func isLoopback(host string) bool {
	return host == "localhost" || host == "127.0.0.1" || host == "::1" || strings.HasPrefix(host, "127.")
}
