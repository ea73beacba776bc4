package registry

import (
	"context"
	"crypto/sha512"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func sri512(data []byte) string {
	sum := sha512.Sum512(data)
	return sri("sha512", sum[:])
}

// TestDownloadBoundsTheTarballBeforeTheDisk: an announced size over the
// bound is refused before a byte is written; a body that passes it while
// streaming is stopped there.
func TestDownloadBoundsTheTarballBeforeTheDisk(t *testing.T) {
	body := strings.Repeat("x", 4096)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/chunked" {
			w.(http.Flusher).Flush() // no Content-Length: streamed
		} else {
			w.Header().Set("Content-Length", "4096")
		}
		w.Write([]byte(body))
	}))
	defer srv.Close()
	dst := filepath.Join(t.TempDir(), "a.tgz")
	err := Download(context.Background(), srv.Client(), Dist{Tarball: srv.URL + "/sized"}, "", dst, 1000, nil)
	var tooLarge *TooLargeError
	if !errors.As(err, &tooLarge) || tooLarge.Declared != 4096 {
		t.Errorf("announced 4096 bytes over a 1000-byte bound: %v", err)
	}
	if _, err := os.Stat(dst); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the refused tarball reached the disk: %v", err)
	}
	var seen int64
	err = Download(context.Background(), srv.Client(), Dist{Tarball: srv.URL + "/chunked"}, "", dst, 1000, func(n int64) { seen = n })
	if !errors.As(err, &tooLarge) || tooLarge.Declared != -1 || seen > 1001 {
		t.Errorf("streamed 4096 bytes over a 1000-byte bound: %v after %d bytes", err, seen)
	}
	if err := Download(context.Background(), srv.Client(), Dist{Tarball: srv.URL + "/chunked", Integrity: sri512([]byte(body))}, "", dst, 0, nil); err != nil {
		t.Errorf("a tarball within the bound: %v", err)
	}
}

// TestDownloadIntegrityMismatchIsPermanent: a complete body with another
// digest is an *IntegrityError (wrapping ErrIntegrity).
func TestDownloadIntegrityMismatchIsPermanent(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("tampered")) }))
	defer srv.Close()
	err := Download(context.Background(), srv.Client(), Dist{Tarball: srv.URL, Integrity: sri512([]byte("signed"))}, "", filepath.Join(t.TempDir(), "a.tgz"), 0, nil)
	var mismatch *IntegrityError
	if !errors.As(err, &mismatch) || !errors.Is(err, ErrIntegrity) {
		t.Errorf("tampered tarball: %v", err)
	}
}

// TestRedirectPolicy: redirects go only to allowed hosts, and a token set
// for the first host is not sent to another.
func TestRedirectPolicy(t *testing.T) {
	var gotAuth string
	tarballs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotAuth = r.Header.Get("Authorization")
		w.Write([]byte("archive"))
	}))
	defer tarballs.Close()
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("evil")) }))
	defer elsewhere.Close()
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		target := tarballs.URL
		if r.URL.Path == "/evil" {
			target = elsewhere.URL
		}
		http.Redirect(w, r, target+"/x.tgz", http.StatusFound)
	}))
	defer api.Close()
	// The two local servers differ only in port; allow the API and the
	// tarball host by host:port.
	client := &http.Client{CheckRedirect: RedirectPolicy(api.URL, tarballs.URL)}
	dst := filepath.Join(t.TempDir(), "a.tgz")
	if err := Download(context.Background(), client, Dist{Tarball: api.URL + "/ok"}, "secret-token", dst, 0, nil); err != nil {
		t.Fatalf("redirect to a declared tarball host: %v", err)
	}
	if gotAuth != "" {
		t.Errorf("the token followed the redirect to another host: %q", gotAuth)
	}
	err := Download(context.Background(), client, Dist{Tarball: api.URL + "/evil"}, "", dst, 0, nil)
	if err == nil || !strings.Contains(err.Error(), "refused") {
		t.Errorf("redirect to an undeclared host: %v", err)
	}
}
