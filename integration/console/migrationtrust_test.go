package console

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/edgeflow/edgeflow/internal/console"
	"github.com/edgeflow/edgeflow/internal/faultproxy"
	"github.com/edgeflow/edgeflow/internal/migrate"
	"github.com/edgeflow/edgeflow/internal/migrate/jobclient"
	"github.com/edgeflow/edgeflow/internal/migrate/migratetest"
	"github.com/edgeflow/edgeflow/internal/objectstore"
	"github.com/edgeflow/edgeflow/internal/objectstore/s3"
	"github.com/edgeflow/edgeflow/internal/testenv"
	"github.com/edgeflow/edgeflow/workflows/migrate/contract"
)

// A job id names one copy between two stores for good: once a job ran
// (or runs), starting its id with other stores is refused (409), so an
// input sealed for it never runs against other stores; the same stores
// run again as before. The job's input carries the addresses its
// endpoints were checked at.
func TestMigrationJobIDKeepsItsStores(t *testing.T) {
	a, _ := startMigrate(t)
	src := migratetest.Bucket(t, env.Store, "it-console-id-src")
	migratetest.Seed(t, env.Store, src, migratetest.Small("", 5, 100))
	dst := migratetest.Bucket(t, env.Store, "it-console-id-dst")
	other := migratetest.Bucket(t, env.Store, "it-console-id-other")
	job := fmt.Sprintf("it-console-id-%d", time.Now().UnixNano())

	a.ok(a.do("POST", "/api/v1/migrations", rwSecret, jobBody(job, src, dst, "")), 201, nil)
	if st := a.until(job, "ended", ended); st.State != contract.StateCompleted || st.Copied != 5 {
		t.Fatalf("job %s: %+v", job, st)
	}
	in, err := jobclient.LastInput(context.Background(), env.Client, contract.MigrationWorkflowID(job), "")
	if err != nil {
		t.Fatal(err)
	}
	host, _, _ := strings.Cut(env.MinIO.Endpoint, ":")
	if strings.Join(in.Source.Pinned, ",") != host || strings.Join(in.Dest.Pinned, ",") != host {
		t.Fatalf("the job's endpoints are pinned to %v and %v, want %s", in.Source.Pinned, in.Dest.Pinned, host)
	}

	a.fails(a.do("POST", "/api/v1/migrations", rwSecret, jobBody(job, src, other, "")), 409, "exists with other stores")
	a.fails(a.do("POST", "/api/v1/migrations", rwSecret, jobBody(job, other, dst, "")), 409, "exists with other stores")
	if got := migratetest.List(t, env.Store, other, ""); len(got) != 0 {
		t.Fatalf("the refused job wrote %d objects", len(got))
	}
	// The same stores: the ended job runs again.
	a.ok(a.do("POST", "/api/v1/migrations", rwSecret, jobBody(job, src, dst, "")), 201, nil)
	a.until(job, "ended", ended)

	// An endpoint the operator did not allow is refused before anything
	// starts: Temporal's own port on the same host.
	temporalPort := env.Temporal.HostPort[strings.LastIndex(env.Temporal.HostPort, ":")+1:]
	r := a.do("POST", "/api/v1/migrations", rwSecret, strings.Replace(jobBody(job+"-ssrf", src, dst, ""),
		`"destEndpoint":"`+env.MinIO.Endpoint+`"`, `"destEndpoint":"`+host+`:`+temporalPort+`"`, 1))
	a.fails(r, 400, "destEndpoint")
	if !strings.Contains(r.message, "endpoint not allowed") {
		t.Fatalf("refused with %q", r.message)
	}
	if _, err := env.Client.DescribeWorkflow(context.Background(), contract.MigrationWorkflowID(job+"-ssrf"), ""); !jobclient.NotFound(err) {
		t.Fatalf("the refused job has a workflow: %v", err)
	}
}

// A key list is written once: uploading its id again (another list, or a
// malformed one) is refused and leaves the list a job reads untouched;
// an upload of unknown length is refused; ids are bounded.
func TestKeyListIsWrittenOnce(t *testing.T) {
	a, _ := startMigrate(t)
	id := fmt.Sprintf("it-console-once-%d", time.Now().UnixNano())
	path := "/api/v1/migrations/keys/" + id
	a.ok(a.do("PUT", path, rwSecret, "p/00000.bin\np/00001.bin\n"), 201, nil)
	a.fails(a.do("PUT", path, rwSecret, "other/key\n"), 409, "written once")
	a.fails(a.do("PUT", path, rwSecret, "p/000\n"+strings.Repeat("k", 2000)+"\n"), 409, "written once")
	rc, _, err := env.Store.Get(context.Background(), "it-console-jobs", "keylists/"+id+".txt")
	if err != nil {
		t.Fatalf("the first list is gone: %v", err)
	}
	kept, _ := io.ReadAll(rc)
	rc.Close()
	if string(kept) != "p/00000.bin\np/00001.bin\n" {
		t.Fatalf("the list now reads %q", kept)
	}
	a.fails(a.do("PUT", "/api/v1/migrations/keys/"+strings.Repeat("k", 65), rwSecret, "p/0\n"), 400, "id")

	// Chunked, without a length: refused before anything is read.
	req, err := http.NewRequest("PUT", a.srv.URL+path+"-chunked", io.MultiReader(strings.NewReader("p/0\n")))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+rwSecret)
	resp, err := a.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusLengthRequired {
		t.Fatalf("a chunked upload: %d, want 411", resp.StatusCode)
	}
}

// GET /api/v1/migrations reads one page from the stores, not every job:
// with 30 jobs known only by their archived summary, each page of 3 costs
// the job store a few requests (today's list read all 30 summaries on
// every call, and the page refreshes every 5 s), and following
// result_info.cursor lists every job once, in job id order, after the
// jobs that have a workflow.
func TestMigrationListIsPagedAtTheStores(t *testing.T) {
	testenv.Require(t, env)
	proxy := faultproxy.New(env.MinIO.Endpoint, faultproxy.Faults{}, 0)
	t.Cleanup(proxy.Close)
	bucket := migratetest.Bucket(t, env.Store, "it-console-paged")
	account := fmt.Sprintf("it-paged-%d", time.Now().UnixNano())
	t0 := time.Now().Add(-time.Hour).UTC()
	var want []string
	for i := range 30 {
		job := fmt.Sprintf("%s-%02d", account, i)
		want = append(want, job)
		st := contract.Status{Job: job, State: contract.StateCompleted, Account: account, Source: "s3://a on h:1", Dest: "s3://b on h:2", Started: t0.Add(time.Duration(i) * time.Second)}
		if err := objectstore.PutJSON(context.Background(), env.Store, bucket, migrate.SummaryKey(job), st); err != nil {
			t.Fatal(err)
		}
	}
	jobStore := migrate.JobStoreConfig{Bucket: bucket, S3: s3.Config{Endpoint: proxy.Endpoint, AccessKey: env.MinIO.AccessKey, SecretKey: env.MinIO.SecretKey}}
	tokens, err := console.ParseTokens([]string{"viewer:" + roSecret + ":ro"}, "test")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(console.New(console.Options{Temporal: env.Client, Tokens: tokens, JobStore: jobStore}).Handler())
	t.Cleanup(srv.Close)
	paged := &api{t: t, srv: srv}

	var got []string
	cursor := ""
	for calls := 0; ; calls++ {
		if calls > 500 {
			t.Fatalf("no end after %d pages: %v", calls, got)
		}
		before := proxy.Counts().Requests
		var page struct {
			Result     []jobclient.Row `json:"result"`
			ResultInfo struct {
				PerPage int    `json:"per_page"`
				Count   int    `json:"count"`
				Cursor  string `json:"cursor"`
			} `json:"result_info"`
		}
		raw := paged.raw("GET", "/api/v1/migrations?per_page=3&account="+account+"&cursor="+cursor, roSecret)
		if err := json.Unmarshal([]byte(raw), &page); err != nil {
			t.Fatal(err)
		}
		// A listing and the page's summaries, and a little slack.
		if asked := proxy.Counts().Requests - before; asked > 12 {
			t.Fatalf("one page of 3 made %d requests to the job store", asked)
		}
		rows, info := page.Result, page.ResultInfo
		if len(rows) > 3 || info.Count != len(rows) || info.PerPage != 3 {
			t.Fatalf("page %d: %d rows, result_info %+v", calls, len(rows), info)
		}
		for _, row := range rows {
			if !row.Archived || row.Account != account {
				t.Fatalf("row %+v", row)
			}
			got = append(got, row.Job)
		}
		if cursor = info.Cursor; cursor == "" {
			break
		}
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("listed %v, want %v", got, want)
	}
	paged.fails(paged.do("GET", "/api/v1/migrations?cursor=not-a-cursor", roSecret, ""), 400, "cursor")
}
