package devstack

import (
	"fmt"
	"html"
	"net/http"
	"time"

	"github.com/edgeflow/edgeflow/internal/admit"
)

// DemoRoom is the waiting room `make run` creates in front of the demo
// origin: on every path of every host, with limits small enough that a few
// browser windows or a curl loop see the queue.
func DemoRoom() admit.Settings {
	return admit.Settings{
		Name:                   "demo",
		Description:            "The demo room `make run` creates in front of the demo origin.",
		Path:                   "/",
		TotalActiveUsers:       5,
		NewUsersPerMinute:      5,
		SessionDuration:        1,
		QueueingStatusCode:     429,
		JSONResponseEnabled:    true,
		RefreshIntervalSeconds: 10,
	}
}

// DemoOrigin is the site behind the demo gate: 200 on every path, with a
// small page saying the visitor got in.
func DemoOrigin() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		if r.Header.Get("Accept") == "application/json" {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, "{\"cfWaitingRoom\":{\"inWaitingRoom\":false},\"path\":%q}\n", r.URL.Path)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Demo origin</title></head>
<body style="font: 1.1rem/1.5 system-ui, sans-serif; max-width: 36rem; margin: 3rem auto; padding: 0 1rem">
<h1 id="welcome">Welcome to the demo origin</h1>
<p>You are through the waiting room. This is <code>%s</code>, served at %s.</p>
</body></html>
`, html.EscapeString(r.URL.Path), time.Now().UTC().Format(time.RFC3339))
	})
}
