package web

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/edgeflow/edgeflow/internal/publish/pubclient"
	"github.com/edgeflow/edgeflow/workflows/publish/contract"
)

// The Publish pages' refusals, before anything reaches the store or
// Temporal (integration/console drives them on the real stack).
func TestPublishPagesRefusals(t *testing.T) {
	now := time.Now()
	p := testPages(&now)
	p.o.Libraries = pubclient.Libraries{CatalogDir: t.TempDir()} // an empty catalog
	h := p.Handler()
	if rec := do(t, h, "GET", "/publish", nil); rec.Code != http.StatusSeeOther {
		t.Errorf("signed out: %d, want the sign-in form", rec.Code)
	}
	c := signIn(t, h, secret)
	rec := do(t, h, "GET", "/publish/it-nope", nil, c)
	if rec.Code != http.StatusNotFound || !strings.Contains(rec.Body.String(), `name: no library &#34;it-nope&#34; in the catalog`) {
		t.Errorf("an unknown library: %d\n%s", rec.Code, rec.Body)
	}
	if !strings.Contains(rec.Body.String(), `<a href="/publish">Publish</a>`) {
		t.Errorf("no Publish entry in the nav:\n%s", rec.Body)
	}
	csrf := csrfField.FindStringSubmatch(rec.Body.String())[1]
	rec = do(t, h, "POST", "/publish/it-nope", url.Values{"csrf": {csrf}, "version": {"1.0/../x"}}, c)
	// The version is refused before anything starts (the library is unknown too).
	if rec.Code != http.StatusNotFound || !strings.Contains(rec.Body.String(), "version: &#34;1.0/../x&#34; is not a version") {
		t.Errorf("a bad version: %d\n%s", rec.Code, rec.Body)
	}
	if rec := do(t, h, "POST", "/publish/it-nope", url.Values{"version": {"1.0.0"}}, c); rec.Code != http.StatusForbidden {
		t.Errorf("no CSRF token: %d", rec.Code)
	}
	ro := signIn(t, h, "ro-"+secret)
	rec = do(t, h, "GET", "/publish/it-nope", nil, ro)
	csrf = csrfField.FindStringSubmatch(rec.Body.String())[1]
	if rec := do(t, h, "POST", "/publish/it-nope", url.Values{"csrf": {csrf}}, ro); rec.Code != http.StatusForbidden || !strings.Contains(rec.Body.String(), "read-only") {
		t.Errorf("a read-only token publishing: %d\n%s", rec.Code, rec.Body)
	}
	rec = do(t, h, "GET", "/publish", nil, c)
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), "The catalog has no libraries.") {
		t.Errorf("the empty catalog: %d\n%s", rec.Code, rec.Body)
	}
}

// The Publish page says how far behind the registry's changes the follower
// is, that the feed is failing and the Schedule covers meanwhile, or that
// no follower runs.
func TestPublishPageShowsTheFollower(t *testing.T) {
	now := time.Now()
	p := testPages(&now)
	p.o.Libraries = pubclient.Libraries{CatalogDir: t.TempDir()}
	caught := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	var f pubclient.Follower
	var ferr error
	p.o.Follower = func(_ context.Context, registry string) (pubclient.Follower, error) {
		f.Registry = registry
		return f, ferr
	}
	h := p.Handler()
	c := signIn(t, h, secret)
	page := func() string {
		t.Helper()
		rec := do(t, h, "GET", "/publish", nil, c)
		if rec.Code != http.StatusOK {
			t.Fatalf("GET /publish: %d\n%s", rec.Code, rec.Body)
		}
		return rec.Body.String()
	}
	f = pubclient.Follower{Running: true, Lag: 3200 * time.Millisecond, Status: contract.FollowerStatus{CaughtUpAt: caught, Checking: []string{"lib-a"},
		Stats: contract.FollowerStats{Checks: 4, Changed: 5}}}
	if body := page(); !strings.Contains(body, `<span class="lag">3s behind</span> (every change seen up to 2026-05-01 12:00:00 UTC); checking lib-a. 4 checks started for 5 changes`) {
		t.Errorf("a following follower:\n%s", body)
	}
	f.Status.StalledSince, f.Status.RetryAt, f.Status.LastError = caught, caught.Add(8*time.Second), "registry changes feed stalled"
	if body := page(); !strings.Contains(body, "The npm changes feed is failing since 2026-05-01 12:00:00 UTC (registry changes feed stalled); the follower retries at 12:00:08 UTC, and the package-updates Schedule finds new versions meanwhile.") {
		t.Errorf("a stalled feed:\n%s", body)
	}
	f = pubclient.Follower{}
	if body := page(); !strings.Contains(body, "No follower of the npm registry's changes runs: new versions are found by the package-updates Schedule only.") {
		t.Errorf("no follower:\n%s", body)
	}
}
