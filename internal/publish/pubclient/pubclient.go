// Package pubclient is the client side of Publish: the run a request to
// publish a package starts, shared by the publish starter and the
// console's API, so both start exactly the same workflow.
package pubclient

import (
	"regexp"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/edgeflow/edgeflow/internal/publish/catalog"
	"github.com/edgeflow/edgeflow/workflows/publish/contract"
)

// Request is the run to start: one version's PublishVersion, or a check of
// the package that waits for the versions it hands to the package's lane.
// Either way a run already under that ID is followed, not duplicated. pkg,
// if set, is sent with the request (a package not in the workers' catalog).
func Request(name, version string, pkg *catalog.Package) (client.StartWorkflowOptions, string, any) {
	if version != "" {
		ref := contract.VersionRef{PackageRef: contract.PackageRef{Name: name, Package: pkg}, Version: version}
		return client.StartWorkflowOptions{
			ID: contract.PublishVersionWorkflowID(name, version), TaskQueue: contract.TaskQueue, WorkflowIDReusePolicy: contract.PublishIDReusePolicy,
			WorkflowIDConflictPolicy: enums.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
			TypedSearchAttributes:    contract.VersionAttributes(name, version), StaticSummary: contract.PublishSummary(name, version),
		}, contract.WorkflowTypePublishVersion, contract.PublishInput{VersionRef: ref}
	}
	in := contract.UpdatesInput{Only: []string{name}, Wait: true}
	if pkg != nil {
		in.Packages = []catalog.Package{*pkg}
	}
	return client.StartWorkflowOptions{
		ID: contract.PackageUpdatesWorkflowID(name), TaskQueue: contract.TaskQueue,
		WorkflowIDConflictPolicy: enums.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		TypedSearchAttributes:    temporal.NewSearchAttributes(contract.PackageKey.ValueSet(name)),
		StaticSummary:            "Publish new versions of " + name,
	}, contract.WorkflowTypePackageUpdates, in
}

// HookCheck is the run a webhook delivery (a release or a tag of the
// package's repository) starts: a check of the package that does not wait,
// under the delivery's ID, so a redelivery starts nothing more.
func HookCheck(name, delivery string) (client.StartWorkflowOptions, string, any) {
	return client.StartWorkflowOptions{
		ID: contract.HookCheckWorkflowID(name, delivery), TaskQueue: contract.TaskQueue,
		WorkflowIDReusePolicy:    enums.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		WorkflowIDConflictPolicy: enums.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		TypedSearchAttributes:    temporal.NewSearchAttributes(contract.PackageKey.ValueSet(name)),
		StaticSummary:            "Check of " + name + " after a release or tag of its repository (GitHub webhook)",
	}, contract.WorkflowTypePackageUpdates, contract.UpdatesInput{Only: []string{name}}
}

// versionPattern is what a requested version may be: semver's characters,
// so it can be part of a workflow ID.
var versionPattern = regexp.MustCompile(`^[0-9A-Za-z.+-]{1,128}$`)

// ValidVersion reports whether version may be requested (the console's API
// and pages check with it).
func ValidVersion(version string) bool { return versionPattern.MatchString(version) }
