package migrate_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/edgeflow/edgeflow/internal/migrate"
	"github.com/edgeflow/edgeflow/workflows/migrate/contract"
)

// A sync run lists bounded pages, each after the last key of the one
// before, so its pages answer for the destination between them; its pages
// are named by the run and carry its request; it ends with its lag.
func TestSyncRunListsBoundedPages(t *testing.T) {
	b := &bucket{objects: 250, pageSize: 100}
	env := newEnv(t, b)
	job := jobInput(100)
	job.Overwrite = migrate.OverwriteNever
	env.ExecuteWorkflow(contract.WorkflowTypeMigrationSync, contract.SyncInput(job, contract.SyncRun{DeleteExtraneous: true}))
	s := result(t, env)
	if s.State != contract.StateCompleted || s.Copied != 250 || s.Sync == nil || !s.Sync.DeleteExtraneous || s.LagSeconds == nil || s.Identical != nil {
		t.Fatalf("status %+v", s)
	}
	if want := []string{"", "key-99", "key-199"}; !slices.Equal(b.afters, want) {
		t.Fatalf("listed after %q, want %q", b.afters, want)
	}
	for _, in := range b.transfers {
		if in.Sync == nil || !in.Sync.DeleteExtraneous || in.Overwrite != migrate.OverwriteIfDifferent {
			t.Fatalf("page input %+v: a sync overwrites if different, whatever the job's policy", in)
		}
	}
	if len(b.archived) != 1 || b.archived[0].Sync == nil || !strings.HasPrefix(b.archived[0].Sync.WorkflowID, "default-test-workflow-id") {
		t.Fatalf("archived %+v", b.archived)
	}
}

// A source that is now empty still has its one (empty) page copied: it
// answers for every destination key, which the source no longer has.
func TestSyncOfAnEmptySourceStillLooksAtTheDestination(t *testing.T) {
	b := &bucket{objects: 0, pageSize: 100}
	env := newEnv(t, b)
	env.ExecuteWorkflow(contract.WorkflowTypeMigrationSync, contract.SyncInput(jobInput(100), contract.SyncRun{}))
	s := result(t, env)
	if s.State != contract.StateCompleted || len(b.transfers) != 1 || b.transfers[0].Seq != 0 {
		t.Fatalf("status %+v, transfers %+v", s, b.transfers)
	}
}

func TestCutoverVerdict(t *testing.T) {
	b := &bucket{objects: 250, pageSize: 100}
	env := newEnv(t, b)
	env.ExecuteWorkflow(contract.WorkflowTypeMigrationSync, contract.SyncInput(jobInput(100), contract.SyncRun{Cutover: true}))
	s := result(t, env)
	if s.Identical == nil || !*s.Identical || s.DifferenceCount != 0 || !s.Verify {
		t.Fatalf("identical sides: %+v", s)
	}

	b = &bucket{objects: 250, pageSize: 100, differ: map[int][]migrate.Difference{2: {{Key: "copy/planted", What: "only at the destination"}}}}
	env = newEnv(t, b)
	env.ExecuteWorkflow(contract.WorkflowTypeMigrationSync, contract.SyncInput(jobInput(100), contract.SyncRun{Cutover: true}))
	s = result(t, env)
	if s.Identical == nil || *s.Identical || s.DifferenceCount != 1 || len(s.Differences) != 1 || s.Differences[0].Key != "copy/planted" {
		t.Fatalf("a planted difference: %+v", s)
	}
}
