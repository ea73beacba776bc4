package web

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/edgeflow/edgeflow/internal/publish/pubclient"
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
