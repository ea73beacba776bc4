package migrate_test

import (
	"slices"
	"strings"
	"testing"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"

	acts "github.com/edgeflow/edgeflow/activities/migrate"
	"github.com/edgeflow/edgeflow/workflows/migrate/contract"
)

// names records what Register registers, on the way to a real registry.
type names struct {
	worker.ActivityRegistry
	got []string
}

func (n *names) RegisterActivityWithOptions(fn any, o activity.RegisterOptions) {
	n.got = append(n.got, o.Name)
	n.ActivityRegistry.RegisterActivityWithOptions(fn, o)
}

// The worker registers every activity the workflows schedule under the
// contract's name, and nothing else: a workflow scheduling a name no
// worker has would wait forever.
func TestRegisteredNamesAreTheContracts(t *testing.T) {
	want := []string{
		contract.PrecheckActivity, contract.ListPageActivity, contract.TransferPageActivity, contract.DeadPagesActivity,
		contract.FindReportsActivity, contract.RequestSlotActivity, contract.StillRunningActivity, contract.ProbeStoreActivity,
		contract.ArchiveJobActivity,
	}
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	reg := &names{ActivityRegistry: env}
	acts.Register(reg, &acts.Activities{})
	if got, w := slices.Sorted(slices.Values(reg.got)), slices.Sorted(slices.Values(want)); !slices.Equal(got, w) {
		t.Fatalf("registered %v, the contract names %v", got, w)
	}
	// Executed by name, each reaches its method: the empty inputs of these
	// two ask nothing of the stores or of Temporal.
	v, err := env.ExecuteActivity(contract.StillRunningActivity, contract.RunningInput{})
	if err != nil {
		t.Fatalf("%s: %v", contract.StillRunningActivity, err)
	}
	var running []string
	if err := v.Get(&running); err != nil || len(running) != 0 {
		t.Fatalf("%s answered %v, %v", contract.StillRunningActivity, running, err)
	}
	if _, err := env.ExecuteActivity(contract.FindReportsActivity, contract.FindReportsInput{Job: "j"}); err != nil {
		t.Fatalf("%s: %v", contract.FindReportsActivity, err)
	}
	_, err = env.ExecuteActivity("NoSuchActivity")
	if err == nil || !strings.Contains(err.Error(), "NoSuchActivity") {
		t.Fatalf("an unregistered name ran: %v", err)
	}
}
