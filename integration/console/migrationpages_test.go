package console

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/edgeflow/edgeflow/internal/migrate/migratetest"
	"github.com/edgeflow/edgeflow/internal/testenv/browsertest"
	"github.com/edgeflow/edgeflow/workflows/migrate/contract"
)

// The Migrations pages as a person uses them, in headless Chromium: a
// mistake in the start form shows the API's message by its field and no
// secret; a migration between two buckets of the test MinIO, started with
// the form, is watched to completion on its page (the page refreshes
// itself); its report downloads; a room is deleted after a confirmation.
// Every new page passes axe-core in both themes.
func TestMigrationsInTheBrowser(t *testing.T) {
	a, logs := startMigrate(t)
	axe := axeSource(t)
	artifacts := artifactsDir(t)
	src := migratetest.Bucket(t, env.Store, "it-console-web-src")
	migratetest.Seed(t, env.Store, src, migratetest.Small("w/", 20, 300))
	dst := migratetest.Bucket(t, env.Store, "it-console-web-dst")
	job := fmt.Sprintf("it-console-web-%d", time.Now().UnixNano())

	ctx := browsertest.Start(t, 6*time.Minute)
	run := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, steps...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	run("sign in", chromedp.Navigate(a.srv.URL+"/"), chromedp.WaitVisible(chromedp.CSS("#token")),
		chromedp.SendKeys(chromedp.CSS("#token"), rwSecret+kb.Enter), chromedp.WaitVisible(chromedp.CSS("#manage")))
	run("the Migrations page", chromedp.Click(chromedp.CSS(`nav a[href="/migrations"]`)), chromedp.WaitVisible(chromedp.CSS("#jobs-table")))
	checkAccessible(t, ctx, axe, artifacts, "migrations")

	fill := func(withSourceEndpoint bool) {
		t.Helper()
		steps := []chromedp.Action[chromedp.Void]{
			chromedp.SetValue(chromedp.CSS("#m-job"), job),
			chromedp.SetValue(chromedp.CSS("#m-account"), "it-console"),
			chromedp.SetValue(chromedp.CSS("#m-source"), "s3://"+src),
			chromedp.SetValue(chromedp.CSS("#m-dest"), "s3://"+dst),
			chromedp.SetValue(chromedp.CSS("#m-destEndpoint"), env.MinIO.Endpoint),
			chromedp.SetValue(chromedp.CSS("#m-MIGRATE_SOURCE_ACCESS_KEY"), env.MinIO.AccessKey),
			chromedp.SetValue(chromedp.CSS("#m-MIGRATE_SOURCE_SECRET_KEY"), env.MinIO.SecretKey),
			chromedp.SetValue(chromedp.CSS("#m-MIGRATE_DEST_ACCESS_KEY"), env.MinIO.AccessKey),
			chromedp.SetValue(chromedp.CSS("#m-MIGRATE_DEST_SECRET_KEY"), env.MinIO.SecretKey),
		}
		if withSourceEndpoint {
			steps = append(steps, chromedp.SetValue(chromedp.CSS("#m-sourceEndpoint"), env.MinIO.Endpoint))
		}
		run("fill the start form", steps...)
		for _, box := range []string{"#m-sourceInsecure", "#m-destInsecure"} {
			checked, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.querySelector("`+box+`").checked`))
			if err != nil {
				t.Fatal(err)
			}
			if !checked {
				run("tick "+box, chromedp.Click(chromedp.CSS(box)))
			}
		}
	}

	// A mistake first: the page says what the API says of the same body.
	fill(false)
	run("start without a source endpoint", chromedp.Click(chromedp.CSS("#start ~ form button[type=submit]")),
		chromedp.WaitVisible(chromedp.CSS("#me-sourceEndpoint")))
	api := a.do("POST", "/api/v1/migrations", rwSecret, fmt.Sprintf(`{"job":%q,"account":"it-console","source":"s3://%s","dest":"s3://%s","destEndpoint":%q,"destInsecure":true}`,
		job, src, dst, env.MinIO.Endpoint))
	if got := text(t, ctx, "#me-sourceEndpoint"); api.status != http.StatusBadRequest || got != api.message {
		t.Fatalf("the form says %q, the API %d %q: want the same message", got, api.status, api.message)
	}
	page, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.documentElement.outerHTML`))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(page, src) || strings.Contains(page, env.MinIO.SecretKey) {
		t.Fatalf("the form shown again must keep the source and drop the secret key:\n%s", page)
	}
	checkAccessible(t, ctx, axe, artifacts, "migrations-invalid")

	// Started with the form; the job's page follows it to the end by itself.
	fill(true)
	run("start the migration", chromedp.Click(chromedp.CSS("#start ~ form button[type=submit]")),
		chromedp.WaitVisible(chromedp.CSS("#job-progress")))
	if h := text(t, ctx, "h1"); h != "Migration "+job {
		t.Fatalf("after the start: %q", h)
	}
	deadline := time.Now().Add(3 * time.Minute)
	for state := ""; state != contract.StateCompleted; {
		if time.Now().After(deadline) {
			t.Fatalf("the job's page still says %q", state)
		}
		if contract.Ended(state) {
			t.Fatalf("the job ended %q", state)
		}
		time.Sleep(time.Second) // the page's own script refreshes it; no reload here
		state = text(t, ctx, "#job-state")
	}
	if copied := text(t, ctx, "#job-copied"); copied != "20" {
		t.Fatalf("the page says %s copied, want 20", copied)
	}
	if got := migratetest.List(t, env.Store, dst, "w/"); len(got) != 20 {
		t.Fatalf("the destination has %d objects, want 20", len(got))
	}
	link, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById("webui").href`))
	if want := webUI + "/namespaces/default/workflows/" + url.PathEscape(contract.MigrationWorkflowID(job)); err != nil || link != want {
		t.Errorf("the Web UI link %q (%v), want %q", link, err, want)
	}
	checkAccessible(t, ctx, axe, artifacts, "migration")

	// The report link, from the same session: a header and a line an object.
	report, err := chromedp.Run(ctx, chromedp.Evaluate[string](`fetch(document.querySelector('a[href$="format=csv"]').href).then(r => r.text().then(b => r.status + "\n" + b))`, chromedp.EvalAwaitPromise))
	if lines := strings.Split(strings.TrimSpace(report), "\n"); err != nil || lines[0] != "200" || len(lines) != 1+1+20 {
		t.Fatalf("the report: %v %q", err, report)
	}
	// The jobs table lists it, with its counts.
	run("the jobs table", chromedp.Navigate(a.srv.URL+"/migrations"), chromedp.WaitVisible(chromedp.CSS("#jobs-table")))
	if got := text(t, ctx, fmt.Sprintf(`tr[data-job=%q] td.copied`, job)); got != "20" {
		t.Errorf("the jobs table says %q copied", got)
	}
	// A control the ended job refuses shows its reason.
	run("pause the ended job", chromedp.Navigate(a.srv.URL+"/migrations/"+job), chromedp.WaitVisible(chromedp.CSS("#job-progress")),
		chromedp.Click(chromedp.CSS(`form[action$="/pause"] button`)), chromedp.WaitVisible(chromedp.CSS(".errors")))
	if msg := text(t, ctx, ".errors li"); !strings.HasPrefix(msg, "pause: ") {
		t.Errorf("the refusal says %q", msg)
	}
	if strings.Contains(logs.String(), env.MinIO.SecretKey) {
		t.Error("the console's or the worker's log shows the secret key")
	}

	// Delete a room: the button asks first; only the confirmation deletes.
	const room = "it-console-delete"
	a.ok(a.do("POST", "/api/v1/waiting_rooms", rwSecret, roomJSON(room, "/del/", 5)), 201, nil)
	t.Cleanup(func() { a.do("DELETE", "/api/v1/waiting_rooms/"+room, rwSecret, "") })
	run("the room's page", chromedp.Navigate(a.srv.URL+"/rooms/"+room), chromedp.WaitVisible(chromedp.CSS("h1")))
	if h := text(t, ctx, "h1"); h != "Room "+room {
		body, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.innerText`))
		t.Fatalf("the room's page: %q\n%s", h, body)
	}
	run("ask to delete the room", chromedp.Click(chromedp.CSS(`form[action$="/delete"] button`)), chromedp.WaitVisible(chromedp.CSS(".card button.danger")))
	a.ok(a.do("GET", "/api/v1/waiting_rooms/"+room, roSecret, ""), 200, nil)
	checkAccessible(t, ctx, axe, artifacts, "room-delete")
	run("confirm", chromedp.Click(chromedp.CSS(`form[action$="/delete"] button`)), chromedp.WaitVisible(chromedp.CSS("#manage")))
	if n := text(t, ctx, ".notice"); n != "Room "+room+" deleted." {
		t.Errorf("after the delete: %q", n)
	}
	a.fails(a.do("GET", "/api/v1/waiting_rooms/"+room, roSecret, ""), 404, "")
}
