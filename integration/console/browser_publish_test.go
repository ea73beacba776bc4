package console

import (
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/edgeflow/edgeflow/internal/console"
	"github.com/edgeflow/edgeflow/internal/testenv"
	"github.com/edgeflow/edgeflow/internal/testenv/browsertest"
)

// The Publish pages in headless Chromium: sign in, open Publish, check a
// library for new versions with the form and see it published from the
// local test registry, the hostile release rejected with its reason; both
// pages pass axe-core in both themes (screenshots kept as artifacts).
func TestPublishInTheBrowser(t *testing.T) {
	const lib, idle = "it-web-demo", "it-web-idle"
	ps := startPublishStack(t, lib, idle)
	axe := axeSource(t)
	artifacts := artifactsDir(t)
	tokens, err := console.ParseTokens([]string{"admin:" + rwSecret}, "test")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(console.New(console.Options{Temporal: env.Client, Tokens: tokens, WebUI: webUI, Namespace: "default",
		Libraries: ps.libs, Log: slog.New(slog.NewTextHandler(&testenv.SyncBuffer{}, nil))}).Handler())
	t.Cleanup(srv.Close)

	ctx := browsertest.Start(t, 5*time.Minute)
	run := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, steps...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	run("sign in", chromedp.Navigate(srv.URL+"/"), chromedp.WaitVisible(chromedp.CSS("#token")),
		chromedp.SendKeys(chromedp.CSS("#token"), rwSecret+kb.Enter), chromedp.WaitVisible(chromedp.CSS("#manage")))
	run("open Publish", chromedp.Click(chromedp.CSS(`nav a[href="/publish"]`)), chromedp.WaitVisible(chromedp.CSS(`tr[data-library="`+lib+`"]`)))
	if st := text(t, ctx, `tr[data-library="`+lib+`"] .status`); st != "not_published" {
		t.Errorf("%s before its check: %q", lib, st)
	}
	run("open the library", chromedp.Click(chromedp.CSS(`a[href="/publish/`+lib+`"]`)), chromedp.WaitVisible(chromedp.CSS("#check")))
	run("check for new versions", chromedp.Click(chromedp.CSS("#check")), chromedp.WaitVisible(chromedp.CSS(".notice")))
	if n := text(t, ctx, ".notice"); !strings.Contains(n, "publish-package/"+lib) {
		t.Errorf("the notice after the form: %q", n)
	}
	// The check publishes 1.0.0 and 1.1.0 and rejects 1.2.0: reload the
	// page until it shows them so.
	testenv.Eventually(t, 2*time.Minute, time.Second, "the library's page shows the check's outcome", func() (bool, string) {
		run("reload", chromedp.Navigate(srv.URL+"/publish/"+lib), chromedp.WaitVisible(chromedp.CSS("#versions")))
		got, err := chromedp.Run(ctx, chromedp.Evaluate[string](`[...document.querySelectorAll("tr[data-version]")].map(r => r.dataset.version + "=" + r.dataset.state).join(" ") + " " + document.getElementById("library-state").textContent`))
		if err != nil {
			return false, err.Error()
		}
		return got == "2.0.0-beta.1=skipped 1.2.0=rejected 1.1.0=published 1.0.0=published published", got
	})
	if latest := text(t, ctx, "#latest"); latest != "1.1.0" {
		t.Errorf("latest version %q", latest)
	}
	if why := text(t, ctx, `tr[data-version="1.2.0"] td:nth-child(3)`); !strings.HasPrefix(why, "BadArchive: ") {
		t.Errorf("the rejection's reason: %q", why)
	}
	link, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('tr[data-version="1.1.0"] a').href`))
	if want := webUI + "/namespaces/default/workflows/publish%2F" + lib + "@1.1.0/"; err != nil || !strings.HasPrefix(link, want) {
		t.Errorf("the run's Web UI link %q (%v), want %s…", link, err, want)
	}
	checkAccessible(t, ctx, axe, artifacts, "library")
	run("back to Publish", chromedp.Navigate(srv.URL+"/publish"), chromedp.WaitVisible(chromedp.CSS(`tr[data-library="`+lib+`"]`)))
	if latest := text(t, ctx, `tr[data-library="`+lib+`"] .latest`); latest != "1.1.0" {
		t.Errorf("the table's latest version of %s: %q", lib, latest)
	}
	checkAccessible(t, ctx, axe, artifacts, "publish")
}
