package console

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/edgeflow/edgeflow/internal/migrate/jobclient"
	"github.com/edgeflow/edgeflow/internal/migrate/migratetest"
	"github.com/edgeflow/edgeflow/workflows/migrate/contract"
)

// POST /api/v1/migrations/{job}/sync runs a finished job again between its
// own stores, at the addresses they were pinned to: the body names nothing
// of them (any other field is refused), and GET .../syncs lists the run
// with its report once it ended.
func TestMigrationSyncKeepsTheJobsStores(t *testing.T) {
	a, _ := startMigrate(t)
	src := migratetest.Bucket(t, env.Store, "it-console-sync-src")
	migratetest.Seed(t, env.Store, src, migratetest.Small("", 5, 100))
	dst := migratetest.Bucket(t, env.Store, "it-console-sync-dst")
	job := fmt.Sprintf("it-console-sync-%d", time.Now().UnixNano())
	a.ok(a.do("POST", "/api/v1/migrations", rwSecret, jobBody(job, src, dst, "")), 201, nil)
	a.until(job, "ended", ended)
	migratetest.Seed(t, env.Store, src, migratetest.Small("later-", 2, 100))

	a.fails(a.do("POST", "/api/v1/migrations/"+job+"/sync", rwSecret, `{"dest":"s3://elsewhere"}`), 400, "dest: unknown field")
	a.fails(a.do("POST", "/api/v1/migrations/"+job+"/sync", roSecret, ""), 403, "")
	a.fails(a.do("POST", "/api/v1/migrations/no-such-job-"+job+"/sync", rwSecret, ""), 404, "")
	var started struct {
		contract.SyncReport
		WorkflowID string `json:"workflowId"`
	}
	a.ok(a.do("POST", "/api/v1/migrations/"+job+"/sync", rwSecret, `{"deleteExtraneous":true}`), 202, &started)
	if started.Sync == nil || !started.Sync.DeleteExtraneous || started.WorkflowID == "" {
		t.Fatalf("sync: %+v", started)
	}
	jobIn, err := jobclient.LastInput(context.Background(), env.Client, contract.MigrationWorkflowID(job), "")
	if err != nil {
		t.Fatal(err)
	}
	syncIn, err := jobclient.LastInput(context.Background(), env.Client, started.WorkflowID, "")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(syncIn.Source, jobIn.Source) || !reflect.DeepEqual(syncIn.Dest, jobIn.Dest) || len(syncIn.Source.Pinned) == 0 {
		t.Fatalf("the sync's stores %+v / %+v are not the job's %+v / %+v", syncIn.Source.Store(), syncIn.Dest.Store(), jobIn.Source.Store(), jobIn.Dest.Store())
	}

	var h jobclient.SyncHistory
	deadline := time.Now().Add(2 * time.Minute)
	for {
		a.ok(a.do("GET", "/api/v1/migrations/"+job+"/syncs", roSecret, ""), 200, &h)
		if len(h.Runs) == 1 && h.Runs[0].Report != nil && contract.Ended(h.Runs[0].State) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the sync's history: %+v", h)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if r := h.Runs[0].Report; h.Runs[0].WorkflowID != started.WorkflowID || r.State != contract.StateCompleted || r.Copied != 2 || r.Unchanged != 5 || h.Cutover != nil {
		t.Fatalf("the sync's history: %+v, report %+v", h, r)
	}

	// A cutover's verdict and the runs are on the job's page.
	run, _, err := jobclient.Cutover(context.Background(), env.Client, job, false)
	if err != nil {
		t.Fatal(err)
	}
	st, err := jobclient.Result(context.Background(), run)
	if err != nil || st.Identical == nil || !*st.Identical {
		t.Fatalf("cutover: %+v %v", st, err)
	}
	page := a.page("/migrations/" + job)
	for _, want := range []string{"Syncs and cutover", "<strong>identical</strong>", started.WorkflowID, run.GetID() + " (cutover)"} {
		if !strings.Contains(page, want) {
			t.Errorf("the job's page lacks %q", want)
		}
	}
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// page signs in to the console's pages with the read-only token and returns
// the page at path.
func (a *api) page(path string) string {
	a.t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := func(p string) string {
		resp, err := c.Get(a.srv.URL + p)
		if err != nil {
			a.t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	m := csrfField.FindStringSubmatch(get("/"))
	if m == nil {
		a.t.Fatal("the sign-in form has no CSRF field")
	}
	resp, err := c.PostForm(a.srv.URL+"/signin", url.Values{"csrf": {m[1]}, "token": {roSecret}})
	if err != nil {
		a.t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		a.t.Fatalf("sign in: %d", resp.StatusCode)
	}
	return get(path)
}
