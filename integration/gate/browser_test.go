package gate

import (
	"context"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/edgeflow/edgeflow/internal/admit/gate"
	"github.com/edgeflow/edgeflow/internal/devstack"
	"github.com/edgeflow/edgeflow/internal/testenv"
)

// findChromium locates the browser: $EDGEFLOW_CHROMIUM_BIN, then Debian's
// chromium on PATH.
func findChromium(t *testing.T) string {
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

// newChromium starts a headless Chromium with a fresh profile; it is
// stopped when the test ends.
func newChromium(t *testing.T, within time.Duration) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(findChromium(t)),
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
	t.Cleanup(func() {
		cancelTimeout()
		cancelBrowser()
		cancelAlloc()
	})
	if _, err := chromedp.Call(ctx, network.Enable, network.EnableParams{}); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return ctx
}

// The demo room as a browser sees it: the one slot is taken, so the
// browser gets the queue page with the room's status code; the page
// refreshes itself; once the slot's session ends, a refresh lets it in to
// the demo origin.
func TestBrowserWaitsInTheDemoRoomAndGetsIn(t *testing.T) {
	testenv.Require(t, env)
	room := devstack.DemoRoom()
	room.Name = "it-demo-browser"
	room.TotalActiveUsers, room.NewUsersPerMinute = 1, 1 // one slot: a second visitor waits
	const minuteSeconds = 6
	createRoom(t, room, minuteSeconds)
	origin := httptest.NewServer(devstack.DemoOrigin())
	defer origin.Close()
	g := startGate(t, "local", "local-browser", origin.URL)
	eventually(t, 30*time.Second, "the gate serves the room", func() (bool, string) {
		return !g.roomMinute(t, room.Name).IsZero(), ""
	})

	// Someone else takes the only slot, and leaves.
	first := newBrowser(t)
	resp, err := first.c.Get(g.URL + "/")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("the first visitor: %v %v", resp, err)
	}
	resp.Body.Close()

	ctx := newChromium(t, 3*time.Minute)
	var mu sync.Mutex
	var documents []int64 // status of each page the browser loaded
	if err := chromedp.Listen(ctx, func(ev any) {
		if e, ok := ev.(*network.EventResponseReceived); ok && e.Type == network.ResourceTypeDocument {
			mu.Lock()
			documents = append(documents, e.Response.Status)
			mu.Unlock()
		}
	}); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(g.URL+"/")); err != nil {
		t.Fatalf("open the site: %v", err)
	}
	title := run(t, ctx, chromedp.Title())
	status := run(t, ctx, chromedp.Text(chromedp.CSS(`[role="status"]`)))
	if title != "You are in line" || !strings.Contains(status, "wait") {
		t.Fatalf("the browser sees %q / %q, want the queue page", title, status)
	}
	got, err := chromedp.Call(ctx, network.GetCookies, network.GetCookiesParams{})
	if err != nil {
		t.Fatal(err)
	}
	cookies := got.Cookies
	var found *network.Cookie
	for _, c := range cookies {
		if c.Name == gate.CookieName {
			found = c
		}
	}
	if found == nil || !found.HTTPOnly || found.SameSite != network.CookieSameSiteLax || found.Secure {
		t.Fatalf("the waiting room cookie in the browser: %+v (want HttpOnly, SameSite=Lax, not Secure over HTTP)", found)
	}

	// The page refreshes by itself until the browser is let in.
	var welcome string
	deadline := time.Now().Add(150 * time.Second)
	for time.Now().Before(deadline) {
		w, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(document.getElementById("welcome") || {}).textContent || ""`))
		if err == nil && w != "" {
			welcome = w
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	t.Logf("pages the browser loaded (status): %v", documents)
	if welcome != "Welcome to the demo origin" {
		t.Fatalf("the browser was not let in: %q after loading %v", welcome, documents)
	}
	queued := 0
	for _, s := range documents[:len(documents)-1] {
		if s != int64(room.QueueingStatusCode) {
			t.Errorf("a queue page came with status %d, want the room's %d", s, room.QueueingStatusCode)
		}
		queued++
	}
	if queued < 2 || documents[len(documents)-1] != 200 {
		t.Errorf("pages %v: want the queue page loaded at least twice (it refreshes itself), then the origin's 200", documents)
	}
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
