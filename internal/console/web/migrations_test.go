package web

import (
	"net/url"
	"reflect"
	"strings"
	"testing"

	"github.com/edgeflow/edgeflow/internal/migrate"
	"github.com/edgeflow/edgeflow/internal/migrate/jobclient"
	"github.com/edgeflow/edgeflow/workflows/migrate/contract"
)

func TestMigrationFormReadsTheAPIsOptions(t *testing.T) {
	f := migrationForm{Values: url.Values{"source": {" s3://a/p/ "}, "sourceEndpoint": {"h:1"}, "sourceInsecure": {"true"},
		"dest": {"s3://b"}, "destEndpoint": {"h:2"}, "verify": {"true"}, "concurrency": {"4"},
		migrate.EnvSourceSecretKey: {" s p "}, migrate.EnvDestAccessKey: {""}}}
	o, creds, problems := f.options()
	want := jobclient.Options{Source: "s3://a/p/", SourceEndpoint: "h:1", SourceInsecure: true, Dest: "s3://b", DestEndpoint: "h:2", Verify: true, Concurrency: 4}
	if !reflect.DeepEqual(o, want) || len(problems) != 0 {
		t.Fatalf("options %+v %q, want %+v", o, problems, want)
	}
	// A secret is taken as typed; an empty field is not given.
	if len(creds) != 1 || creds[migrate.EnvSourceSecretKey] != " s p " {
		t.Fatalf("credentials %q", creds)
	}
	_, _, problems = migrationForm{Values: url.Values{"concurrency": {"many"}}}.options()
	if len(problems) != 1 || !strings.HasPrefix(problems[0], "concurrency: ") {
		t.Fatalf("problems %q", problems)
	}
}

func TestProblemsAreFiledUnderTheFieldTheyName(t *testing.T) {
	got := fieldProblems([]string{"sourceEndpoint is required (host:port)", "dest: not an s3:// location", "dest: second", "credentials: MIGRATE_DEST_ACCESS_KEY not set in the form"})
	if got["sourceEndpoint"] != "sourceEndpoint is required (host:port)" || got["dest"] != "dest: not an s3:// location" || len(got) != 3 {
		t.Fatalf("%q", got)
	}
}

// The start form shown again after a mistake keeps the options, marks the
// field, and has no credential values (startMigration drops them).
func TestStartFormShowsTheFieldsProblem(t *testing.T) {
	p := New(Options{Authenticate: func(string) (string, bool, bool) { return "", false, false }})
	var b strings.Builder
	form := migrationForm{Values: url.Values{"source": {"ftp://x"}}, Errors: map[string]string{"source": "source: use s3:// or gs://"}}
	err := p.pages["migrations"].ExecuteTemplate(&b, "layout", view{Title: "Migrations", User: "admin", CSRF: "c",
		Content: jobsView{Next: "abc", Form: form, Rows: []jobRow{{Row: jobclient.Row{Job: "j1", State: "running"},
			Status: contract.Status{Job: "j1", State: "running", Counters: migrate.Counters{Copied: 7, Failed: 1, Listed: 9}, WaitingFor: "destination"}}}}})
	if err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, want := range []string{`value="ftp://x" aria-invalid="true" aria-describedby="me-source"`, `<p class="field-error" id="me-source">source: use s3:// or gs://</p>`,
		`<td class="num copied">7</td>`, `the destination store`, `name="MIGRATE_SOURCE_SECRET_KEY" type="password"`, `href="/migrations?cursor=abc"`} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %s:\n%s", want, page)
		}
	}
}
