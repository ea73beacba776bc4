// Package publish holds Publish's workflows — deterministic code only: no
// I/O, no wall clock, no randomness, no goroutines. PackageUpdates checks
// the catalog and hands new versions to their package's PackageLane, which
// runs them in order; RegistryFollower follows a registry's changes feed
// and checks the packages that change; PublishVersion publishes one
// version, ProcessBatch runs one batch of it on the compress pool. Side
// effects are activities (activities/publish); names, IDs and types are in
// the contract.
package publish

import (
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/edgeflow/edgeflow/workflows/publish/contract"
)

// Register registers the publish workflows under their contract names
// (they run on the publish queue; their CPU work is scheduled on compress).
func Register(r worker.WorkflowRegistry) {
	r.RegisterWorkflowWithOptions(PackageUpdates, workflow.RegisterOptions{Name: contract.WorkflowTypePackageUpdates})
	r.RegisterWorkflowWithOptions(PackageLane, workflow.RegisterOptions{Name: contract.WorkflowTypePackageLane})
	r.RegisterWorkflowWithOptions(PublishVersion, workflow.RegisterOptions{Name: contract.WorkflowTypePublishVersion})
	r.RegisterWorkflowWithOptions(ProcessBatch, workflow.RegisterOptions{Name: contract.WorkflowTypeProcessBatch})
	r.RegisterWorkflowWithOptions(AuditCatalog, workflow.RegisterOptions{Name: contract.WorkflowTypeAuditCatalog})
	r.RegisterWorkflowWithOptions(RegistryFollower, workflow.RegisterOptions{Name: contract.WorkflowTypeRegistryFollower})
}
