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
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/edgeflow/edgeflow/internal/admit"
	"github.com/edgeflow/edgeflow/internal/admit/gate"
	"github.com/edgeflow/edgeflow/internal/admit/roomclient"
	"github.com/edgeflow/edgeflow/internal/console"
	"github.com/edgeflow/edgeflow/internal/keyring"
	"github.com/edgeflow/edgeflow/internal/testenv"
	"github.com/edgeflow/edgeflow/internal/testenv/browsertest"
)

// liveSource reads the rooms' live views on the test's Redis, where the
// gates the tests run write them.
func liveSource(t *testing.T) *roomclient.LiveSource {
	t.Helper()
	live, err := gate.OpenLiveSource(env.Redis.URL)
	if err != nil {
		t.Fatal(err)
	}
	return live
}

// A room's page shows the live view and refreshes it without a reload: a
// spike of queued visitors at a gate (on the dev stack's Redis) shows on
// the open page within seconds, as in the API's status, while the room's
// 60-second minute still runs. Once the gate is gone, the page says the
// view is stale.
func TestRoomLiveViewInTheBrowser(t *testing.T) {
	a := start(t)
	gateBin, err := testenv.BuildCommand(t.TempDir(), "./cmd/gate")
	if err != nil {
		t.Fatal(err)
	}
	tokens, err := console.ParseTokens([]string{"admin:" + rwSecret}, "test")
	if err != nil {
		t.Fatal(err)
	}
	h := console.New(console.Options{Temporal: env.Client, Tokens: tokens, Live: liveSource(t),
		Log: slog.New(slog.NewTextHandler(&testenv.SyncBuffer{}, nil))}).Handler()
	var consoleDown atomic.Bool // the console not answering, as to a browser whose network went
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if consoleDown.Load() {
			http.Error(w, "down", http.StatusBadGateway)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	const room = "it-console-live"
	a.ok(a.do("POST", "/api/v1/waiting_rooms", rwSecret, `{"name":"`+room+`","path":"/live/","total_active_users":1,"new_users_per_minute":1,"queueing_status_code":429}`), 201, nil)
	t.Cleanup(func() { a.do("DELETE", "/api/v1/waiting_rooms/"+room, rwSecret, "") })
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "origin") }))
	t.Cleanup(origin.Close)
	key, err := keyring.Generate("it")
	if err != nil {
		t.Fatal(err)
	}
	g, stopGate := runStoppableGate(t, gateBin, origin.URL, key.Encode(), append(os.Environ(), "GATE_REDIS_URL="+env.Redis.URL))

	ctx := browsertest.Start(t, 4*time.Minute)
	run := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, steps...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	run("sign in", chromedp.Navigate(srv.URL+"/"), chromedp.WaitVisible(chromedp.CSS("#token")),
		chromedp.SendKeys(chromedp.CSS("#token"), rwSecret+kb.Enter), chromedp.WaitVisible(chromedp.CSS("#manage")))
	run("the room's page", chromedp.Navigate(srv.URL+"/rooms/"+room), chromedp.WaitVisible(chromedp.CSS("#live")))
	if src, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById("live").dataset.refresh`)); err != nil || src != "/rooms/"+room+"/live" {
		t.Fatalf("the live view refreshes from %q (%v)", src, err)
	}
	// A mark a reload would wipe.
	run("mark the page", chromedp.Evaluate[chromedp.Void](`window.notReloaded = true`))

	// The spike: 8 visitors at once, each checking in again when told.
	const spike = 8
	visitCtx, stopVisits := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range spike {
		jar, _ := cookiejar.New(nil)
		c := &http.Client{Jar: jar, Timeout: 10 * time.Second}
		wg.Go(func() {
			for visitCtx.Err() == nil {
				wait := 2 * time.Second
				if resp, err := c.Get(g + "/live/"); err == nil {
					if secs, err := strconv.Atoi(resp.Header.Get("Refresh")); err == nil && secs > 0 {
						wait = time.Duration(secs) * time.Second
					}
					resp.Body.Close()
				}
				select {
				case <-visitCtx.Done():
				case <-time.After(wait):
				}
			}
		})
	}
	stop := func() { stopVisits(); wg.Wait() }
	defer stop()

	var shown string
	testenv.Eventually(t, time.Minute, 500*time.Millisecond, "the open page shows the spike", func() (bool, string) {
		got, err := chromedp.Run(ctx, chromedp.Evaluate[string](
			`(window.notReloaded ? "" : "reloaded ") + ((document.getElementById("live-queued") || {}).textContent || "none")`))
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(got, "reloaded") {
			t.Fatalf("the page was reloaded: %s", got)
		}
		shown = got
		n, _ := strconv.Atoi(got)
		return n >= spike-1, "queued shown: " + got
	})
	var st admit.LiveStatus
	a.ok(a.do("GET", "/api/v1/waiting_rooms/"+room+"/status", roSecret, ""), 200, &st)
	if st.Live == nil || st.Live.Stale || st.Live.AsOf == nil || st.Live.AgeSeconds > admit.LiveMaxAge.Seconds() || st.Live.QueuedUsers < spike-1 {
		t.Errorf("the API's live view %+v, want %d queued, fresh", st.Live, spike-1)
	}
	t.Logf("the page shows %s queued; the API %d, %.1f s old; the minute rollup %d", shown, st.Live.QueuedUsers, st.Live.AgeSeconds, st.EstimatedQueuedUsers)

	// The rooms table shows each room's live figures beside the rollup's,
	// as `room list` does.
	run("the rooms table", chromedp.Navigate(srv.URL+"/"), chromedp.WaitVisible(chromedp.CSS("#manage")))
	cell, err := chromedp.Run(ctx, chromedp.Evaluate[string](fmt.Sprintf(`(document.querySelector('tr[data-room=%q] td.live') || {}).textContent || ""`, room)))
	if err != nil {
		t.Fatal(err)
	}
	if queued, _ := strconv.Atoi(strings.SplitN(cell, " ", 2)[0]); queued < spike-1 {
		t.Errorf("the rooms table's live cell says %q, want at least %d queued", cell, spike-1)
	}
	run("back to the room's page", chromedp.Navigate(srv.URL+"/rooms/"+room), chromedp.WaitVisible(chromedp.CSS("#live")),
		chromedp.Evaluate[chromedp.Void](`window.notReloaded = true`))

	// The console stops answering: the page's script says the figures are
	// stale once they are older than 5 s, and drops the note once it
	// answers again.
	note := func() string {
		got, err := chromedp.Run(ctx, chromedp.Evaluate[string](
			`(window.notReloaded ? "" : "reloaded ") + ((document.querySelector("#live .stale-note") || {}).textContent || "")`))
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	consoleDown.Store(true)
	testenv.Eventually(t, 30*time.Second, 500*time.Millisecond, "the page notes its figures are stale", func() (bool, string) {
		got := note()
		return strings.HasPrefix(got, "Stale: not refreshed since"), got
	})
	consoleDown.Store(false)
	testenv.Eventually(t, 30*time.Second, 500*time.Millisecond, "the note goes once the console answers", func() (bool, string) {
		got := note()
		return got == "", got
	})

	// The gate stops: the page says the view is stale, still without a reload.
	stop()
	stopGate()
	testenv.Eventually(t, 30*time.Second, 500*time.Millisecond, "the open page marks the view stale", func() (bool, string) {
		got, err := chromedp.Run(ctx, chromedp.Evaluate[string](
			`(window.notReloaded ? "" : "reloaded ") + ((document.getElementById("live-stale") || {}).textContent || "")`))
		if err != nil {
			t.Fatal(err)
		}
		return strings.Contains(got, "Stale") && !strings.HasPrefix(got, "reloaded"), got
	})
}
