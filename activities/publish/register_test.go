package publish_test

import (
	"strings"
	"testing"

	"go.temporal.io/sdk/testsuite"

	publishacts "github.com/edgeflow/edgeflow/activities/publish"
	"github.com/edgeflow/edgeflow/workflows/publish/contract"
)

// Workflows schedule activities by the contract's names only, so each name
// must be one a pool registers; a Go rename must not move one.
func TestActivitiesAreRegisteredUnderContractNames(t *testing.T) {
	var suite testsuite.WorkflowTestSuite
	pools := []struct {
		register func(*testsuite.TestActivityEnvironment)
		names    []string
	}{
		{func(e *testsuite.TestActivityEnvironment) { publishacts.RegisterPublish(e, &publishacts.Publish{}) }, []string{
			contract.ListCatalogActivity, contract.CheckPackagesActivity, contract.StageVersionActivity, contract.CommitActivity,
			contract.MaterializeActivity, contract.FindBatchResultsActivity, contract.RebuildMetadataActivity, contract.ListPublishedActivity, contract.FetchOriginalActivity, contract.FollowRegistryActivity}},
		{func(e *testsuite.TestActivityEnvironment) { publishacts.RegisterCompress(e, &publishacts.Compress{}) }, []string{
			contract.CompressBatchActivity, contract.AuditPackageActivity}},
	}
	for _, p := range pools {
		for _, name := range p.names {
			env := suite.NewTestActivityEnvironment()
			p.register(env)
			// No arguments: a registered activity runs (and fails on its
			// input or missing dependencies, or not); an unknown one is not found.
			_, err := env.ExecuteActivity(name)
			if err != nil && strings.Contains(err.Error(), "unable to find activityType") {
				t.Errorf("activity %q: %v", name, err)
			}
		}
	}
	env := suite.NewTestActivityEnvironment()
	publishacts.RegisterPublish(env, &publishacts.Publish{})
	if _, err := env.ExecuteActivity("NoSuchActivity"); err == nil || !strings.Contains(err.Error(), "unable to find activityType") {
		t.Errorf("an unregistered name: %v", err)
	}
}
