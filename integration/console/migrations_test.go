package console

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/temporalproto"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"

	acts "github.com/edgeflow/edgeflow/activities/migrate"
	"github.com/edgeflow/edgeflow/internal/console"
	"github.com/edgeflow/edgeflow/internal/keyring"
	"github.com/edgeflow/edgeflow/internal/migrate"
	"github.com/edgeflow/edgeflow/internal/migrate/migratetest"
	"github.com/edgeflow/edgeflow/internal/objectstore/s3"
	wf "github.com/edgeflow/edgeflow/workflows/migrate"
	"github.com/edgeflow/edgeflow/workflows/migrate/contract"
)

// lockedLog collects a log written from many goroutines.
type lockedLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startMigrate is the console with its job store, and a migrate worker in
// this process; both log into logs. The codec keys are the test's own:
// the console seals with them (CODEC_KEYS), the worker opens with them.
func startMigrate(t *testing.T) (*api, *lockedLog) {
	t.Helper()
	a := start(t)
	k, err := keyring.Generate("it-console")
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("CODEC_KEYS", k.Encode())
	keys, err := keyring.New(k)
	if err != nil {
		t.Fatal(err)
	}
	jobStore := migrate.JobStoreConfig{Bucket: "it-console-jobs",
		S3: s3.Config{Endpoint: env.MinIO.Endpoint, AccessKey: env.MinIO.AccessKey, SecretKey: env.MinIO.SecretKey}}
	jobs, err := jobStore.Open()
	if err != nil {
		t.Fatal(err)
	}
	if err := jobs.Ensure(context.Background()); err != nil {
		t.Fatal(err)
	}
	logs := &lockedLog{}
	c, err := client.NewClientFromExisting(env.Client, client.Options{
		Logger: sdklog.NewStructuredLogger(slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	w := worker.New(c, contract.TaskQueue, worker.Options{})
	wf.Register(w)
	acts.Register(w, &acts.Activities{Keys: keys, Jobs: jobs, Temporal: env.Client, JobsPerAccount: 3})
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	tokens, err := console.ParseTokens([]string{"admin:" + rwSecret, "viewer:" + roSecret + ":ro"}, "test")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(console.New(console.Options{Temporal: env.Client, Tokens: tokens, JobStore: jobStore, WebUI: webUI, Namespace: "default",
		Log: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}).Handler())
	t.Cleanup(srv.Close)
	a.srv = srv
	return a, logs
}

// jobBody is a POST /api/v1/migrations body within one MinIO.
func jobBody(job, src, dst, extra string) string {
	return fmt.Sprintf(`{"job":%q,"account":"it-console","source":"s3://%s","sourceEndpoint":%q,"sourceInsecure":true,"dest":"s3://%s","destEndpoint":%q,"destInsecure":true,"pageSize":10%s,
		"credentials":{"MIGRATE_SOURCE_ACCESS_KEY":%q,"MIGRATE_SOURCE_SECRET_KEY":%q,"MIGRATE_DEST_ACCESS_KEY":%q,"MIGRATE_DEST_SECRET_KEY":%q}}`,
		job, src, env.MinIO.Endpoint, dst, env.MinIO.Endpoint, extra, env.MinIO.AccessKey, env.MinIO.SecretKey, env.MinIO.AccessKey, env.MinIO.SecretKey)
}

// until asks GET /api/v1/migrations/{job} until cond holds (a deadline,
// no fixed wait) and returns the status.
func (a *api) until(job, what string, cond func(contract.Status) bool) contract.Status {
	a.t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for {
		var st contract.Status
		a.ok(a.do("GET", "/api/v1/migrations/"+job, roSecret, ""), 200, &st)
		if cond(st) {
			return st
		}
		if time.Now().After(deadline) {
			a.t.Fatalf("job %s: not %s: %+v", job, what, st)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func ended(st contract.Status) bool { return contract.Ended(st.State) }

// TestMigrationsAPI walks the migration routes on the dev server: start
// with credentials in the body, a key list, status, list, report, control,
// redrive; auth, 400 naming the field, 404, 409, 413.
func TestMigrationsAPI(t *testing.T) {
	a, _ := startMigrate(t)
	src := migratetest.Bucket(t, env.Store, "it-console-src")
	migratetest.Seed(t, env.Store, src, migratetest.Small("p/", 30, 200))
	dst := migratetest.Bucket(t, env.Store, "it-console-dst")
	stamp := time.Now().UnixNano()
	job := fmt.Sprintf("it-console-%d", stamp)

	a.fails(a.do("GET", "/api/v1/migrations", "", ""), 401, "Authorization")
	a.fails(a.do("POST", "/api/v1/migrations", roSecret, jobBody(job, src, dst, "")), 403, "read-only")
	a.fails(a.do("PUT", "/api/v1/migrations/keys/k1", roSecret, "p/000\n"), 403, "read-only")
	for _, c := range []struct{ body, want string }{
		{`{"dest":"s3://src-x","destEndpoint":"h:1"}`, "source is required"},
		{`{"sorce":"s3://src-x"}`, "sorce: unknown field"},
		{`{"source":"s3://src-x","sourceEndpoint":"h:1","dest":"s3://dst-y","destEndpoint":"h:1","pageSize":"ten"}`, "pageSize"},
		{`{"source":"s3://src-x","sourceEndpoint":"h:1","dest":"s3://dst-y","destEndpoint":"h:1","partSize":"6GiB"}`, "at most 5 GiB"},
		{`{"source":"ftp://src-x","dest":"s3://dst-y","destEndpoint":"h:1"}`, "source:"},
		{`{"source":"s3://src-x","sourceEndpoint":"h:1","dest":"s3://dst-y","destEndpoint":"h:1","overwrite":"maybe"}`, `overwrite "maybe": use never`},
		{`{"source":"s3://src-x","sourceEndpoint":"h:1","dest":"s3://dst-y","destEndpoint":"h:1","keys":"none-such"}`, "keys: no key list"},
		{`{"source":"s3://src-x","sourceEndpoint":"h:1","dest":"s3://dst-y","destEndpoint":"h:1","credentials":{"AWS_SECRET":"v"}}`, "credentials.AWS_SECRET: unknown name"},
		{`{"source":"s3://src-x","sourceEndpoint":"h:1","dest":"s3://dst-y","destEndpoint":"h:1","credentials":{"MIGRATE_SOURCE_ACCESS_KEY":"a"}}`, "MIGRATE_SOURCE_SECRET_KEY"},
	} {
		r := a.do("POST", "/api/v1/migrations", rwSecret, c.body)
		var all []string
		for _, e := range r.env.Errors {
			all = append(all, e.Message)
		}
		if r.status != 400 || !strings.Contains(strings.Join(all, "\n"), c.want) {
			t.Errorf("POST %s: %d %q, want 400 with %q", c.body, r.status, all, c.want)
		}
	}
	a.fails(a.do("POST", "/api/v1/migrations", rwSecret, `{"source":"`+strings.Repeat("x", console.MaxBody)+`"}`), 413, "body")
	a.fails(a.do("GET", "/api/v1/migrations/it-console-none-such", roSecret, ""), 404, "job")
	a.fails(a.do("GET", "/api/v1/migrations/bad%20id", roSecret, ""), 400, "job")

	// A whole bucket: started, answered without a secret, copied.
	r := a.do("POST", "/api/v1/migrations", rwSecret, jobBody(job, src, dst, ""))
	var started struct {
		contract.Status
		WorkflowID string `json:"workflowId"`
	}
	a.ok(r, 201, &started)
	if started.Job != job || started.WorkflowID != contract.MigrationWorkflowID(job) || r.header.Get("Location") != "/api/v1/migrations/"+job {
		t.Fatalf("started %+v, Location %q", started, r.header.Get("Location"))
	}
	if strings.Contains(string(r.result), env.MinIO.SecretKey) {
		t.Fatal("the start's answer echoes the secret key")
	}
	st := a.until(job, "ended", ended)
	if st.State != contract.StateCompleted || st.Copied != 30 {
		t.Fatalf("job %s: %+v", job, st)
	}
	if got := migratetest.List(t, env.Store, dst, "p/"); len(got) != 30 {
		t.Fatalf("the destination has %d objects, want 30", len(got))
	}

	// A key list, uploaded first, then named by id: only its keys copy.
	a.fails(a.do("PUT", "/api/v1/migrations/keys/bad-list", rwSecret, "p/000\n"+strings.Repeat("k", 2000)+"\n"), 400, "line 2")
	var stored map[string]any
	a.ok(a.do("PUT", fmt.Sprintf("/api/v1/migrations/keys/list-%d", stamp), rwSecret, "p/00000.bin\np/00001.bin\np/00002.bin\n"), 201, &stored)
	if stored["keys"] != 3.0 {
		t.Fatalf("stored key list %v", stored)
	}
	dstKeys := migratetest.Bucket(t, env.Store, "it-console-dst-keys")
	keysJob := job + "-keys"
	a.ok(a.do("POST", "/api/v1/migrations", rwSecret, jobBody(keysJob, src, dstKeys, fmt.Sprintf(`,"keys":"list-%d"`, stamp))), 201, nil)
	if st := a.until(keysJob, "ended", ended); st.State != contract.StateCompleted || st.Copied != 3 {
		t.Fatalf("key list job: %+v", st)
	}

	// The list, archived jobs included, paged.
	deadline := time.Now().Add(30 * time.Second)
	for {
		var rows []map[string]any
		r := a.do("GET", "/api/v1/migrations?per_page=1000&account=it-console", roSecret, "")
		a.ok(r, 200, &rows)
		seen := map[string]bool{}
		for _, row := range rows {
			seen[row["job"].(string)] = row["state"] == contract.StateCompleted
		}
		if seen[job] && seen[keysJob] {
			var one []map[string]any
			r := a.do("GET", "/api/v1/migrations?per_page=1&page=2&account=it-console", roSecret, "")
			a.ok(r, 200, &one)
			// Paged at the stores: result_info has the page's count and a
			// cursor for the next, no total.
			if info := r.env.ResultInfo; len(one) != 1 || info.Page != 2 || info.Count != 1 || one[0]["job"] != rows[1]["job"] {
				t.Fatalf("page 2 of 1: %v %+v (the list: %v)", one, info, rows)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the list never showed both jobs: %v", rows)
		}
		time.Sleep(200 * time.Millisecond)
	}
	a.fails(a.do("GET", "/api/v1/migrations?per_page=0", roSecret, ""), 400, "per_page")

	// The report, streamed: CSV by default, JSON lines, the failed only.
	csv := a.raw("GET", "/api/v1/migrations/"+job+"/report", roSecret)
	if lines := strings.Split(strings.TrimSpace(csv), "\n"); len(lines) != 31 || !strings.Contains(csv, "p/00000.bin") {
		t.Fatalf("CSV report: %d lines:\n%s", len(lines), csv)
	}
	jsonl := a.raw("GET", "/api/v1/migrations/"+job+"/report?format=jsonl", roSecret)
	if lines := strings.Split(strings.TrimSpace(jsonl), "\n"); len(lines) != 30 || !strings.HasPrefix(lines[0], "{") {
		t.Fatalf("JSON lines report: %d lines:\n%s", len(lines), jsonl)
	}
	if failed := a.raw("GET", "/api/v1/migrations/"+job+"/report?format=jsonl&failed=true", roSecret); strings.TrimSpace(failed) != "" {
		t.Fatalf("failed-only report of a clean job: %q", failed)
	}
	a.fails(a.do("GET", "/api/v1/migrations/"+job+"/report?format=xml", roSecret, ""), 400, "format")
	a.fails(a.do("GET", "/api/v1/migrations/"+job+"/report?failed=maybe", roSecret, ""), 400, "failed")

	// Control of an ended job: nothing to redrive (409), no pause (404).
	a.fails(a.do("POST", "/api/v1/migrations/"+job+"/redrive", rwSecret, ""), 409, "no dead letters")
	a.fails(a.do("POST", "/api/v1/migrations/"+job+"/pause", rwSecret, ""), 404, "ended")
	a.fails(a.do("POST", "/api/v1/migrations/"+job+"/pause", roSecret, ""), 403, "read-only")

	// Control of a running job, slowed to one object at a time.
	slowSrc := migratetest.Bucket(t, env.Store, "it-console-slow")
	migratetest.Seed(t, env.Store, slowSrc, migratetest.Small("s/", 300, 2048))
	slow := job + "-slow"
	a.ok(a.do("POST", "/api/v1/migrations", rwSecret, jobBody(slow, slowSrc, migratetest.Bucket(t, env.Store, "it-console-slow-dst"), `,"pagesInFlight":1,"concurrency":1`)), 201, nil)
	a.until(slow, "copying", func(st contract.Status) bool { return st.Copied > 0 || ended(st) })
	var paused contract.Status
	a.ok(a.do("POST", "/api/v1/migrations/"+slow+"/pause", rwSecret, ""), 200, &paused)
	if paused.State != contract.StatePaused {
		t.Fatalf("after pause: %+v", paused)
	}
	a.fails(a.do("POST", "/api/v1/migrations/"+slow+"/pause", rwSecret, ""), 409, "running")
	var resumed contract.Status
	a.ok(a.do("POST", "/api/v1/migrations/"+slow+"/resume", rwSecret, ""), 200, &resumed)
	if resumed.State != contract.StateRunning {
		t.Fatalf("after resume: %+v", resumed)
	}
	a.ok(a.do("POST", "/api/v1/migrations/"+slow+"/abort", rwSecret, ""), 200, nil)
	if st := a.until(slow, "ended", ended); st.State != contract.StateAborted {
		t.Fatalf("after abort: %+v", st)
	}
}

// raw is a GET whose answer is not the envelope (a streamed report).
func (a *api) raw(method, path, secret string) string {
	a.t.Helper()
	req, err := http.NewRequest(method, a.srv.URL+path, nil)
	if err != nil {
		a.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+secret)
	resp, err := a.srv.Client().Do(req)
	if err != nil {
		a.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		a.t.Fatal(err)
	}
	if resp.StatusCode != 200 {
		a.t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, body)
	}
	return string(body)
}

var payloadData = regexp.MustCompile(`"data":"([A-Za-z0-9+/=]+)"`)

// TestMigrationCredentialsNeverInHistoryOrLogs starts a job over the API
// and reads everything it left in Temporal raw, through a client with no
// codec keys, and the console's and the worker's logs: the keys given in
// the body are nowhere (the starter's test of the same, over HTTP).
func TestMigrationCredentialsNeverInHistoryOrLogs(t *testing.T) {
	a, logs := startMigrate(t)
	src := migratetest.Bucket(t, env.Store, "it-console-sec-src")
	migratetest.Seed(t, env.Store, src, migratetest.Small("", 30, 100))
	dst := migratetest.Bucket(t, env.Store, "it-console-sec-dst")
	job := fmt.Sprintf("it-console-secrets-%d", time.Now().UnixNano())
	r := a.do("POST", "/api/v1/migrations", rwSecret, jobBody(job, src, dst, ""))
	a.ok(r, 201, nil)
	st := a.until(job, "ended", ended)
	if st.State != contract.StateCompleted {
		t.Fatalf("job: %+v", st)
	}
	ids := []string{contract.MigrationWorkflowID(job), contract.MigrationAccountWorkflowID("it-console")}
	for seq := range 3 {
		ids = append(ids, contract.MigrationPageWorkflowID(job, st.Execution, 0, seq))
	}
	var all strings.Builder
	for _, id := range ids {
		it := env.Client.GetWorkflowHistory(context.Background(), id, "", false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		events := 0
		for it.HasNext() {
			ev, err := it.Next()
			if err != nil {
				t.Fatalf("history of %s: %v", id, err)
			}
			b, err := temporalproto.CustomJSONMarshalOptions{}.Marshal(ev)
			if err != nil {
				t.Fatal(err)
			}
			all.Write(b)
			events++
		}
		if events < 3 {
			t.Fatalf("history of %s has %d events", id, events)
		}
	}
	history := all.String()
	for _, m := range payloadData.FindAllStringSubmatch(all.String(), -1) {
		if data, err := base64.StdEncoding.DecodeString(m[1]); err == nil {
			history += "\n" + string(data)
		}
	}
	if !strings.Contains(history, "credentials") {
		t.Fatal("the history has no sealed credentials at all: the check would prove nothing")
	}
	logged := logs.String()
	if !strings.Contains(logged, "/api/v1/migrations") {
		t.Fatal("the console logged no request: the check would prove nothing")
	}
	for _, secret := range []string{env.MinIO.SecretKey} {
		if strings.Contains(history, secret) {
			t.Errorf("the history shows %q in plain text", secret)
		}
		if strings.Contains(logged, secret) {
			t.Errorf("the console's or the worker's log shows %q in plain text", secret)
		}
	}
}
