package main

import (
	"testing"
	"time"

	"github.com/edgeflow/edgeflow/workflows/migrate/contract"
)

// list --all puts live and archived jobs in one list, newest first, cut
// at the limit; an archived row says where it comes from.
func TestMergeRowsNewestFirstWithinTheLimit(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	live := []listRow{{Job: "run", State: contract.StateRunning, Started: t0.Add(3 * time.Hour)}, {Job: "done", State: contract.StateCompleted, Started: t0.Add(time.Hour), Closed: true}}
	old := archivedRow(contract.Status{Job: "old", State: contract.StateFailed, Account: "a", Source: "s3://x on h:1", Dest: "s3://y on h:2", Started: t0.Add(2 * time.Hour)})
	if !old.Archived || !old.Closed || old.Summary != "s3://x on h:1 → s3://y on h:2" || old.Account != "a" {
		t.Fatalf("archived row %+v", old)
	}
	got := mergeRows(live, []listRow{old, {Job: "older", Started: t0}}, 3)
	var jobs []string
	for _, r := range got {
		jobs = append(jobs, r.Job)
	}
	if len(jobs) != 3 || jobs[0] != "run" || jobs[1] != "old" || jobs[2] != "done" {
		t.Fatalf("merged %v, want [run old done]", jobs)
	}
}
