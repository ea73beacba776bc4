// Package browsertest starts a real headless Chromium for tests that drive
// a page the way a person's browser does (the edge's UI, the gate's queue
// page).
package browsertest

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

// FindChromium locates the browser: $EDGEFLOW_CHROMIUM_BIN, then Debian's
// chromium on PATH.
func FindChromium(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("EDGEFLOW_CHROMIUM_BIN"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("the browser test needs a headless Chromium and none was found: install Debian's package " +
		"(`apt-get update && apt-get install -y chromium`) or set EDGEFLOW_CHROMIUM_BIN")
	return ""
}

// Start starts a headless Chromium with a fresh profile and no network
// chatter of its own, for at most within; it is stopped when the test
// ends. A start that fails (on a machine busy with other browsers,
// Chromium now and then exits before it listens) is tried again with a new
// profile, as the harness does with servers.
func Start(t testing.TB, within time.Duration) context.Context {
	t.Helper()
	var lastErr error
	for attempt := range 3 {
		if attempt > 0 {
			t.Logf("chromium did not start (%v); trying again", lastErr)
			time.Sleep(time.Second)
		}
		opts := append(chromedp.DefaultExecAllocatorOptions[:],
			chromedp.ExecPath(FindChromium(t)),
			chromedp.Headless,
			chromedp.NoSandbox,
			chromedp.DisableGPU,
			chromedp.NoFirstRun,
			chromedp.UserDataDir(t.TempDir()),
			chromedp.Flag("disable-quic", true),
			chromedp.Flag("disable-background-networking", true),
			chromedp.Flag("disable-component-update", true),
			chromedp.Flag("disable-sync", true),
			chromedp.Flag("disable-dev-shm-usage", true),
		)
		allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
		ctx, cancelBrowser := chromedp.NewContext(allocCtx)
		ctx, cancelTimeout := context.WithTimeout(ctx, within)
		stop := func() {
			cancelTimeout()
			cancelBrowser()
			cancelAlloc()
		}
		if _, err := chromedp.Call(ctx, network.Enable, network.EnableParams{}); err != nil {
			stop()
			lastErr = err
			continue
		}
		t.Cleanup(stop)
		return ctx
	}
	t.Fatalf("start chromium: %v", lastErr)
	return nil
}
