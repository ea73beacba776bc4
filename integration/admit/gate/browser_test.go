package gate

import (
	"context"
	"fmt"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/edgeflow/edgeflow/internal/admit/gate"
	"github.com/edgeflow/edgeflow/internal/devstack"
	"github.com/edgeflow/edgeflow/internal/testenv"
	"github.com/edgeflow/edgeflow/internal/testenv/browsertest"
)

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
	room.RefreshIntervalSeconds = 2 // at most half the compressed minute
	createRoom(t, room, minuteSeconds)
	origin := httptest.NewServer(devstack.DemoOrigin())
	defer origin.Close()
	g := startGate(t, "local", "local-browser", origin.URL)
	eventually(t, 30*time.Second, "the gate serves the room", func() (bool, string) {
		return !g.roomMinute(t, room.Name).IsZero(), ""
	})

	ctx := browsertest.Start(t, 3*time.Minute) // started first: it takes seconds on a busy machine
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
	loads := func() []int64 {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(documents)
	}

	// Someone else takes the only slot and keeps browsing until released.
	holder := newBrowser(t)
	if ok, _ := holder.visit(t, g, "/"); !ok {
		t.Fatal("the first visitor was not let in")
	}
	release := make(chan struct{})
	held := make(chan struct{})
	go func() {
		defer close(held)
		for {
			select {
			case <-release:
				return
			case <-time.After(time.Second):
				if ok, _ := holder.visit(t, g, "/"); !ok {
					t.Error("the slot's holder lost its session while browsing")
					return
				}
			}
		}
	}()
	defer func() {
		select {
		case <-release:
		default:
			close(release)
		}
		<-held
	}()

	if err := chromedp.Do(ctx, chromedp.Navigate(g.URL+"/")); err != nil {
		t.Fatalf("open the site: %v", err)
	}
	// The page reloads itself every few seconds: read it with short
	// attempts, each in whichever document is there.
	page := pageText(t, ctx, 30*time.Second, func(s string) bool { return strings.HasPrefix(s, "You are in line|") })
	if !strings.Contains(page, "wait") {
		t.Fatalf("the browser sees %q, want the queue page with its status line", page)
	}
	eventually(t, 30*time.Second, "the queue page reloads itself", func() (bool, string) {
		return len(loads()) >= 3, fmt.Sprint(loads())
	})
	close(release) // the holder leaves; its session ends a minute later
	<-held
	// The site's cookies by its URL: "the current page's" may be none while
	// the page is reloading.
	got, err := chromedp.Call(ctx, network.GetCookies, network.GetCookiesParams{URLs: []string{g.URL + "/"}})
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
		var names []string
		for _, c := range cookies {
			names = append(names, c.Name+" ("+c.Domain+c.Path+")")
		}
		t.Fatalf("the waiting room cookie in the browser: %+v (want HttpOnly, SameSite=Lax, not Secure over HTTP); cookies: %v", found, names)
	}

	// The page refreshes by itself until the browser is let in.
	welcome := pageText(t, ctx, 150*time.Second, func(s string) bool { return strings.HasPrefix(s, "Demo origin|") })
	seen := loads()
	if !strings.Contains(welcome, "Welcome to the demo origin") {
		t.Fatalf("the browser was not let in: %q after loading %v", welcome, seen)
	}
	t.Logf("pages the browser loaded (status): %v", seen)
	queued := 0
	for _, s := range seen[:len(seen)-1] {
		if s != int64(room.QueueingStatusCode) {
			t.Errorf("a queue page came with status %d, want the room's %d", s, room.QueueingStatusCode)
		}
		queued++
	}
	if queued < 3 || seen[len(seen)-1] != 200 {
		t.Errorf("pages %v: want the queue page loaded again and again (it refreshes itself), then the origin's 200", seen)
	}
}

// pageText polls the page's title and text ("title|text") until ok holds,
// each read bounded, since a read that meets a reload may never return.
func pageText(t *testing.T, ctx context.Context, within time.Duration, ok func(string) bool) string {
	t.Helper()
	deadline := time.Now().Add(within)
	last := ""
	for time.Now().Before(deadline) {
		s, err := readPage(ctx)
		if err == nil {
			if last = s; ok(s) {
				return s
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("the browser did not show the page within %s; last seen: %q", within, last)
	return ""
}

// readPage reads the page's title and text once, within a few seconds. A
// document still being parsed reads as "(loading) title": its title may be
// in while its body is not yet, and that is not the page.
func readPage(ctx context.Context) (string, error) {
	attempt, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	return chromedp.Run(attempt, chromedp.Evaluate[string](`document.readyState === "loading"
		? "(loading) " + document.title
		: document.title + "|" + (document.body ? document.body.innerText : "")`))
}
