package edge

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/chromedp"

	"github.com/edgeflow/edgeflow/internal/publish/transform"
	"github.com/edgeflow/edgeflow/internal/testenv/browsertest"
)

// TestBrowserCopiesWorkingSRITag drives the UI like a person would — search
// with a typo, open the library, open the version, copy the tag — then puts
// the copied tags into a page on another origin and checks that the browser
// ran the script and applied the stylesheet only when their integrity holds.
func TestBrowserCopiesWorkingSRITag(t *testing.T) {
	_, edge, _ := newTestEdge(t, nil)
	ctx := browsertest.Start(t, 90*time.Second)

	for _, permission := range []string{"clipboard-read", "clipboard-write"} {
		if _, err := chromedp.CallBrowser(ctx, browser.SetPermission, browser.SetPermissionParams{
			Permission: &browser.PermissionDescriptor{Name: permission}, Setting: browser.PermissionSettingGranted, Origin: edge.URL,
		}); err != nil {
			t.Fatalf("grant %s: %v", permission, err)
		}
	}
	err := chromedp.Do(ctx,
		chromedp.Navigate(edge.URL+"/"),
		chromedp.WaitVisible(chromedp.ID("search")),
		chromedp.SendKeys(chromedp.ID("search"), "tstlib"),
		// The list is replaced by the API's answer for the typed (misspelt) query.
		chromedp.WaitVisible(chromedp.CSS(`#libraries[data-query="tstlib"] li.library a.name`)),
	)
	if err != nil {
		t.Fatalf("search in the UI: %v", err)
	}
	firstResult := run(t, ctx, chromedp.Text(chromedp.CSS(`#libraries li.library a.name`)))
	if firstResult != testLib {
		t.Fatalf("first search result %q, want %q", firstResult, testLib)
	}
	err = chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`#libraries li.library a.name`)),
		chromedp.WaitVisible(chromedp.ID("versions")),
		chromedp.Click(chromedp.CSS(`#versions a[href="/browse/testlib/2.1.0"]`)),
		chromedp.WaitVisible(chromedp.ID("files")),
	)
	if err != nil {
		t.Fatalf("open the library and its version: %v", err)
	}
	scriptTag := run(t, ctx, chromedp.TextContent(chromedp.CSS(`code.tag[data-path="testlib.js"]`)))
	linkTag := run(t, ctx, chromedp.TextContent(chromedp.CSS(`code.tag[data-path="testlib.css"]`)))
	err = chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`li.file.default button.copy`)),
		chromedp.Func(func(ctx context.Context, tgt *chromedp.Target) error {
			_, err := chromedp.Poll[bool](`document.querySelector("li.file.default button.copy").textContent === "Copied!"`,
				chromedp.WithPollingTimeout(5*time.Second))(ctx, tgt)
			return err
		}),
	)
	if err != nil {
		t.Fatalf("click Copy: %v", err)
	}
	if clipboard := run(t, ctx, chromedp.Evaluate[string](`navigator.clipboard.readText()`, chromedp.EvalAwaitPromise)); clipboard != scriptTag {
		t.Errorf("Copy put %q on the clipboard, want the script tag %q", clipboard, scriptTag)
	}
	if !strings.HasPrefix(scriptTag, `<script src="`+edge.URL+`/ajax/libs/testlib/2.1.0/testlib.js" integrity="sha512-`) ||
		!strings.HasSuffix(scriptTag, `crossorigin="anonymous" referrerpolicy="no-referrer"></script>`) {
		t.Fatalf("script tag from the page: %s", scriptTag)
	}
	if !strings.HasPrefix(linkTag, `<link rel="stylesheet" href="`+edge.URL+`/ajax/libs/testlib/2.1.0/testlib.css" integrity="sha512-`) {
		t.Fatalf("link tag from the page: %s", linkTag)
	}

	// A page on another origin (CORS applies) that embeds the copied tags.
	forged := transform.SRI([]byte("not the published bytes"))
	tamper := func(tag string) string {
		i := strings.Index(tag, `integrity="`) + len(`integrity="`)
		j := i + strings.IndexByte(tag[i:], '"')
		return tag[:i] + forged + tag[j:]
	}
	pages := map[string]string{
		"/genuine":  scriptTag + linkTag,
		"/tampered": tamper(scriptTag) + tamper(linkTag),
	}
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		head, ok := pages[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte("<!doctype html><html><head>" + head + "</head><body><div id=\"probe\"></div></body></html>"))
	}))
	defer site.Close()

	for path, wantLoaded := range map[string]bool{"/genuine": true, "/tampered": false} {
		// Navigate returns after the load event: parser-blocking scripts and
		// stylesheets in the head have run or been refused by then.
		if err := chromedp.Do(ctx, chromedp.Navigate(site.URL+path)); err != nil {
			t.Fatalf("load %s: %v", path, err)
		}
		loaded := run(t, ctx, chromedp.Evaluate[bool](`window.__loaded === true`))
		width := run(t, ctx, chromedp.Evaluate[string](`getComputedStyle(document.getElementById("probe")).width`))
		if loaded != wantLoaded {
			t.Errorf("%s: script executed = %v, want %v", path, loaded, wantLoaded)
		}
		if styled := width == "42px"; styled != wantLoaded {
			t.Errorf("%s: stylesheet applied = %v (probe width %s), want %v", path, styled, width, wantLoaded)
		}
	}
	// Both pages name the same URL, which the genuine page loaded: only the
	// integrity attribute can have stopped the tampered one.
}

// run runs one action that returns a value and fails the test on error.
func run[T any](t *testing.T, ctx context.Context, a chromedp.Action[T]) T {
	t.Helper()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatalf("browser: %v", err)
	}
	return v
}
