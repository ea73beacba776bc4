package console

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/edgeflow/edgeflow/internal/migrate/jobclient"
	"github.com/edgeflow/edgeflow/internal/migrate/migratetest"
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
