package console

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/edgeflow/edgeflow/internal/console"
	"github.com/edgeflow/edgeflow/internal/keyring"
	"github.com/edgeflow/edgeflow/internal/testenv"
	"github.com/edgeflow/edgeflow/internal/testenv/browsertest"
)

const webUI = "http://127.0.0.1:8233"

// The console as a person uses it, in headless Chromium: sign in with the
// keyboard, create a room with the form, see a settings mistake in the
// API's words, watch the room queue visitors at a running gate in the
// Manage table; every page passes axe-core in both themes.
func TestConsoleInTheBrowser(t *testing.T) {
	a := start(t) // the admit worker; its API server checks the form's messages
	axe := axeSource(t)
	artifacts := artifactsDir(t)
	gateBin, err := testenv.BuildCommand(t.TempDir(), "./cmd/gate")
	if err != nil {
		t.Fatal(err)
	}
	tokens, err := console.ParseTokens([]string{"admin:" + rwSecret}, "test")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(console.New(console.Options{Temporal: env.Client, Tokens: tokens, WebUI: webUI, Namespace: "default",
		Log: slog.New(slog.NewTextHandler(&testenv.SyncBuffer{}, nil))}).Handler())
	t.Cleanup(srv.Close)
	const room = "it-console-browser"
	t.Cleanup(func() { a.do("DELETE", "/api/v1/waiting_rooms/"+room, rwSecret, "") })

	ctx := browsertest.Start(t, 8*time.Minute)
	run := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, steps...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}

	// Sign in: the form, with the keyboard only (the field has the focus).
	run("open the console", chromedp.Navigate(srv.URL+"/"), chromedp.WaitVisible(chromedp.CSS("#token")))
	checkAccessible(t, ctx, axe, artifacts, "signin")
	axeCatches(t, ctx)
	run("sign in", chromedp.SendKeys(chromedp.CSS("#token"), rwSecret+kb.Enter), chromedp.WaitVisible(chromedp.CSS("#manage")))
	if u := location(t, ctx); strings.Contains(u, rwSecret) {
		t.Fatalf("the secret is in the URL %s", u)
	}

	// Create a room with the form; a mistake first, in the API's words.
	run("a room with a bad path",
		chromedp.SendKeys(chromedp.CSS("#f-name"), room),
		chromedp.SetValue(chromedp.CSS("#f-path"), "shop"),
		chromedp.SendKeys(chromedp.CSS("#f-total_active_users"), "1"),
		chromedp.SendKeys(chromedp.CSS("#f-new_users_per_minute"), "1"),
		chromedp.Click(chromedp.CSS("#create ~ form button[type=submit]")),
		chromedp.WaitVisible(chromedp.CSS("#e-path")))
	got := text(t, ctx, "#e-path")
	api := a.do("POST", "/api/v1/waiting_rooms", rwSecret, `{"name":"`+room+`","path":"shop","total_active_users":1,"new_users_per_minute":1}`)
	if api.status != http.StatusBadRequest || got != api.message {
		t.Fatalf("the form says %q, the API %d %q: want the same message", got, api.status, api.message)
	}
	checkAccessible(t, ctx, axe, artifacts, "rooms-invalid")
	run("create the room",
		chromedp.SetValue(chromedp.CSS("#f-path"), "/shop/"),
		chromedp.Click(chromedp.CSS("#create ~ form button[type=submit]")),
		chromedp.WaitVisible(chromedp.CSS("#chart")))
	if h := text(t, ctx, "h1"); h != "Room "+room {
		t.Fatalf("after create: %q", h)
	}
	link, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById("webui").href`))
	if want := webUI + "/namespaces/default/workflows/room%2F" + room; err != nil || link != want {
		t.Errorf("the Web UI link %q (%v), want %q", link, err, want)
	}

	// A settings change the room refuses shows its message by the field.
	run("a bad setting",
		chromedp.SetValue(chromedp.CSS("#f-new_users_per_minute"), "0"),
		chromedp.Click(chromedp.CSS("#settings ~ form button[type=submit]")),
		chromedp.WaitVisible(chromedp.CSS("#e-new_users_per_minute")))
	patch := a.do("PATCH", "/api/v1/waiting_rooms/"+room, rwSecret, `{"new_users_per_minute":0}`)
	if msg := text(t, ctx, "#e-new_users_per_minute"); patch.status != http.StatusBadRequest || msg != patch.message {
		t.Errorf("the settings form says %q, the API %d %q", msg, patch.status, patch.message)
	}
	checkAccessible(t, ctx, axe, artifacts, "room-invalid")

	// A gate in front of an origin; visitors beyond the one slot queue.
	g := startGate(t, gateBin)
	// Waiting visitors keep checking in, as the queue page makes a browser
	// do; the gate counts those still waiting.
	var clients []*http.Client
	for range 4 {
		jar, _ := cookiejar.New(nil)
		clients = append(clients, &http.Client{Jar: jar, Timeout: 10 * time.Second})
	}
	visitors := func() {
		for _, c := range clients {
			resp, err := c.Get(g + "/shop/")
			if err == nil {
				resp.Body.Close()
			}
		}
	}
	visitors()
	// The room counts the queue at the next minute's snapshot: reload the
	// Manage table until its row shows it.
	deadline := time.Now().Add(4 * time.Minute)
	queued := 0
	for queued == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the Manage table never showed visitors queued for %s", room)
		}
		time.Sleep(2 * time.Second)
		visitors()
		run("the Manage table", chromedp.Navigate(srv.URL+"/"), chromedp.WaitVisible(chromedp.CSS("#manage")))
		cell, err := chromedp.Run(ctx, chromedp.Evaluate[string](fmt.Sprintf(`(document.querySelector('tr[data-room=%q] td.queued') || {}).textContent || ""`, room)))
		if err != nil {
			t.Fatal(err)
		}
		queued, _ = strconv.Atoi(strings.TrimSpace(cell))
	}
	t.Logf("the Manage table shows %d queued", queued)
	checkAccessible(t, ctx, axe, artifacts, "rooms")
	run("the room's page", chromedp.Navigate(srv.URL+"/rooms/"+room), chromedp.WaitVisible(chromedp.CSS("#chart svg")))
	checkAccessible(t, ctx, axe, artifacts, "room")

	// The script's refresh: the chart alone, from the same session.
	chart, err := chromedp.Run(ctx, chromedp.Evaluate[string](`fetch(document.getElementById("chart").dataset.refresh).then(r => r.status + " " + r.text())`, chromedp.EvalAwaitPromise))
	if err != nil || !strings.HasPrefix(chart, "200 ") {
		t.Errorf("the chart's refresh: %q, %v", chart, err)
	}

	// Schedule an event with the form, then cancel it.
	run("schedule an event",
		chromedp.SendKeys(chromedp.CSS("#ev-name"), "launch"),
		chromedp.SetValue(chromedp.CSS("#ev-event_start_time"), "2030-05-01T09:00"),
		chromedp.SetValue(chromedp.CSS("#ev-event_end_time"), "2030-05-01T11:00"),
		chromedp.Click(chromedp.CSS(`form[action$="/events"] button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`form[action$="/events/launch/cancel"]`)))
	events := a.do("GET", "/api/v1/waiting_rooms/"+room+"/events", rwSecret, "")
	if !strings.Contains(string(events.result), `"event_start_time": "2030-05-01T09:00:00Z"`) {
		t.Errorf("the API lists the events %s", events.result)
	}
	checkAccessible(t, ctx, axe, artifacts, "room-event")
	run("cancel the event",
		chromedp.Click(chromedp.CSS(`form[action$="/events/launch/cancel"] button`)),
		chromedp.WaitNotPresent(chromedp.CSS(`form[action$="/events/launch/cancel"]`)))

	// Suspend and resume with the buttons.
	run("suspend", chromedp.Click(chromedp.CSS(`form[action$="/suspend"] button`)), chromedp.WaitVisible(chromedp.CSS(`form[action$="/resume"]`)))
	run("resume", chromedp.Click(chromedp.CSS(`form[action$="/resume"] button`)), chromedp.WaitVisible(chromedp.CSS(`form[action$="/suspend"]`)))
}

func text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		t.Fatalf("text of %s: %v", sel, err)
	}
	return strings.TrimSpace(s)
}

func location(t *testing.T, ctx context.Context) string {
	t.Helper()
	u, err := chromedp.Run(ctx, chromedp.Evaluate[string](`location.href`))
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// startGate runs cmd/gate in front of an origin until the test ends and
// returns its URL. Its port is port 0: it binds a free one and logs it.
func startGate(t *testing.T, bin string) string {
	t.Helper()
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "origin") }))
	t.Cleanup(origin.Close)
	key, err := keyring.Generate("it")
	if err != nil {
		t.Fatal(err)
	}
	return runGate(t, bin, origin.URL, key.Encode(), os.Environ())
}
