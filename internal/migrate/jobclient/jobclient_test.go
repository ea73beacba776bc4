package jobclient

import (
	"strings"
	"testing"
	"time"

	"github.com/edgeflow/edgeflow/workflows/migrate/contract"
)

// list --all puts live and archived jobs in one list, newest first, cut
// at the limit; an archived row says where it comes from.
func TestMergeRowsNewestFirstWithinTheLimit(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	live := []Row{{Job: "run", State: contract.StateRunning, Started: t0.Add(3 * time.Hour)}, {Job: "done", State: contract.StateCompleted, Started: t0.Add(time.Hour), Closed: true}}
	old := ArchivedRow(contract.Status{Job: "old", State: contract.StateFailed, Account: "a", Source: "s3://x on h:1", Dest: "s3://y on h:2", Started: t0.Add(2 * time.Hour)})
	if !old.Archived || !old.Closed || old.Summary != "s3://x on h:1 → s3://y on h:2" || old.Account != "a" {
		t.Fatalf("archived row %+v", old)
	}
	got := MergeRows(live, []Row{old, {Job: "older", Started: t0}}, 3)
	var jobs []string
	for _, r := range got {
		jobs = append(jobs, r.Job)
	}
	if len(jobs) != 3 || jobs[0] != "run" || jobs[1] != "old" || jobs[2] != "done" {
		t.Fatalf("merged %v, want [run old done]", jobs)
	}
	if all := MergeRows(live, []Row{old}, 0); len(all) != 3 {
		t.Fatalf("limit 0 kept %d of 3", len(all))
	}
}

// The same rule names its option as the caller spells it: the starter's
// flag, the API's JSON field.
func TestInputNamesTheOptionAsTheCallerSpellsIt(t *testing.T) {
	if got := JSONName("source-endpoint"); got != "sourceEndpoint" {
		t.Errorf("JSONName(source-endpoint) = %q", got)
	}
	o := Options{Source: "s3://src/p/", SourceEndpoint: "s:9000", Dest: "s3://dst", Account: "a", Keys: "list-1", PartSize: "6GiB", Overwrite: "sometimes"}
	for _, c := range []struct {
		name Namer
		want []string
	}{
		{FlagName, []string{"--dest-endpoint is required", "--keys with --source s3://src/p/", `--overwrite "sometimes"`, "part size (--part-size)"}},
		{JSONName, []string{"destEndpoint is required", "keys with source s3://src/p/", `overwrite "sometimes"`, "part size (partSize)"}},
	} {
		_, problems := o.Input("m-1", c.name)
		got := strings.Join(problems, "\n")
		if c.name(" ") != "-- " && strings.Contains(got, "--") {
			t.Errorf("problems for the API name a flag: %q", got)
		}
		for _, w := range c.want {
			if !strings.Contains(got, w) {
				t.Errorf("problems %q: want one with %q", got, w)
			}
		}
	}
	good := Options{Source: "gs://old", Dest: "s3://dst", DestEndpoint: "d:9000", Account: "a"}
	in, problems := good.Input("m-2", JSONName)
	if len(problems) > 0 || in.Source.Bucket != "old" || in.Dest.Endpoint != "d:9000" || in.Overwrite == "" {
		t.Fatalf("a valid gs:// job: %+v %q", in, problems)
	}
}
