package gate

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/edgeflow/edgeflow/internal/testenv/browsertest"
)

// A page the browser has parsed only in part (its title in, its body not
// yet: a busy machine's parser yields between the two) is not the page:
// pageText must not take it for one, or TestBrowserWaitsInTheDemoRoomAndGetsIn
// reads the origin's "Demo origin|" with no welcome in it.
func TestPageTextReadsOnlyAWholeDocument(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: drives a headless Chromium (not started with -short)")
	}
	rest := make(chan struct{})
	released := func() {
		select {
		case <-rest:
		default:
			close(rest)
		}
	}
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, "<!doctype html>\n<html><head><title>Half</title></head>\n")
		w.(http.Flusher).Flush()
		select { // the body only once the test has read the half
		case <-rest:
		case <-r.Context().Done():
			return
		}
		fmt.Fprint(w, "<body><p>the rest of the page</p></body></html>\n")
	}))
	defer site.Close()
	defer released() // before Close, which waits for the handler

	ctx := browsertest.Start(t, 2*time.Minute)
	// Page.navigate returns once the document is committed, not loaded
	// (chromedp.Navigate would wait for a load the held body delays).
	if _, err := chromedp.Call(ctx, page.Navigate, page.NavigateParams{URL: site.URL + "/"}); err != nil {
		t.Fatalf("open the page: %v", err)
	}
	eventually(t, 30*time.Second, "the browser parses the page's head", func() (bool, string) {
		attempt, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		title, err := chromedp.Run(attempt, chromedp.Evaluate[string](`document.title`))
		return err == nil && title == "Half", fmt.Sprint(title, err)
	})
	if s, err := readPage(ctx); err == nil && strings.HasPrefix(s, "Half|") {
		t.Errorf("a page half parsed was read as the page: %q", s)
	}

	released()
	whole := pageText(t, ctx, 30*time.Second, func(s string) bool { return strings.HasPrefix(s, "Half|") })
	if !strings.Contains(whole, "the rest of the page") {
		t.Fatalf("the whole page read as %q, want its body too", whole)
	}
}
